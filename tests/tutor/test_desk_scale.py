"""The desk at SPEC §10 volumes: 100k review attempts (50k submissions of
500 students, two attempts each), seeded with bulk inserts. The desk costs
one query per queue whatever the table sizes: no full count, no per-row
query."""

from __future__ import annotations

import json
import time

import pytest
from django.contrib.auth import get_user_model
from django.db import connection, transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from feedback.models import ReviewAttempt
from feedback.results import awaiting_staff_marks
from feedback.services.sequences import next_seq
from feedback.versions import current_versions
from tests.desk_data import QUEUE_NAMES, waiting_review
from tests.factories import criterion_entry, enroll, make_course, make_task, review_result
from tutor.models import Enrollment

pytestmark = pytest.mark.django_db
STUDENTS, PER_STUDENT, ATTEMPTS_EACH = 500, 100, 2
WAITING_EVERY = 10  # every 10th student's latest review waits for staff


def _uuid(n: str) -> str:
    """A uuid made of the number ``n`` (an SQL expression), as each database stores one."""
    if connection.vendor == "postgresql":
        return f"lpad(to_hex({n}), 32, '0')::uuid"
    return f"printf('%%032x', {n})"  # %% : the statements take parameters


def _json(param: str) -> str:
    return f"CAST({param} AS jsonb)" if connection.vendor == "postgresql" else param


def _seed(task) -> int:
    """50k submissions (chains of ``PER_STUDENT`` per student) and two
    attempts each, inserted by two INSERT ... SELECT statements over a
    counting CTE: a Python loop of bulk_create took 45 s here, these take ~2 s."""
    users = get_user_model().objects.bulk_create(
        [get_user_model()(username=f"s{i}") for i in range(STUDENTS)]
    )
    Enrollment.objects.bulk_create([Enrollment(user=u, course=task.course) for u in users])
    stamp = current_versions(task).stamp()
    passed = json.dumps(review_result([criterion_entry("A1", "PASS")]))
    waiting = waiting_review()
    submissions = STUDENTS * PER_STUDENT
    attempts = submissions * ATTEMPTS_EACH
    with transaction.atomic():
        first_sub = next_seq("submission", submissions)
        first_att = next_seq("attempt", attempts)
        params = {
            "task": task.pk.hex if connection.vendor == "sqlite" else str(task.pk),
            "now": timezone.now(),
            "first_sub": first_sub,
            "first_att": first_att,
            "rubric": stamp["rubric"].pk,
            "version": stamp["rubric_version"],
            "hash": stamp["rubric_hash"],
            "prompt": stamp["prompt_version"],
            "engine": stamp["engine_version"],
            "model": stamp["model"],
            "passed": passed,
            "waiting": json.dumps(waiting),
            "marks": awaiting_staff_marks(waiting),
        }
        counting = "WITH RECURSIVE n(v) AS (SELECT 1 UNION ALL SELECT v + 1 FROM n WHERE v < {limit})"
        student = f"(SELECT id FROM auth_user WHERE username = 's' || ((v - 1) / {PER_STUDENT}))"
        with connection.cursor() as cursor:
            cursor.execute(
                counting.format(limit=submissions)
                + " INSERT INTO feedback_submission (id, student_id, task_id, submission_seq, previous_id,"
                " evidence, evidence_summary, evidence_redactions, snapshot_hash, ci_source,"
                " submitted_by_id, created_at)"
                f" SELECT {_uuid('v')}, {student}, %(task)s, %(first_sub)s + v - 1,"
                f" CASE WHEN (v - 1) %% {PER_STUDENT} = 0 THEN NULL ELSE {_uuid('v - 1')} END,"
                " '{\"report\": \"r\"}', '{}', '{}', 'h' || v, 'student', " + student + ", %(now)s FROM n",
                params,
            )
            last = (
                f"(v - 1) / {ATTEMPTS_EACH} %% {PER_STUDENT} = {PER_STUDENT - 1} AND v %% {ATTEMPTS_EACH} = 0"
            )
            waits = f"{last} AND (v - 1) / {ATTEMPTS_EACH * PER_STUDENT} %% {WAITING_EVERY} = 0"
            cursor.execute(
                counting.format(limit=attempts)
                + " INSERT INTO feedback_reviewattempt (id, submission_id, attempt_seq, kind, rubric_id,"
                " rubric_version, rubric_hash, prompt_version, engine_version, model, status, result,"
                " error_code, error_detail, generation_attempts, model_failed, awaiting_staff, forced,"
                " correlation_id, claim_count, lost_count, created_at, finished_at)"
                f" SELECT {_uuid(f'v + {attempts}')}, {_uuid(f'(v - 1) / {ATTEMPTS_EACH} + 1')},"
                " %(first_att)s + v - 1, 'review', %(rubric)s, %(version)s, %(hash)s, %(prompt)s,"
                " %(engine)s, %(model)s, 'completed',"
                f" CASE WHEN {waits} THEN {_json('%(waiting)s')} ELSE {_json('%(passed)s')} END,"
                f" '', '', 0, NULL, CASE WHEN {waits} THEN %(marks)s END, false, '', 0, 0, %(now)s, %(now)s"
                " FROM n",
                params,
            )
            cursor.execute("ANALYZE")
    return ReviewAttempt.objects.count()


def test_the_desk_costs_one_query_per_queue_at_100k_attempts(django_assert_num_queries):
    course = make_course("big-101")
    task = make_task(course)
    t0 = time.perf_counter()
    assert _seed(task) == 100_000
    print(f"seed {time.perf_counter() - t0:.1f}s")
    teacher = enroll(course, "teacher", role=Enrollment.Role.STAFF)
    teacher.is_staff = True
    teacher.save(update_fields=["is_staff"])
    client = Client()
    client.force_login(teacher)
    client.get(reverse("admin:index"))  # warm the content-type and permission caches

    started = time.perf_counter()
    # The session and the user; the criteria flagged for low agreement (the
    # review queue's condition); one statement per queue (the staff scope is
    # a subquery of each); the app list's permissions (2) and staff-view
    # checks (2). None of them grows with the tables.
    with django_assert_num_queries(2 + 1 + len(QUEUE_NAMES) + 4):
        response = client.get(reverse("admin:index"))
    elapsed = time.perf_counter() - started

    assert response.status_code == 200
    counts = {card.name: card.count for card in response.context["cards"]}
    assert counts["reviews"] == STUDENTS // WAITING_EVERY
    print(f"desk at 100k attempts: {elapsed * 1000:.0f} ms on {connection.vendor}")
