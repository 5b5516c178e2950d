"""A provider outage: the model URL points at a dead port (SPEC §2, §3, §7).

The real model client over a real socket: nothing listens on port 1 of the
loopback, so every request is refused at once. The student sees a plain
message and an error code, never the transport's text; the detail goes to
the log and the ModelCall rows. A review keeps the machine checks' verdicts
it computed, while the feedback state stays ``unavailable`` and the cache
never reuses the attempt. ``/healthz`` reports the model down from those
rows, with a 200.
"""

from __future__ import annotations

import logging

import httpx
import pytest
from rest_framework.test import APIClient

from feedback.models import AttemptStatus, ErrorCode, ReviewAttempt
from tutor.chat.services import TUTOR_UNAVAILABLE_MESSAGE
from tutor.models import ModelCall, TutorMessage

DEAD_BASE_URL = "http://127.0.0.1:1/v1"
TRANSPORT_WORDS = ("errno", "refused", "127.0.0.1", "http://", ":1/", "connect", "traceback")
EVIDENCE = {
    "report": "first() returns undefined for an empty array.",
    "ci": {"status": "failed", "exit_code": 1, "log_tail": "1 failing"},
}


@pytest.fixture
def dead_model(settings):
    settings.TUTOR_LLM_BASE_URL = DEAD_BASE_URL
    settings.TUTOR_LLM_MODEL = "dead-model"
    settings.TUTOR_LLM_RETRIES = 1
    settings.TUTOR_LLM_BACKOFF = 0
    settings.TUTOR_LLM_TIMEOUT = 2
    settings.REDIS_URL = None
    return settings


def assert_no_transport_text(text: str) -> None:
    lowered = text.lower()
    for word in TRANSPORT_WORDS:
        assert word not in lowered, (word, text)


def submit(client, task, capture) -> dict:
    with capture(execute=True):
        response = client.post("/api/submissions/", {"task": task.pk, "evidence": EVIDENCE}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


@pytest.mark.django_db
def test_the_tutor_answers_a_plain_503_and_keeps_the_message(
    task, student, student_client, dead_model, caplog
):
    session = student_client.post("/api/tutor/sessions/", {"task": task.pk}, format="json").json()

    with caplog.at_level(logging.WARNING):
        response = student_client.post(
            f"/api/tutor/sessions/{session['id']}/messages/", {"content": "why is A1 failing?"}, format="json"
        )

    assert response.status_code == 503
    assert response.json() == {
        "type": "server_error",
        "errors": [{"code": "model_unavailable", "detail": TUTOR_UNAVAILABLE_MESSAGE, "attr": None}],
    }
    assert_no_transport_text(response.content.decode())
    assert list(TutorMessage.objects.values_list("role", "content")) == [("user", "why is A1 failing?")]
    # The detail is for staff and operators: every try is a row, and the log says why.
    calls = list(ModelCall.objects.values_list("status", "error"))
    assert [status for status, _ in calls] == [ModelCall.Status.CONNECTION_ERROR] * 2
    assert all("refused" in error.lower() for _, error in calls)
    assert any("refused" in r.getMessage().lower() for r in caplog.records)
    # ... and never the student's message.
    assert all("why is A1 failing" not in r.getMessage() for r in caplog.records)


@pytest.mark.django_db
def test_an_unavailable_review_keeps_its_machine_checks_and_stays_unavailable(
    task, student, student_client, dead_model, django_capture_on_commit_callbacks
):
    body = submit(student_client, task, django_capture_on_commit_callbacks)

    attempt = student_client.get(f"/api/review-attempts/{body['attempts'][0]['id']}/").json()

    assert (attempt["status"], attempt["error_code"]) == ("unavailable", "REVIEW_UNAVAILABLE")
    assert attempt["result"] == {
        "overall": None,
        "criteria": [
            {
                "rubric_id": "A1",
                "criterion": "CI passes",
                "kind": "acceptance",
                "status": "FAIL",
                "reason": "CI failed with exit code 1",
                "evidence": "1 failing",
                "basis": "self_report",
            },
            {
                "rubric_id": "A2",
                "criterion": "Report names first and undefined",
                "kind": "acceptance",
                "status": "PASS",
                "reason": "the report mentions first, undefined",
                "evidence": "first, undefined",
                "basis": "check",
            },
        ],
        "next_step": "",
    }
    assert_no_transport_text(str(attempt))
    # The feedback state stays unavailable: no item, no verdict, no step reaches the tutor.
    preview = student_client.get("/api/tutor/context/", {"task": task.pk}).json()
    feedback = preview["feedback"]
    assert (feedback["state"], feedback["review_status"], feedback["items"], feedback["next_step"]) == (
        "unavailable",
        None,
        [],
        None,
    )
    assert "CI failed with exit code 1" not in preview["messages"][0]["content"]


@pytest.mark.django_db
def test_the_cache_never_reuses_an_unavailable_attempt(
    task, student, student_client, dead_model, django_capture_on_commit_callbacks
):
    first = submit(student_client, task, django_capture_on_commit_callbacks)
    calls = ModelCall.objects.count()

    second = submit(student_client, task, django_capture_on_commit_callbacks)

    [attempt] = student_client.get(f"/api/submissions/{second['id']}/").json()["attempts"]
    assert first["snapshot_hash"] == second["snapshot_hash"]
    assert attempt["reused_from"] is None
    assert attempt["status"] == "unavailable"
    assert ModelCall.objects.count() > calls  # reviewed again, not taken from the cache
    assert (
        ReviewAttempt.objects.filter(
            status=AttemptStatus.UNAVAILABLE, error_code=ErrorCode.REVIEW_UNAVAILABLE
        ).count()
        == 2
    )


@pytest.mark.django_db
def test_healthz_reports_the_model_down_without_a_503(task, student_client, dead_model):
    session = student_client.post("/api/tutor/sessions/", {"task": task.pk}, format="json").json()
    student_client.post(f"/api/tutor/sessions/{session['id']}/messages/", {"content": "hello"}, format="json")
    calls = ModelCall.objects.count()

    response = APIClient().get("/healthz")

    assert response.status_code == 200
    assert response.json() == {
        "status": "degraded",
        "checks": {"database": "ok", "broker": "not_configured", "worker": "not_configured", "model": "down"},
    }
    assert ModelCall.objects.count() == calls  # read from the rows: no probe request


@pytest.mark.django_db
def test_healthz_reports_the_model_ok_again_after_a_good_call(task, student_client, fake_llm, settings):
    settings.REDIS_URL = None
    fake_llm.reply(httpx.ConnectError("refused"), "fine")
    session = student_client.post("/api/tutor/sessions/", {"task": task.pk}, format="json").json()

    response = student_client.post(
        f"/api/tutor/sessions/{session['id']}/messages/", {"content": "hello"}, format="json"
    )

    assert response.status_code == 201  # the retry succeeded
    health = APIClient().get("/healthz").json()
    assert health["checks"]["model"] == "ok"
    assert health["status"] == "ok"


@pytest.mark.django_db
def test_healthz_model_is_ok_before_any_call_and_not_configured_offline(settings, db):
    settings.REDIS_URL = None
    settings.TUTOR_LLM_BASE_URL = DEAD_BASE_URL
    assert APIClient().get("/healthz").json()["checks"]["model"] == "ok"

    settings.TUTOR_LLM_BASE_URL = None
    assert APIClient().get("/healthz").json()["checks"]["model"] == "not_configured"
