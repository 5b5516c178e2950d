"""Public ids in paths (SPEC §7): a UUID is a UUID in either case (its hex
digits are case-insensitive on input), and anything else is the JSON 404."""

from __future__ import annotations

import pytest

from tutor.models import TutorMessage

SESSIONS = "/api/tutor/sessions/"


@pytest.fixture
def session_id(task, student_client) -> str:
    response = student_client.post(SESSIONS, {"task": task.pk}, format="json")
    assert response.status_code == 201, response.content
    return response.json()["id"]


@pytest.mark.django_db
def test_a_detail_path_answers_the_same_for_an_upper_case_id(task, course, student_client):
    for collection, pk in (("tasks", task.pk), ("courses", course.pk)):
        lower = student_client.get(f"/api/{collection}/{pk}/")
        upper = student_client.get(f"/api/{collection}/{str(pk).upper()}/")

        assert lower.status_code == 200
        assert (upper.status_code, upper.json()) == (200, lower.json())


@pytest.mark.django_db
def test_a_message_to_an_upper_case_session_id_is_stored_in_that_session(
    session_id, student_client, fake_llm
):
    fake_llm.reply("hi there")

    response = student_client.post(
        f"{SESSIONS}{session_id.upper()}/messages/", {"content": "hello"}, format="json"
    )

    assert response.status_code == 201, response.content
    stored = TutorMessage.objects.filter(session_id=session_id).values_list("role", "content")
    assert list(stored.order_by("position")) == [("user", "hello"), ("assistant", "hi there")]
    history = student_client.get(f"{SESSIONS}{session_id.upper()}/messages/")
    assert [m["content"] for m in history.json()["results"]] == ["hello", "hi there"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "bad",
    [
        "not-a-uuid",
        "1",
        "{}0000000-0000-0000-0000-000000000000",  # a UUID with one character too many
        "0000000000000000000000000000000",  # hex without hyphens, one digit short
        "0000000g-0000-0000-0000-000000000000",
    ],
)
def test_anything_else_is_the_json_404(session_id, student_client, bad):
    bad = bad.format(session_id[0])
    for path in (f"/api/tasks/{bad}/", f"{SESSIONS}{bad}/messages/"):
        response = student_client.get(path)

        assert response.status_code == 404, path
        assert response.json()["errors"][0]["code"] == "not_found"
