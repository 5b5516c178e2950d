"""One attempt through feedback.pipeline.run_review: every path ends in
exactly one terminal state, and no failure of ours becomes a student FAIL."""

from __future__ import annotations

import json

import pytest
from celery.exceptions import SoftTimeLimitExceeded
from django.db import transaction

from feedback import pipeline
from feedback.models import AttemptStatus, ErrorCode, ReviewAttempt, Submission
from feedback.pipeline import run_review
from feedback.services.intake import submission_create
from tutor.kernel.correlation import get_correlation_id, reset_correlation_id, set_correlation_id

EVIDENCE = {
    "report": "first returns undefined",
    "files": {},
    "ci": {"status": "passed", "exit_code": 0, "log_tail": ""},
}


def queued(student, task, evidence=EVIDENCE) -> ReviewAttempt:
    """A stored, queued attempt; on_commit does not fire inside the test
    transaction, so nothing has reviewed it yet."""
    submission = submission_create(
        student=student, task=task, evidence=evidence, submitted_by=student, ci_source="student"
    )
    attempt = submission.attempts.get()
    assert attempt.status == AttemptStatus.QUEUED
    return attempt


def reply(status="PASS", next_step="n") -> str:
    return json.dumps(
        {
            "verdicts": [{"rubric_id": "A3", "status": status, "reason": "r", "evidence": "e"}],
            "next_step": next_step,
        }
    )


def test_run_review_claims_and_completes_a_queued_attempt(fake_llm, student, task):
    fake_llm.reply(reply("PASS"))
    attempt = queued(student, task)

    assert run_review(attempt.pk) == AttemptStatus.COMPLETED

    attempt.refresh_from_db()
    assert attempt.status == AttemptStatus.COMPLETED
    assert attempt.claim is not None
    assert attempt.claim_count == 1
    assert attempt.finished_at is not None
    assert attempt.finished_at >= attempt.created_at


def test_corrupt_stored_evidence_makes_attempt_invalid(student, task, settings):
    settings.TUTOR_LLM_BASE_URL = None
    attempt = queued(student, task)
    # Stored evidence is never edited by the app; simulate a row damaged outside it.
    Submission.objects.filter(pk=attempt.submission_id).update(evidence={"report": 5, "files": []})

    assert run_review(attempt.pk) == AttemptStatus.INVALID

    attempt.refresh_from_db()
    assert attempt.error_code == ErrorCode.EVIDENCE_INVALID
    assert attempt.result is None


def test_unexpected_exception_ends_attempt_unavailable(student, task, monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("bug in a check")

    monkeypatch.setattr(pipeline, "run_machine_check", broken)
    attempt = queued(student, task)

    assert run_review(attempt.pk) == AttemptStatus.UNAVAILABLE

    attempt.refresh_from_db()
    assert attempt.error_code == ErrorCode.INTERNAL_ERROR
    assert "ZeroDivisionError" in attempt.error_detail
    assert attempt.result is None


def test_soft_time_limit_ends_attempt_unavailable(fake_llm, student, task):
    def too_slow(body):
        raise SoftTimeLimitExceeded()

    fake_llm.reply(too_slow)
    attempt = queued(student, task)

    assert run_review(attempt.pk) == AttemptStatus.UNAVAILABLE

    attempt.refresh_from_db()
    assert attempt.error_code == ErrorCode.TIME_LIMIT


def test_run_review_of_unknown_or_finished_attempt_does_nothing(fake_llm, student, task):
    fake_llm.reply(reply())
    attempt = queued(student, task)
    run_review(attempt.pk)
    before = ReviewAttempt.objects.filter(pk=attempt.pk).values().get()

    assert run_review(attempt.pk) is None
    assert run_review("00000000-0000-0000-0000-000000000000") is None

    assert ReviewAttempt.objects.filter(pk=attempt.pk).values().get() == before
    assert len(fake_llm.requests) == 1


def test_review_runs_under_the_attempts_correlation_id_and_restores_the_callers(fake_llm, student, task):
    fake_llm.reply(reply())
    token = set_correlation_id("request-abc")
    try:
        with transaction.atomic():
            attempt = queued(student, task)
        assert attempt.correlation_id == "request-abc"
        seen = []
        fake_llm.script[0:1] = [lambda body: seen.append(get_correlation_id()) or reply()]
        set_correlation_id("another-caller")
        run_review(attempt.pk)
        assert seen == ["request-abc"]
        assert get_correlation_id() == "another-caller"
    finally:
        reset_correlation_id(token)


@pytest.mark.parametrize("model_status,overall", [("PASS", "PASS"), ("NEED_REVIEW", "NEED_REVIEW")])
def test_model_need_review_keeps_overall_need_review(fake_llm, student, task, model_status, overall):
    fake_llm.reply(reply(model_status))
    attempt = queued(student, task)

    run_review(attempt.pk)

    attempt.refresh_from_db()
    assert attempt.result["overall"] == overall
    assert attempt.result["next_step"] == "n"


@pytest.mark.parametrize(
    "model_status,expected",
    [("FAIL", "Fix A3: Explanation is correct"), ("PASS", "All acceptance criteria pass.")],
)
def test_empty_next_step_from_the_model_is_replaced(fake_llm, student, task, model_status, expected):
    fake_llm.reply(reply(model_status, next_step=""))
    attempt = queued(student, task)

    run_review(attempt.pk)

    attempt.refresh_from_db()
    assert attempt.result["next_step"] == expected
