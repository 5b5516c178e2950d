"""The worker's cost per review attempt (SPEC §10): what a Celery worker
spends on one review task besides the model -- claiming the attempt, the
machine checks, the result write and its announcement -- with the offline
reviewer (no model time), run through the task itself (``review_attempt``,
as a worker runs it, in this process).

Measured twice: on a kept database connection (``CONN_MAX_AGE``, what the
worker does), and opening a new connection for every task (what a worker
without kept connections does): the difference is the connection's price.
The attempts belong to submissions made for the measurement (a bench
student other than the measured ones), removed afterwards by the audited
purge.
"""

from __future__ import annotations

import random
import statistics
import time
import uuid
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import connection

from feedback.models import AttemptStatus, Submission
from feedback.services.retention import attempts_purge
from feedback.tasks import review_attempt
from feedback.versions import current_versions
from lessons.models import Lesson
from tutor.bench.seeding import BENCH_RANDOM_SEED, Bench, SubmissionsSeeder, attempt, store_numbered

# Untimed reviews first: the first ones compile queries and fill caches.
REVIEW_WARMUP = 5


@dataclass(frozen=True)
class ReviewFigures:
    attempts: int  # timed per mode
    kept_median: float  # seconds
    fresh_median: float
    student: str


def _queued(bench: Bench, student_id: int, count: int) -> tuple[list[uuid.UUID], list[uuid.UUID]]:
    """``count`` new submissions of ``student_id`` on the measured task, each
    with one queued attempt that was never dispatched (no worker takes it)."""
    rng = random.Random(BENCH_RANDOM_SEED + 1)
    task = bench.measured_task
    stamp = current_versions(task).stamp()
    submissions, attempts = [], []
    previous = Submission.objects.filter(student_id=student_id, task=task).order_by("-submission_seq").first()
    previous_id = previous.pk if previous else None
    for i in range(count):
        # Evidence of its own (the head sha differs): no cached review serves it.
        submission = SubmissionsSeeder.submission(rng, 10_000_000 + i, student_id, task, previous_id)
        previous_id = submission.pk
        submissions.append(submission)
        attempts.append(attempt(submission, stamp, {}, "queued", rng))
    store_numbered(submissions, attempts)
    return [s.pk for s in submissions], [a.pk for a in attempts]


def _review(attempt_id: uuid.UUID, *, new_connection: bool) -> float:
    if new_connection:
        connection.close()  # the task's first query opens a new one
    began = time.perf_counter()
    run = review_attempt.apply(args=[str(attempt_id)])
    elapsed = time.perf_counter() - began
    if not run.successful() or run.result != AttemptStatus.COMPLETED:
        raise CommandError(f"review of bench attempt {attempt_id} ended {run.result!r}, not completed")
    return elapsed


def review_overhead(bench: Bench, attempts: int) -> ReviewFigures:
    """Median seconds per review task, kept connection and new connection, ``attempts`` of each."""
    if connection.in_atomic_block:
        raise CommandError(
            "the worker figure opens connections of its own: it cannot run inside a transaction"
        )
    student_id = bench.student_ids()[-1]
    total = REVIEW_WARMUP + 2 * attempts
    submission_ids, attempt_ids = _queued(bench, student_id, total)
    try:
        for attempt_id in attempt_ids[:REVIEW_WARMUP]:
            _review(attempt_id, new_connection=False)
        timed = attempt_ids[REVIEW_WARMUP:]
        kept, fresh = [], []
        # Interleaved, so drift in the machine's load weighs on both alike.
        for i in range(0, len(timed), 2):
            kept.append(_review(timed[i], new_connection=False))
            fresh.append(_review(timed[i + 1], new_connection=True))
    finally:
        # Drafts that lesson capture made from these reviews (a FAIL fixed by
        # the next submission) go with them.
        Lesson.objects.filter(source_submission_id__in=submission_ids).delete()
        attempts_purge(
            submission_ids=submission_ids, reason="bench_context cleanup", course=bench.measured_task.course
        )
    username = get_user_model().objects.get(pk=student_id).username
    return ReviewFigures(
        attempts=attempts,
        kept_median=statistics.median(kept),
        fresh_median=statistics.median(fresh),
        student=username,
    )
