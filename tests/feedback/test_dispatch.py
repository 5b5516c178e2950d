"""The sweep re-dispatches only what the broker cannot still hold (SPEC §2).

A published review task may wait in a backed-up queue for a long time; Redis
keeps it until a worker takes it, and redelivers an unacknowledged one after
the visibility timeout. Re-sending it earlier only doubles the queue (28
messages for 30 attempts were observed). So: a successful publish is re-sent
once ``CELERY_VISIBILITY_TIMEOUT`` has passed, a failed one at the next
sweep, and an attempt never dispatched (the benchmark's rows) never.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.test import TestCase
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from feedback.models import AttemptStatus, ReviewAttempt
from feedback.services.intake import submission_create
from feedback.services.worker import attempts_sweep
from feedback.tasks import review_attempt
from tests.factories import make_attempt, make_submission

EVIDENCE = {"report": "first() returns undefined"}


@pytest.fixture
def broker(monkeypatch):
    """The task's publishes, recorded; ``down`` makes each publish fail."""

    class Broker:
        sent: list[str] = []
        down = False

        def publish(self, attempt_id):
            if self.down:
                raise ConnectionError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")
            self.sent.append(attempt_id)

    recorder = Broker()
    recorder.sent = []
    monkeypatch.setattr(review_attempt, "delay", recorder.publish)
    return recorder


def submit_all(students_tasks) -> list[ReviewAttempt]:
    submissions = []
    with TestCase.captureOnCommitCallbacks(execute=True):
        for student, task in students_tasks:
            submissions.append(
                submission_create(
                    student=student, task=task, evidence=EVIDENCE, submitted_by=student, ci_source="student"
                )
            )
    return [s.attempts.get() for s in submissions]


def later(seconds: float):
    return timezone.now() + timedelta(seconds=seconds)


@pytest.mark.django_db
def test_published_attempts_waiting_in_a_backed_up_queue_are_not_sent_again(settings, student, task, broker):
    attempts = submit_all([(student, task)] * 30)
    assert len(broker.sent) == 30  # one publish each, after the commit

    # Long after the old 120 s re-dispatch delay, well inside the visibility timeout.
    for seconds in (121, 600, settings.CELERY_VISIBILITY_TIMEOUT - 5):
        assert attempts_sweep(now=later(seconds))["redispatched"] == 0
    assert len(broker.sent) == 30

    # Once Redis would have redelivered them anyway, the broker may have lost them: send once more.
    counts = attempts_sweep(now=later(settings.CELERY_VISIBILITY_TIMEOUT + 1))
    assert counts["redispatched"] == 30
    assert sorted(broker.sent[30:]) == sorted(str(a.pk) for a in attempts)
    assert attempts_sweep(now=later(settings.CELERY_VISIBILITY_TIMEOUT + 2))["redispatched"] == 0


@pytest.mark.django_db
def test_a_failed_publish_is_sent_again_at_the_next_sweep(settings, student, task, broker):
    broker.down = True
    [attempt] = submit_all([(student, task)])
    attempt.refresh_from_db()
    assert attempt.status == AttemptStatus.QUEUED
    # Marked as "the broker holds nothing for it".
    assert attempt.dispatched_at <= timezone.now() - timedelta(seconds=settings.CELERY_VISIBILITY_TIMEOUT)

    broker.down = False
    counts = attempts_sweep(now=later(1))

    assert counts["redispatched"] == 1
    assert broker.sent == [str(attempt.pk)]
    assert attempts_sweep(now=later(2))["redispatched"] == 0


@pytest.mark.django_db
def test_a_sweep_during_the_outage_marks_the_attempt_again(settings, student, task, broker):
    broker.down = True
    [attempt] = submit_all([(student, task)])

    assert attempts_sweep(now=later(1))["redispatched"] == 1  # tried, and failed again
    assert attempts_sweep(now=later(2))["redispatched"] == 1
    broker.down = False
    assert attempts_sweep(now=later(3))["redispatched"] == 1

    assert broker.sent == [str(attempt.pk)]


@pytest.mark.django_db
def test_an_attempt_never_dispatched_is_not_the_sweeps_to_send(student, task, broker):
    attempt = make_attempt(make_submission(student, task), AttemptStatus.QUEUED)  # dispatched_at null

    assert attempts_sweep(now=later(10**7))["redispatched"] == 0
    assert broker.sent == []
    assert ReviewAttempt.objects.get(pk=attempt.pk).dispatched_at is None


def plan(sql: str) -> str:
    """The query plan of ``sql`` (captured SQL, its parameters inlined)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("SET LOCAL enable_seqscan = off")  # tiny tables: make the planner show its index
            cursor.execute("EXPLAIN " + sql)
        else:
            cursor.execute("EXPLAIN QUERY PLAN " + sql)
        return "\n".join(str(row) for row in cursor.fetchall())


@pytest.mark.django_db
def test_the_sweeps_scans_are_served_by_the_partial_indexes(student, task, broker):
    submit_all([(student, task)] * 3)

    with CaptureQueriesContext(connection) as captured:
        attempts_sweep(now=later(10))

    scans = [q for q in captured.captured_queries if q["sql"].startswith("SELECT")]
    assert len(scans) == 2  # one per work queue, whatever the number of attempts
    queued, running = (q["sql"] for q in scans)
    assert "attempt_queued_dispatch_idx" in plan(queued)
    assert "attempt_running_claim_idx" in plan(running)
