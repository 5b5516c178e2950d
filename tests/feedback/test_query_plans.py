"""Query plans the ingest path depends on (SPEC §10): the review-cache lookup
is served by the (student, task, snapshot_hash) index on both databases, so
a submission costs the same with 1k or 100k submissions stored.

Planners choose by statistics, so the plan is read on a table with a
realistic spread (many students, many submissions each) after ANALYZE."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.utils import timezone

from feedback.models import AttemptStatus, ReviewAttempt, Submission
from feedback.services.intake import reusable_attempts
from feedback.services.sequences import next_seq
from feedback.versions import current_versions
from tests.factories import criterion_entry, review_result

STUDENTS, PER_STUDENT = 150, 20


def _seed(task):
    users = get_user_model().objects.bulk_create(
        [get_user_model()(username=f"plan{i}") for i in range(STUDENTS)]
    )
    stamp = current_versions(task).stamp()
    result = review_result([criterion_entry("A1", "PASS")])
    with transaction.atomic():
        first_sub = next_seq("submission", STUDENTS * PER_STUDENT)
        first_att = next_seq("attempt", STUDENTS * PER_STUDENT)
        submissions = Submission.objects.bulk_create(
            [
                Submission(
                    student=user,
                    task=task,
                    submission_seq=first_sub + i * PER_STUDENT + j,
                    evidence={"report": f"r{i}-{j}"},
                    snapshot_hash=f"{i:08x}{j:056x}",
                    ci_source="student",
                    submitted_by=user,
                )
                for i, user in enumerate(users)
                for j in range(PER_STUDENT)
            ]
        )
        ReviewAttempt.objects.bulk_create(
            [
                ReviewAttempt(
                    submission=s,
                    attempt_seq=first_att + k,
                    status=AttemptStatus.COMPLETED,
                    result=result,
                    finished_at=timezone.now(),
                    **stamp,
                )
                for k, s in enumerate(submissions)
            ]
        )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return submissions


def test_review_cache_lookup_uses_the_cache_index(task):
    submissions = _seed(task)

    plan = reusable_attempts(submissions[PER_STUDENT * 7 + 3], current_versions(task))[:1].explain()

    assert "submission_cache_idx" in plan, plan
