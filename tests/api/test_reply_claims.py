"""A pending tutor reply belongs to one running request (SPEC §4): a second
message meanwhile is a 409; a claim older than the tutor request budget --
its web worker was killed -- is released, by the next message or by the
sweep, so the session never stays 409 for long."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.conf import settings
from django.utils import timezone

from tutor.chat.services import sessions_release_stale
from tutor.management.commands.serve import sweep_once
from tutor.models import TutorMessage, TutorSession


def send(client, session_id, content="hello"):
    return client.post(f"/api/tutor/sessions/{session_id}/messages/", {"content": content}, format="json")


def claim_aged(session_id, seconds: float):
    since = timezone.now() - timedelta(seconds=seconds)
    TutorSession.objects.filter(pk=session_id).update(reply_pending_since=since)
    return since


@pytest.mark.django_db
def test_the_budget_is_the_tutor_requests_worst_case(settings):
    worst_model_call = (settings.TUTOR_LLM_RETRIES + 1) * settings.TUTOR_LLM_TIMEOUT
    assert worst_model_call < settings.TUTOR_REQUEST_BUDGET
    assert settings.TUTOR_REQUEST_BUDGET < settings.WEB_TIMEOUT


@pytest.mark.django_db
def test_a_claim_within_the_budget_is_a_409(student_client, session_id, fake_llm):
    fake_llm.default = "ok"
    since = claim_aged(session_id, settings.TUTOR_REQUEST_BUDGET - 5)

    response = send(student_client, session_id)

    assert response.status_code == 409
    assert TutorSession.objects.get(pk=session_id).reply_pending_since == since
    assert not TutorMessage.objects.exists()


@pytest.mark.django_db
def test_a_claim_older_than_the_budget_is_taken_over_by_the_next_message(
    student_client, session_id, fake_llm
):
    fake_llm.default = "ok"
    claim_aged(session_id, settings.TUTOR_REQUEST_BUDGET + 1)

    response = send(student_client, session_id)

    assert response.status_code == 201, response.content
    assert TutorSession.objects.get(pk=session_id).reply_pending_since is None


@pytest.mark.django_db
def test_the_sweep_releases_stale_claims_only(task, student, other_student, session_id):
    from tests.factories import client_for

    fresh_id = (
        client_for(other_student).post("/api/tutor/sessions/", {"task": task.pk}, format="json").json()["id"]
    )
    claim_aged(session_id, settings.TUTOR_REQUEST_BUDGET + 1)
    fresh = claim_aged(fresh_id, 2)

    assert sessions_release_stale() == 1

    assert TutorSession.objects.get(pk=session_id).reply_pending_since is None
    assert TutorSession.objects.get(pk=fresh_id).reply_pending_since == fresh


@pytest.mark.django_db
def test_the_embedded_sweep_releases_them_too(session_id, monkeypatch):
    # The sweep thread drops stale connections first; here that would be the test's own.
    monkeypatch.setattr("django.db.close_old_connections", lambda: None)
    claim_aged(session_id, settings.TUTOR_REQUEST_BUDGET + 1)

    sweep_once()

    assert TutorSession.objects.get(pk=session_id).reply_pending_since is None


@pytest.mark.django_db
def test_a_request_that_outlived_its_claim_stores_no_reply_and_leaves_the_new_claim(
    student_client, session_id, fake_llm
):
    taken_over = {}

    def slow_model(body):
        # Meanwhile the budget passed and another request took the session.
        taken_over["since"] = claim_aged(session_id, 0)
        return "a late reply"

    fake_llm.default = slow_model

    response = send(student_client, session_id, "first")

    assert response.status_code == 503
    assert list(TutorMessage.objects.values_list("role", "content")) == [("user", "first")]
    assert TutorSession.objects.get(pk=session_id).reply_pending_since == taken_over["since"]
