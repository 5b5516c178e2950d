"""Erasing a staff member (SPEC §13): their decisions stay for the course,
without their name -- a staff verdict's attempt named its author in its
``model`` column ("staff:<username>")."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, transaction

from feedback.models import AttemptScrubPermit, ReviewAttempt
from feedback.services.verdicts import staff_verdict_create
from tests.factories import make_attempt, make_submission
from tutor.rights.erasure import student_erase

pytestmark = pytest.mark.django_db


def test_erasing_a_staff_member_leaves_their_verdicts_without_their_name(task, student, staff):
    submission = make_submission(student, task)
    make_attempt(submission)
    criterion = next(c["id"] for c in task.current_rubric.criteria if c["kind"] == "acceptance")
    verdict = staff_verdict_create(
        submission=submission,
        staff=staff,
        criteria=[{"rubric_id": criterion, "status": "FAIL", "reason": "looked at it"}],
    )
    assert verdict.model == "staff:teacher"

    report = student_erase(user=staff)

    assert [hit.line() for hit in report.residue] == []
    kept = ReviewAttempt.objects.get(pk=verdict.pk)
    assert kept.model == f"staff:{report.pseudonym}"
    assert kept.result["overall"] == verdict.result["overall"]  # the verdict itself stays


@pytest.mark.parametrize(
    ("before", "after"),
    [("staff:teacher", "another-model"), ("some-model", "staff:erased-0123456789ab")],
    ids=["a verdict's author to a model", "a model to a stand-in"],
)
def test_a_permit_renames_only_a_staff_author_to_a_stand_in(task, student, before, after):
    attempt = make_attempt(make_submission(student, task), model=before)
    AttemptScrubPermit.objects.create(attempt_id=attempt.pk)
    with pytest.raises(IntegrityError), transaction.atomic():
        ReviewAttempt.objects.filter(pk=attempt.pk).update(model=after)
