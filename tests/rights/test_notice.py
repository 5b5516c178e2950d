"""The AI notice (SPEC §13): what it says (from settings, never a key), the
acknowledgement, and a course that requires it before the first tutor
message -- a 409 ``ai_notice_required`` that costs the turn no query."""

from __future__ import annotations

import pytest

from tests.factories import client_for, enroll, make_course
from tests.tutor.test_context import (
    open_session,
    query_budget,
    send,
    task_context,
    warm_send_snapshots,
)
from tutor.models import NoticeAcknowledgement, RetentionOverride, TutorMessage
from tutor.rights.notice import notice_version

pytestmark = pytest.mark.django_db


def notice_url(course) -> str:
    return f"/api/courses/{course.pk}/ai-notice/"


def require(course) -> None:
    course.ai_notice_required = True
    course.save(update_fields=["ai_notice_required"])


def test_the_notice_names_provider_model_what_is_sent_and_retention_never_the_key(
    settings, course, student_client
):
    settings.TUTOR_LLM_BASE_URL = "https://user:s3cret@llm.school.example:8443/v1"
    settings.TUTOR_LLM_MODEL = "school-model-7b"
    settings.TUTOR_LLM_API_KEY = "sk-very-secret-key"
    settings.RETENTION_MESSAGES_DAYS = 365
    RetentionOverride.objects.create(course=course, kind="messages", days=30)

    response = student_client.get(notice_url(course))

    assert response.status_code == 200, response.content
    body = response.json()
    assert (body["ai_system"], body["provider"], body["model"]) == (
        True,
        "llm.school.example",
        "school-model-7b",
    )
    assert any("messages" in line for line in body["sent"]) and any(
        "evidence" in line for line in body["sent"]
    )
    assert {r["kind"]: r["days"] for r in body["retention"]}["messages"] == 30
    assert (body["required"], body["acknowledged_version"], body["version"]) == (
        False,
        None,
        notice_version(),
    )
    assert "sk-very-secret-key" not in response.content.decode() and "s3cret" not in response.content.decode()


def test_the_offline_tutor_says_nothing_leaves_the_server(settings, course, student_client):
    settings.TUTOR_LLM_BASE_URL = None
    settings.TUTOR_LLM_MODEL = "offline"
    body = student_client.get(notice_url(course)).json()
    assert (body["model_configured"], body["provider"], body["sent"]) == (False, "", [])


def test_a_required_notice_refuses_messages_with_409_until_acknowledged(task, student, student_client):
    require(task.course)
    session = open_session(student_client, task)

    refused = send(student_client, session, "hello", expect=409).json()

    assert refused["errors"][0]["code"] == "ai_notice_required"
    assert str(task.course_id) in refused["errors"][0]["detail"]
    assert not TutorMessage.objects.filter(session_id=session).exists()

    wrong = student_client.post(notice_url(task.course), {"version": "0-old"}, format="json")
    assert wrong.status_code == 400 and wrong.json()["errors"][0]["attr"] == "version"
    ack = student_client.post(notice_url(task.course), {"version": notice_version()}, format="json")
    assert ack.status_code == 201 and ack.json()["version"] == notice_version()
    again = student_client.post(notice_url(task.course), {"version": notice_version()}, format="json")
    assert again.status_code == 201 and again.json()["acknowledged_at"] == ack.json()["acknowledged_at"]

    send(student_client, session, "hello")
    [enrollment] = student_client.get("/api/me/").json()["enrollments"]
    assert (enrollment["ai_notice_required"], enrollment["ai_notice_acknowledged"]) == (
        True,
        notice_version(),
    )


def test_a_new_model_asks_again(settings, task, student, student_client):
    require(task.course)
    session = open_session(student_client, task)
    student_client.post(notice_url(task.course), {"version": notice_version()}, format="json")
    send(student_client, session, "hello")

    settings.TUTOR_LLM_MODEL = "another-model"

    refused = send(student_client, session, "hello again", expect=409).json()
    assert refused["errors"][0]["code"] == "ai_notice_required"


def test_a_course_that_does_not_require_it_takes_messages(task, student, student_client):
    send(student_client, open_session(student_client, task), "hello")


def test_the_notice_of_a_course_the_caller_is_not_in_is_404(course, student_client):
    other = make_course("other-course")
    assert student_client.get(notice_url(other)).status_code == 404
    assert (
        student_client.post(notice_url(other), {"version": notice_version()}, format="json").status_code
        == 404
    )
    assert not NoticeAcknowledgement.objects.exists()


def test_the_check_adds_no_query_to_the_turn(
    task,
    student,
    student_client,
    fake_llm,
    django_assert_num_queries,
    django_capture_on_commit_callbacks,
):
    """The same budget as a course without the requirement (tests/tutor/test_context.py)."""
    require(task.course)
    fake_llm.default = "ok"
    student_client.post(notice_url(task.course), {"version": notice_version()}, format="json")
    session_id = open_session(student_client, task)
    task_context(student_client, task, "what now?")
    warm_send_snapshots(task.course_id)

    with django_assert_num_queries(query_budget("message")), django_capture_on_commit_callbacks(execute=True):
        send(student_client, session_id, "what now?")


def test_staff_of_a_course_read_its_notice_too(course):
    staff = enroll(course, "teacher", "staff")
    assert client_for(staff).get(notice_url(course)).status_code == 200


def test_a_model_set_back_takes_the_acknowledgement_of_its_version(settings, task, student, student_client):
    """Model A acknowledged, then model B, then back to A: the student read A's
    notice and says so again -- the turn goes through (it asked for the latest
    acknowledgement to equal the current version, so A's earlier row, which
    the acknowledgement does not renew, left the student refused for good)."""
    require(task.course)
    session = open_session(student_client, task)
    first, model_a = notice_version(), settings.TUTOR_LLM_MODEL
    student_client.post(notice_url(task.course), {"version": first}, format="json")
    settings.TUTOR_LLM_MODEL = "another-model"
    student_client.post(notice_url(task.course), {"version": notice_version()}, format="json")
    send(student_client, session, "hello under model B")
    settings.TUTOR_LLM_MODEL = model_a

    assert notice_version() == first
    ack = student_client.post(notice_url(task.course), {"version": first}, format="json")
    assert ack.status_code == 201, ack.content

    send(student_client, session, "hello again under model A")
    [enrollment] = student_client.get("/api/me/").json()["enrollments"]
    assert enrollment["ai_notice_acknowledged"] == first
