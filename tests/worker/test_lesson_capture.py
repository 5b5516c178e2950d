"""Capture from reviews on a real Celery worker and a real Redis (SPEC §6, §10).

The passing review of the fixing submission runs in the worker process; the
draft is written there, after that review's commit, through the
``attempt_finished`` hook. Redelivering the review task and announcing the
attempt again leave exactly one draft: the review's claim makes the repeat a
no-op, and ``lesson_one_draft_per_fixed_criterion`` backs the capture itself.
"""

from __future__ import annotations

import pytest

from feedback.models import ReviewAttempt
from feedback.signals import attempt_finished
from lessons.models import Lesson
from tests.factories import client_for
from tests.worker.conftest import wait_for
from tests.worker.fakellm import Reply, review_answer
from tests.worker.test_review_worker import queue_drained, wait_terminal

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

REPORT = "first() returns undefined for an empty array."
FAILING = {"report": REPORT, "ci": {"status": "failed", "exit_code": 1, "log_tail": "1 failing"}}
PASSING = {"report": REPORT, "ci": {"status": "passed", "exit_code": 0, "log_tail": "3 passing"}}


def submit_for(client, task, student, evidence) -> str:
    response = client.post(
        "/api/submissions/",
        {"task": str(task.pk), "student": student.username, "evidence": evidence},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()["attempts"][0]["id"]


def test_the_fixing_review_on_a_real_worker_captures_one_draft_even_when_delivered_twice(
    celery_worker, fake_llm, task, student, service, staff_client
):
    from feedback.tasks import review_attempt

    fake_llm.script(Reply(review_answer({"A3": "PASS"})), Reply(review_answer({"A3": "PASS"})))
    ci = client_for(service)

    failing = wait_terminal(staff_client, submit_for(ci, task, student, FAILING), celery_worker)
    fixing_id = submit_for(ci, task, student, PASSING)
    fixing = wait_terminal(staff_client, fixing_id, celery_worker)
    assert failing["result"]["criteria"][0]["status"] == "FAIL" and fixing["status"] == "completed"

    draft = wait_for(
        lambda: Lesson.objects.filter(source="review").first(),
        timeout=20,
        message=lambda: f"no draft captured\n{celery_worker.log_tail()}",
    )
    assert (draft.status, draft.source_rubric_id, str(draft.source_attempt_id)) == (
        "pending",
        "A1",
        fixing_id,
    )

    # Duplicate deliveries: the review task again (twice), and the hook again.
    review_attempt.delay(fixing_id)
    review_attempt.delay(fixing_id)
    queue_drained()
    attempt_finished.send(sender=ReviewAttempt, attempt_id=fixing_id, status="completed")

    assert Lesson.objects.filter(source="review").count() == 1
    assert ReviewAttempt.objects.get(pk=fixing_id).status == "completed"
