"""Staff verdicts (SPEC §2): the next step never contradicts the verdict, and
every terminal attempt is announced once after its commit."""

from __future__ import annotations

import pytest
from django.test import TestCase

from feedback.models import AttemptStatus
from feedback.services.intake import submission_create
from feedback.services.verdicts import staff_verdict_create
from feedback.signals import attempt_finished
from tests.factories import criterion_entry, make_attempt, make_submission, review_result


def base(student, task, next_step: str):
    submission = make_submission(student, task)
    make_attempt(
        submission,
        result=review_result(
            [
                criterion_entry("A1", "FAIL", basis="ci"),
                criterion_entry("A2", "PASS"),
                criterion_entry("A3", "NEED_REVIEW", basis="none"),
                criterion_entry("L1", "PASS", kind="learning"),
            ],
            next_step=next_step,
        ),
    )
    return submission


@pytest.mark.parametrize(
    ("earlier", "given", "verdicts", "expected"),
    [
        # the staff member's own text wins
        ("Fix A1: CI passes", "Rerun the tests locally", [("A1", "PASS")], "Rerun the tests locally"),
        # overall PASS: no next step at all
        ("Ask staff to check A3", None, [("A1", "PASS"), ("A3", "PASS")], ""),
        # still names an open criterion (A1 still FAIL): kept
        ("Fix A1: CI passes", None, [("A3", "PASS")], "Fix A1: CI passes"),
        # names only criteria that now PASS, though the overall is not PASS: dropped
        ("Ask staff to check A3", None, [("A3", "PASS")], ""),
        # a rubric id inside another word does not count ("A10", "XA1")
        ("See A10 and XA1", None, [("A3", "PASS")], ""),
        # names no criterion at all: dropped
        ("Write more tests", None, [("A3", "PASS")], ""),
    ],
)
def test_verdict_next_step_rule(task, student, staff, earlier, given, verdicts, expected):
    submission = base(student, task, earlier)

    attempt = staff_verdict_create(
        submission=submission,
        staff=staff,
        criteria=[{"rubric_id": rid, "status": status, "reason": "staff looked"} for rid, status in verdicts],
        next_step=given,
    )

    assert attempt.result["next_step"] == expected


def test_every_terminal_attempt_is_announced_once_after_commit(task, student, staff, settings):
    settings.TUTOR_LLM_BASE_URL = None
    heard = []

    def listener(sender, attempt_id, status, **kwargs):
        heard.append((str(attempt_id), status))

    attempt_finished.connect(listener)
    try:
        evidence = {"report": "first returns undefined", "ci": {"status": "passed"}}
        with TestCase.captureOnCommitCallbacks(execute=True) as callbacks:
            first = submission_create(
                student=student, task=task, evidence=evidence, submitted_by=student, ci_source="student"
            )
            assert heard == []  # nothing before the commit
        assert callbacks
        with TestCase.captureOnCommitCallbacks(execute=True):
            again = submission_create(
                student=student, task=task, evidence=evidence, submitted_by=student, ci_source="student"
            )  # completed from the cache
        with TestCase.captureOnCommitCallbacks(execute=True):
            verdict = staff_verdict_create(
                submission=again,
                staff=staff,
                criteria=[{"rubric_id": "A3", "status": "PASS", "reason": "ok"}],
            )
    finally:
        attempt_finished.disconnect(listener)

    ids = [
        str(first.attempts.get().pk),
        str(again.attempts.get(reused_from__isnull=False).pk),
        str(verdict.pk),
    ]
    assert heard == [(ids[0], AttemptStatus.COMPLETED), (ids[1], "completed"), (ids[2], "completed")]
