"""Reviews by a real Celery worker on a real Redis (SPEC §2, §10).

Driven through the HTTP API like a client would; the model is the fake
OpenAI-compatible server of ``fakellm.py``. The harness (``conftest.py``)
explains when these run and how the worker shares the test database.
"""

from __future__ import annotations

import os
import signal
import time
from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone
from rest_framework.test import APIClient

from feedback.models import ReviewAttempt
from feedback.services.worker import attempts_sweep
from tests.worker.conftest import FAKE_API_KEY, FAKE_MODEL, wait_for
from tests.worker.fakellm import Call, Hang, Reply, review_answer
from tutor.models import ModelCall

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

TERMINAL = {"completed", "unavailable", "invalid"}
REVIEW_TIMEOUT = 30  # seconds for one review to reach a terminal state
REPORT = "first() returns undefined for an empty array; I checked the edge cases."
EVIDENCE = {
    "report": REPORT,
    "files": {"src/first.js": "export const first = (xs) => xs[0];\n"},
    "ci": {"status": "passed", "exit_code": 0, "log_tail": "2 passing"},
    "head_sha": "4f2c1e9",
    "repo_url": "https://git.example.org/alice/first",
}
PASS_ANSWER = review_answer({"A3": "PASS"}, next_step="Add a test for first([]).")


# --- helpers -----------------------------------------------------------------------------


def submit(client: APIClient, task, *, evidence=EVIDENCE, correlation_id: str | None = None) -> dict:
    headers = {"HTTP_X_CORRELATION_ID": correlation_id} if correlation_id else {}
    response = client.post(
        "/api/submissions/", {"task": task.pk, "evidence": evidence}, format="json", **headers
    )
    assert response.status_code == 201, response.content
    body = response.json()
    assert len(body["attempts"]) == 1, body
    return body


def attempt_json(client: APIClient, attempt_id: str) -> dict:
    response = client.get(f"/api/review-attempts/{attempt_id}/")
    assert response.status_code == 200, response.content
    return response.json()


def wait_terminal(client: APIClient, attempt_id: str, worker, timeout: float = REVIEW_TIMEOUT) -> dict:
    last: dict = {}

    def terminal():
        last.update(attempt_json(client, attempt_id))
        return last["status"] in TERMINAL

    wait_for(
        terminal,
        timeout=timeout,
        interval=0.1,
        message=lambda: f"attempt {attempt_id} still {last.get('status')!r}\n{worker.log_tail()}",
    )
    return last


def row(attempt_id) -> dict:
    """Every stored field of the attempt, to compare before and after."""
    return ReviewAttempt.objects.filter(pk=attempt_id).values().get()


def sweep_later(seconds: float) -> dict:
    """The sweep as it runs ``seconds`` from now (instead of sleeping that long)."""
    return attempts_sweep(now=timezone.now() + timedelta(seconds=seconds))


def queue_drained(timeout: float = 20) -> None:
    """Wait until the worker has taken and acknowledged every message: the
    queue list and kombu's unacked hash stay empty across two looks."""
    import redis

    from tutor.celery import app

    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    queue = app.conf.task_default_queue

    def empty():
        return client.llen(queue) == 0 and client.hlen("unacked") == 0

    def stays_empty():
        if not empty():
            return False
        time.sleep(0.3)  # a message between the list and the unacked hash
        return empty()

    try:
        wait_for(stays_empty, timeout=timeout, message="the worker did not drain its queue")
    finally:
        client.close()


def kill_pool_child(worker, killed: list[int]):
    """A fake-server action: SIGKILL the worker's pool child, which is the
    process that sent the request (one child: --concurrency=1)."""

    def action(request):
        for pid in worker.pool_children():
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    return action


def wait_new_pool_child(worker, dead: list[int]) -> int:
    def respawned():
        children = [pid for pid in worker.pool_children() if pid not in dead]
        return children[0] if children else None

    return wait_for(respawned, timeout=20, message=lambda: f"no new pool child\n{worker.log_tail()}")


def assert_never_modified(attempt_id, before: dict, client: APIClient) -> None:
    """A terminal attempt stays exactly as it is through later sweeps and
    duplicate deliveries (SPEC §2)."""
    from feedback.tasks import review_attempt

    assert sweep_later(3600) == {"redispatched": 0, "requeued": 0, "worker_lost": 0}
    review_attempt.delay(str(attempt_id))
    review_attempt.delay(str(attempt_id))
    queue_drained()
    assert row(attempt_id) == before
    assert attempt_json(client, str(attempt_id))["status"] == before["status"]


# --- tests ---------------------------------------------------------------------------------


def test_submission_is_reviewed_end_to_end_by_a_real_worker(celery_worker, fake_llm, task, student_client):
    fake_llm.script(Reply(PASS_ANSWER))

    body = submit(student_client, task, correlation_id="worker-e2e-1")
    attempt = body["attempts"][0]
    assert attempt["status"] == "queued"
    assert attempt["model"] == FAKE_MODEL

    final = wait_terminal(student_client, attempt["id"], celery_worker)

    assert final["status"] == "completed", final
    assert final["error_code"] in ("", None)
    assert final["generation_attempts"] == 1
    assert final["finished_at"]
    result = final["result"]
    assert result["overall"] == "PASS"
    assert result["next_step"] == "Add a test for first([])."
    criteria = {c["rubric_id"]: c for c in result["criteria"]}
    assert [c["rubric_id"] for c in result["criteria"]] == ["A1", "A2", "A3", "L1"]
    assert criteria["A1"]["status"] == "PASS" and criteria["A1"]["basis"] == "self_report"
    assert criteria["A2"]["status"] == "PASS" and criteria["A2"]["basis"] == "check"
    assert criteria["A3"] == {
        "rubric_id": "A3",
        "criterion": "Explanation is correct",
        "kind": "acceptance",
        "status": "PASS",
        "reason": "fake model says PASS for A3",
        "evidence": "first() returns undefined",
        "basis": "model",
    }
    assert criteria["L1"]["status"] == "NEED_REVIEW" and criteria["L1"]["basis"] == "none"

    # Exactly one model request, and it is the one a provider should get.
    [request] = fake_llm.requests
    assert (request.method, request.path) == ("POST", "/v1/chat/completions")
    assert request.header("Authorization") == f"Bearer {FAKE_API_KEY}"
    assert request.header("Content-Type").startswith("application/json")
    sent = request.json()
    assert sent["model"] == FAKE_MODEL
    assert {m["role"] for m in sent["messages"]} <= {"system", "user"}
    assert all(isinstance(m["content"], str) for m in sent["messages"])
    prompt = "\n".join(m["content"] for m in sent["messages"])
    assert "A3" in prompt and "Explanation is correct" in prompt
    assert REPORT in prompt and "export const first" in prompt
    # Only semantic criteria go to the model (SPEC §2).
    for other in ("CI passes", "Report names first and undefined", "Reflects on edge cases"):
        assert other not in prompt

    # The call is audited under the request's correlation id (SPEC §10).
    [call] = ModelCall.objects.all()
    assert call.correlation_id == "worker-e2e-1"
    assert call.status == ModelCall.Status.OK
    assert call.request_messages == sent["messages"]

    # The submission shows the same, finished attempt.
    submission = student_client.get(f"/api/submissions/{body['id']}/").json()
    assert [(a["id"], a["status"]) for a in submission["attempts"]] == [(attempt["id"], "completed")]


def test_worker_killed_mid_review_is_requeued_once_then_completes(
    celery_worker, fake_llm, task, student_client
):
    killed: list[int] = []
    fake_llm.script(Call(kill_pool_child(celery_worker, killed)), then=Reply(PASS_ANSWER))

    attempt_id = submit(student_client, task)["attempts"][0]["id"]
    fake_llm.wait_for_requests(1, timeout=REVIEW_TIMEOUT)
    assert len(killed) == 1, "the worker's pool child was not found when the model call arrived"
    wait_new_pool_child(celery_worker, killed)

    # The dead child's claim holds until the hard time limit has passed.
    assert row(attempt_id)["status"] == "running"
    assert attempts_sweep() == {"redispatched": 0, "requeued": 0, "worker_lost": 0}
    assert row(attempt_id)["status"] == "running"

    # Past the hard limit, the sweep hands it back to the queue once.
    counts = sweep_later(settings.REVIEW_HARD_TIME_LIMIT + 1)
    assert counts["requeued"] == 1, counts
    final = wait_terminal(student_client, attempt_id, celery_worker)

    assert final["status"] == "completed", final
    assert final["result"]["overall"] == "PASS"
    assert len(fake_llm.requests) == 2
    stored = row(attempt_id)
    assert (stored["claim_count"], stored["lost_count"]) == (2, 1)
    assert_never_modified(attempt_id, stored, student_client)
    assert len(fake_llm.requests) == 2


def test_worker_killed_twice_ends_unavailable_worker_lost(celery_worker, fake_llm, task, student_client):
    killed: list[int] = []
    kill = Call(kill_pool_child(celery_worker, killed))
    fake_llm.script(kill, kill)

    attempt_id = submit(student_client, task)["attempts"][0]["id"]
    fake_llm.wait_for_requests(1, timeout=REVIEW_TIMEOUT)
    wait_new_pool_child(celery_worker, killed)
    assert sweep_later(settings.REVIEW_HARD_TIME_LIMIT + 1)["requeued"] == 1

    fake_llm.wait_for_requests(2, timeout=REVIEW_TIMEOUT)
    assert len(killed) == 2
    wait_new_pool_child(celery_worker, killed)
    assert row(attempt_id)["status"] == "running"
    counts = sweep_later(settings.REVIEW_HARD_TIME_LIMIT + 1)
    assert counts == {"redispatched": 0, "requeued": 0, "worker_lost": 1}

    final = attempt_json(student_client, attempt_id)
    assert (final["status"], final["error_code"], final["result"]) == ("unavailable", "WORKER_LOST", None)
    assert final["finished_at"]
    stored = row(attempt_id)
    assert (stored["claim_count"], stored["lost_count"]) == (2, 2)
    assert_never_modified(attempt_id, stored, student_client)
    assert len(fake_llm.requests) == 2


def test_hanging_provider_ends_attempt_unavailable_within_the_limits(
    celery_worker, fake_llm, task, student_client
):
    fake_llm.script(Hang(30))
    started = time.monotonic()

    attempt_id = submit(student_client, task)["attempts"][0]["id"]
    final = wait_terminal(student_client, attempt_id, celery_worker)

    # TUTOR_LLM_TIMEOUT=1 with no retries: the transport error is not a repair
    # loop outcome, so there is no second generation, and no student FAIL.
    assert (final["status"], final["error_code"]) == ("unavailable", "REVIEW_UNAVAILABLE")
    # The machine checks it ran stay in the record, with no overall verdict (SPEC §2).
    assert final["result"]["overall"] is None
    assert [(c["rubric_id"], c["basis"]) for c in final["result"]["criteria"]] == [
        ("A1", "self_report"),
        ("A2", "check"),
    ]
    assert len(fake_llm.requests) == 1
    assert time.monotonic() - started < settings.REVIEW_HARD_TIME_LIMIT + 5


def test_submission_while_redis_is_down_is_reviewed_once_after_restart(
    celery_worker, fake_llm, redis_server, task, student_client
):
    fake_llm.script(Reply(PASS_ANSWER))
    redis_server.stop()

    started = time.monotonic()
    body = submit(student_client, task)
    # The broker outage never turns a stored submission into an error, and
    # the request does not hang on the broker.
    assert time.monotonic() - started < 15
    attempt_id = body["attempts"][0]["id"]
    assert body["attempts"][0]["status"] == "queued"
    time.sleep(1)
    assert row(attempt_id)["status"] == "queued"
    assert fake_llm.requests == []

    redis_server.start()
    celery_worker.wait_ready(timeout=60)  # the worker reconnects on its own
    assert row(attempt_id)["status"] == "queued"  # the message was lost with the broker

    redispatched = 0

    def reviewed():
        nonlocal redispatched
        redispatched += attempts_sweep()["redispatched"]
        return row(attempt_id)["status"] in TERMINAL

    wait_for(reviewed, timeout=REVIEW_TIMEOUT, interval=0.5, message=lambda: celery_worker.log_tail())

    assert redispatched >= 1
    final = attempt_json(student_client, attempt_id)
    assert final["status"] == "completed", final
    assert len(fake_llm.requests) == 1
    stored = row(attempt_id)
    assert stored["claim_count"] == 1
    assert_never_modified(attempt_id, stored, student_client)
    assert len(fake_llm.requests) == 1


def test_healthz_follows_the_broker_and_the_worker(celery_worker, redis_server):
    client = APIClient()

    response = client.get("/healthz")
    assert response.status_code == 200, response.content
    assert response.json() == {
        "status": "ok",
        "checks": {"database": "ok", "broker": "ok", "worker": "ok", "model": "ok"},
    }

    redis_server.stop()
    response = client.get("/healthz")
    assert response.status_code == 503, response.content
    assert response.json() == {
        "status": "degraded",
        "checks": {"database": "ok", "broker": "down", "worker": "down", "model": "ok"},
    }

    redis_server.start()
    celery_worker.wait_ready(timeout=60)
    response = client.get("/healthz")
    assert response.status_code == 200, response.content
    assert response.json()["checks"] == {"database": "ok", "broker": "ok", "worker": "ok", "model": "ok"}


def test_healthz_reports_a_missing_worker_as_down(celery_worker):
    celery_worker.stop()

    response = APIClient().get("/healthz")

    assert response.status_code == 503, response.content
    assert response.json()["checks"] == {"database": "ok", "broker": "ok", "worker": "down", "model": "ok"}


def test_duplicate_delivery_changes_nothing_after_the_first_terminal_write(
    celery_worker, fake_llm, task, student_client
):
    from feedback.tasks import review_attempt

    fake_llm.script(Reply(PASS_ANSWER))

    attempt_id = submit(student_client, task)["attempts"][0]["id"]
    # Two more deliveries of the same id, racing the first one.
    review_attempt.delay(attempt_id)
    review_attempt.delay(attempt_id)
    final = wait_terminal(student_client, attempt_id, celery_worker)
    queue_drained()

    assert final["status"] == "completed", final
    stored = row(attempt_id)
    assert stored["claim_count"] == 1
    assert len(fake_llm.requests) == 1
    assert_never_modified(attempt_id, stored, student_client)
    assert len(fake_llm.requests) == 1
