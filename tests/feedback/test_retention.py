"""Deleting review history (SPEC §2): the database refuses to delete a
terminal attempt, except inside the one named, audited purge; the
benchmark's cleanup and ``flush`` go through it too."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.db import DatabaseError, IntegrityError, connection, transaction

from feedback.models import (
    AttemptPurgePermit,
    AttemptStatus,
    CriterionAgreement,
    RegradeRequest,
    ReviewAttempt,
    Submission,
)
from feedback.services.regrades import regrade_request_create
from feedback.services.retention import attempts_purge
from feedback.services.verdicts import staff_verdict_create
from tests.factories import criterion_entry, make_attempt, make_submission, review_result
from tutor.models import AuditEvent


def raw_delete(attempt_id) -> None:
    table = connection.ops.quote_name(ReviewAttempt._meta.db_table)
    value = ReviewAttempt._meta.pk.get_db_prep_value(attempt_id, connection)
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {table} WHERE id = %s", [value])  # noqa: S608


@pytest.mark.django_db
@pytest.mark.parametrize(
    "status", [AttemptStatus.COMPLETED, AttemptStatus.UNAVAILABLE, AttemptStatus.INVALID]
)
@pytest.mark.parametrize("how", ["orm", "sql"])
def test_the_database_refuses_to_delete_a_terminal_attempt(student, task, status, how):
    attempt = make_attempt(make_submission(student, task), status)

    with pytest.raises((IntegrityError, DatabaseError)), transaction.atomic():
        if how == "orm":
            ReviewAttempt.objects.filter(pk=attempt.pk).delete()
        else:
            raw_delete(attempt.pk)

    assert ReviewAttempt.objects.filter(pk=attempt.pk).exists()


@pytest.mark.django_db
def test_a_queued_attempt_is_not_history_yet_and_may_go(student, task):
    attempt = make_attempt(make_submission(student, task), AttemptStatus.QUEUED)

    ReviewAttempt.objects.filter(pk=attempt.pk).delete()

    assert not ReviewAttempt.objects.filter(pk=attempt.pk).exists()


@pytest.mark.django_db
def test_the_purge_deletes_submissions_with_their_attempts_and_records_one_audit_event(
    student, other_student, task, course
):
    first = make_submission(student, task)
    original = make_attempt(first)
    second = make_submission(student, task)  # previous = first
    make_attempt(second, reused_from=original)
    make_attempt(second, AttemptStatus.UNAVAILABLE)
    kept = make_submission(other_student, task)
    kept_attempt = make_attempt(kept)

    purged = attempts_purge(
        submission_ids=[second.pk, first.pk], reason="retention: older than 365 days", course=course
    )

    assert (purged.submissions, purged.attempts) == (2, 3)
    assert list(Submission.objects.values_list("pk", flat=True)) == [kept.pk]
    assert list(ReviewAttempt.objects.values_list("pk", flat=True)) == [kept_attempt.pk]
    [event] = AuditEvent.objects.filter(event=AuditEvent.Event.ATTEMPTS_PURGED)
    assert (event.actor, event.actor_label, event.course_id) == (None, "operator", course.pk)
    assert event.reason == "retention: older than 365 days"
    assert event.extra == {"submissions": 2, "attempts": 3, "students": [student.pk]}
    assert not AttemptPurgePermit.objects.exists()  # the guard is back
    with pytest.raises((IntegrityError, DatabaseError)), transaction.atomic():
        ReviewAttempt.objects.filter(pk=kept_attempt.pk).delete()


@pytest.mark.django_db
def test_a_purge_that_would_break_a_reference_deletes_nothing(student, task):
    first = make_submission(student, task)
    original = make_attempt(first)
    second = make_submission(student, task)
    make_attempt(second, reused_from=original)

    # ``second`` (kept) names ``first`` as previous, and its attempt was reused from first's.
    with pytest.raises(IntegrityError):
        attempts_purge(submission_ids=[first.pk], reason="too narrow")

    assert Submission.objects.count() == 2
    assert ReviewAttempt.objects.count() == 2
    assert not AuditEvent.objects.filter(event=AuditEvent.Event.ATTEMPTS_PURGED).exists()
    assert not AttemptPurgePermit.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_flush_empties_a_database_that_holds_terminal_attempts(student, task):
    # The test runner flushes this way after every transactional test; on
    # SQLite, flush deletes row by row and so meets the guard.
    make_attempt(make_submission(student, task))
    make_attempt(make_submission(student, task), AttemptStatus.UNAVAILABLE)

    call_command("flush", interactive=False, verbosity=0)

    assert not ReviewAttempt.objects.exists()
    assert not Submission.objects.exists()
    assert not AttemptPurgePermit.objects.exists()


@pytest.mark.django_db
def test_the_benchmark_cleanup_goes_through_the_audited_purge(db):
    out = StringIO()

    # No facts, memories or lessons: their seeders' own defaults (10k each) are not what this is about.
    call_command("bench_context", "--submissions", "60", "--students", "3", "--messages", "4",
                 "--requests", "2", "--warmup", "0", "--ingest", "0", "--reviews", "0",
                 "--facts", "0", "--memories", "0", "--lessons", "0",
                 "--first", "1", "--new-sessions", "1", "--changes", "1", "--mixed", "1",
                 stdout=out)  # fmt: skip

    assert not Submission.objects.filter(task__course__slug="bench").exists()
    events = AuditEvent.objects.filter(event=AuditEvent.Event.ATTEMPTS_PURGED)
    assert events.exists()
    assert sum(e.extra["submissions"] for e in events) == 60
    assert {e.reason for e in events} == {"bench_context cleanup"}


@pytest.mark.django_db
def test_the_purge_takes_rows_of_other_apps_that_point_at_the_purged_history(student, task, staff):
    submission = make_submission(student, task)
    make_attempt(
        submission,
        result=review_result(
            [
                criterion_entry("A1", "PASS", basis="ci"),
                criterion_entry("A2", "FAIL"),
                criterion_entry("A3", "PASS", basis="model"),
                criterion_entry("L1", "PASS", kind="learning"),
            ]
        ),
    )
    regrade_request_create(submission=submission, student=student, rubric_id="A2", reason="it does name it")
    staff_verdict_create(
        submission=submission, staff=staff, criteria=[{"rubric_id": "A2", "status": "PASS", "reason": "ok"}]
    )
    assert CriterionAgreement.objects.count() == 1 and RegradeRequest.objects.count() == 1

    purged = attempts_purge(submission_ids=[submission.pk], reason="retention test")

    assert (purged.submissions, purged.attempts) == (1, 2)
    assert not CriterionAgreement.objects.exists() and not RegradeRequest.objects.exists()
