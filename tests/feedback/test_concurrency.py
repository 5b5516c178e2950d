"""Concurrent submissions (SPEC §2, §10, §11).

Each thread has its own database connection and its own transaction, so this
runs the real race on either database: on PostgreSQL the counter row's lock
orders the writers, on SQLite the IMMEDIATE write lock does (the test settings
use a database file that every thread opens). ``transaction=True`` lets each
thread commit for real.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connections

from feedback.models import CiSource, Counter, ReviewAttempt, Submission
from feedback.services.intake import submission_create
from tests.factories import enroll, make_course, make_task

pytestmark = pytest.mark.django_db(transaction=True)

CONCURRENT_SUBMISSIONS = 50
THREAD_TIMEOUT = 120  # seconds for all threads together; SQLite writers queue on the busy timeout


def run_concurrently(count: int, work) -> list:
    """Call ``work(i)`` for i in range(count), all released at once by a barrier."""
    barrier = threading.Barrier(count)

    def run(i: int):
        try:
            barrier.wait(timeout=30)
            return work(i)
        finally:
            connections.close_all()  # this thread's connection

    with ThreadPoolExecutor(max_workers=count) as pool:
        futures = [pool.submit(run, i) for i in range(count)]
        return [future.result(timeout=THREAD_TIMEOUT) for future in futures]


def submit(student, task, i: int) -> Submission:
    return submission_create(
        student=student,
        task=task,
        evidence={"report": f"report number {i}: first() returns undefined"},
        submitted_by=student,
        ci_source=CiSource.STUDENT,
    )


def assert_gapless(values: list[int]) -> None:
    assert len(set(values)) == len(values), f"duplicate sequence numbers: {sorted(values)}"
    assert sorted(values) == list(range(min(values), min(values) + len(values))), sorted(values)


def test_concurrent_submissions_get_distinct_gapless_increasing_sequence_numbers():
    course = make_course()
    task = make_task(course)
    students = [enroll(course, f"student{i}") for i in range(CONCURRENT_SUBMISSIONS)]

    created = run_concurrently(CONCURRENT_SUBMISSIONS, lambda i: submit(students[i], task, i))

    assert len({s.pk for s in created}) == CONCURRENT_SUBMISSIONS
    submissions = list(Submission.objects.filter(task=task).order_by("submission_seq"))
    assert len(submissions) == CONCURRENT_SUBMISSIONS
    submission_seqs = [s.submission_seq for s in submissions]
    assert_gapless(submission_seqs)

    # One first attempt per submission, numbered in the same order: both
    # counters are taken in one transaction, submission first.
    attempts = {
        a.submission_id: a.attempt_seq
        for a in ReviewAttempt.objects.filter(submission__task=task).only("submission_id", "attempt_seq")
    }
    assert len(attempts) == CONCURRENT_SUBMISSIONS
    attempt_seqs = [attempts[s.pk] for s in submissions]
    assert_gapless(attempt_seqs)
    assert attempt_seqs == sorted(attempt_seqs), "attempt_seq does not follow submission_seq"

    # The counters stop exactly at the last number handed out: nothing was lost to a rollback.
    assert Counter.objects.get(name="submission").value == submission_seqs[-1]
    assert Counter.objects.get(name="attempt").value == attempt_seqs[-1]


def test_concurrent_submissions_of_one_student_chain_previous_in_order():
    course = make_course()
    task = make_task(course)
    student = enroll(course, "alice")
    count = 10

    run_concurrently(count, lambda i: submit(student, task, i))

    submissions = list(Submission.objects.filter(student=student, task=task).order_by("submission_seq"))
    assert len(submissions) == count
    assert_gapless([s.submission_seq for s in submissions])
    # Each submission's previous is the one just before it: one chain, no fork.
    assert [s.previous_id for s in submissions] == [None] + [s.pk for s in submissions[:-1]]
