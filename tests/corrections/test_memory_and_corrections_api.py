"""``/api/memory/`` and ``/api/corrections/`` (SPEC §5, §7): own items only,
shapes, forgetting, read-only system items, explicit detection, bad input."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from corrections.models import Correction, Fact, MemoryItem
from tests.corrections.conftest import RAINFALL_500, RAINFALL_QUESTION
from tests.factories import client_for, enroll, make_course
from tutor.models import Enrollment


@pytest.fixture
def remembered(student, chat_for):
    """alice: a preference (user), negative feedback (session), a system fact she stated."""
    chat = chat_for(student)
    chat.send("我希望回答简短一些")
    chat.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    chat.send("这不行")
    chat.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    chat.send("不对，北京年均降雨量是 630mm 左右")
    return chat


@pytest.mark.django_db
def test_memory_lists_every_tier_that_concerns_the_caller(remembered, student_client):
    response = student_client.get("/api/memory/")

    assert response.status_code == 200
    items = response.json()["results"]
    # The factual correction: the author's user memory and, read-only, the proposed fact.
    assert [(i["tier"], i["kind"]) for i in items] == [
        ("user", "fact"),
        ("system", "fact"),
        ("session", "negative"),
        ("user", "preference"),
    ]
    assert all(set(i) == {"id", "tier", "kind", "content", "created_at", "expires_at"} for i in items)
    assert items[0]["content"] == items[1]["content"] == "北京年均降雨量是 630mm 左右"
    assert items[2]["expires_at"] is not None and items[3]["expires_at"] is None
    assert response.json()["count"] == 4


@pytest.mark.django_db
def test_forgetting_a_memory_item_removes_it_from_the_next_request(remembered, student_client):
    preference = MemoryItem.objects.get(kind="preference")

    assert student_client.delete(f"/api/memory/{preference.pk}/").status_code == 204

    assert not MemoryItem.objects.filter(pk=preference.pk).exists()
    remembered.send("what now?")
    assert "我希望回答简短一些" not in remembered.last_system
    assert Correction.objects.filter(type="preference").exists()  # the record stays


@pytest.mark.django_db
def test_a_system_item_is_read_only(remembered, student_client):
    fact = Fact.objects.get()

    response = student_client.delete(f"/api/memory/{fact.pk}/")

    assert response.status_code == 403
    assert Fact.objects.filter(pk=fact.pk).exists()


@pytest.mark.django_db
def test_another_users_items_are_404_and_not_listed(remembered, other_student):
    other = client_for(other_student)
    item = MemoryItem.objects.get(kind="preference")
    fact = Fact.objects.get()

    assert other.get("/api/memory/").json()["results"] == []
    assert other.delete(f"/api/memory/{item.pk}/").status_code == 404
    assert other.delete(f"/api/memory/{fact.pk}/").status_code == 404  # not hers: 404, not 403
    assert other.delete("/api/memory/not-a-uuid/").status_code == 404
    assert MemoryItem.objects.filter(pk=item.pk).exists()
    assert APIClient().get("/api/memory/").status_code == 401


@pytest.mark.django_db
def test_corrections_list_shows_own_corrections_and_where_they_went(
    remembered, student_client, other_student
):
    response = student_client.get("/api/corrections/")

    assert response.status_code == 200
    rows = response.json()["results"]
    assert [r["type"] for r in rows] == ["factual", "negative", "preference"]
    factual = rows[0]
    assert set(factual) >= {
        "id",
        "message",
        "type",
        "confidence",
        "topic",
        "original_statement",
        "corrected_statement",
        "tiers",
        "case",
        "created_at",
    }
    assert (factual["tiers"], factual["confidence"], factual["topic"]) == (
        ["system", "user", "case"],
        0.9,
        "北京 年均 降雨量",
    )
    assert factual["message"] is not None and factual["case"] is not None  # the proposal waits for staff
    assert client_for(other_student).get("/api/corrections/").json()["results"] == []
    assert len(student_client.get("/api/corrections/", {"type": "preference"}).json()["results"]) == 1
    assert student_client.get("/api/corrections/", {"type": "nonsense"}).status_code == 400


@pytest.mark.django_db
def test_staff_see_their_courses_corrections_only(remembered, staff_client):
    assert len(staff_client.get("/api/corrections/").json()["results"]) == 3
    outsider = client_for(enroll(make_course("elsewhere"), "outsider", Enrollment.Role.STAFF))
    assert outsider.get("/api/corrections/").json()["results"] == []
    correction = Correction.objects.first()
    assert outsider.get(f"/api/corrections/{correction.pk}/").status_code == 404


@pytest.mark.django_db
def test_explicit_detection_with_a_session_refers_to_its_assistant_message(student, student_client, chat_for):
    chat = chat_for(student)
    chat.send(RAINFALL_QUESTION, reply=RAINFALL_500)

    response = student_client.post(
        "/api/corrections/", {"content": "实际上是 630mm", "session": chat.session_id}, format="json"
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert (body["detected"], body["created"]) == (True, True)
    correction = body["correction"]
    assert correction["original_statement"] == "北京年均降雨量约为 500mm"
    assert correction["corrected_statement"] == "北京年均降雨量约为 630mm"
    assert (correction["tiers"], correction["message"], correction["session"]) == (
        ["system", "user", "case"],
        None,
        chat.session_id,
    )
    assert Fact.objects.get().statement == "北京年均降雨量约为 630mm"
    # The same words again count once.
    again = student_client.post(
        "/api/corrections/", {"content": "实际上是 630mm", "session": chat.session_id}, format="json"
    )
    assert again.status_code == 200
    assert again.json()["correction"]["id"] == correction["id"] and again.json()["created"] is False


@pytest.mark.django_db
def test_explicit_detection_without_a_session_takes_its_topic_from_its_own_words(student, student_client):
    response = student_client.post(
        "/api/corrections/", {"content": "不对，北京年均降雨量是 630mm"}, format="json"
    )

    assert response.status_code == 201
    correction = response.json()["correction"]
    assert (correction["topic"], correction["original_statement"]) == ("北京 年均 降雨量", "")


@pytest.mark.django_db
def test_explicit_detection_counts_only_the_redactions_it_made(student, student_client):
    typed = "I prefer answers that show [REDACTED:email] as is; my key is sk-proj-abcdefghijklmnopqrstuvwx"
    response = student_client.post("/api/corrections/", {"content": typed}, format="json")

    assert response.status_code == 201
    stored = Correction.objects.get(user=student)
    assert stored.redactions == 1 and "sk-proj" not in stored.content


@pytest.mark.django_db
def test_explicit_detection_of_no_correction_writes_nothing(student_client):
    response = student_client.post(
        "/api/corrections/", {"content": "北京的年均降雨量大概是多少？"}, format="json"
    )

    assert response.status_code == 200
    assert response.json() == {"detected": False, "created": False, "correction": None}
    assert not Correction.objects.exists() and not MemoryItem.objects.exists()


@pytest.mark.django_db
def test_explicit_detection_in_another_students_session_is_refused(other_student, student_client, chat_for):
    foreign = chat_for(other_student)

    response = student_client.post(
        "/api/corrections/", {"content": "我希望回答简短一些", "session": foreign.session_id}, format="json"
    )

    assert response.status_code == 400
    assert response.json()["errors"][0]["attr"] == "session"
    assert not Correction.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "content"),
        ({"content": ""}, "content"),
        ({"content": "x" * 8001}, "content"),
        ({"content": "  \n "}, "content"),
        ({"content": "\u200b\u00a0"}, "content"),
        ({"content": "I prefer tables", "session": "nope"}, "session"),
        ({"content": "I prefer tables", "course": "00000000-0000-0000-0000-000000000000"}, "course"),
    ],
)
def test_explicit_detection_bad_input_is_400_on_the_field(student_client, body, field):
    response = student_client.post("/api/corrections/", body, format="json")

    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["attr"] == field
    assert not Correction.objects.exists()


@pytest.mark.django_db
def test_explicit_detection_needs_a_course_when_the_caller_is_in_several(student, student_client):
    other = make_course("second-course")
    enroll(other, student.username)

    response = student_client.post("/api/corrections/", {"content": "I prefer tables"}, format="json")
    assert response.status_code == 400 and response.json()["errors"][0]["attr"] == "course"
    response = student_client.post(
        "/api/corrections/", {"content": "I prefer tables", "course": str(other.pk)}, format="json"
    )
    assert response.status_code == 201
    assert Correction.objects.get().course_id == other.pk


@pytest.mark.django_db
def test_explicit_detection_over_the_rate_limit_is_429(student_client, settings):
    settings.CORRECTIONS_RATE_LIMIT = "2/minute"
    for text in ("I prefer tables", "I prefer lists"):
        assert student_client.post("/api/corrections/", {"content": text}, format="json").status_code == 201

    response = student_client.post("/api/corrections/", {"content": "I prefer graphs"}, format="json")

    assert response.status_code == 429
    assert response.json()["errors"][0]["code"] == "throttled"
    assert Correction.objects.count() == 2


@pytest.mark.django_db
def test_a_session_scoped_correction_without_a_session_is_recorded_with_no_tier(student_client):
    response = student_client.post("/api/corrections/", {"content": "不对"}, format="json")

    assert response.status_code == 201
    assert response.json()["correction"]["type"] == "negative"
    assert response.json()["correction"]["tiers"] == []
    assert not MemoryItem.objects.exists()


@pytest.mark.django_db
def test_the_schema_documents_the_corrections_endpoints_and_shapes(db):
    import json

    schema = json.loads(APIClient().get("/api/schema/", {"format": "json"}).content)
    paths = schema["paths"]
    for path in (
        "/api/memory/",
        "/api/memory/{id}/",
        "/api/corrections/",
        "/api/correction-cases/",
        "/api/correction-cases/{id}/accept/",
        "/api/correction-cases/{id}/claim/",
        "/api/correction-cases/{id}/reject/",
        "/api/correction-cases/{id}/dispute/",
    ):
        assert path in paths, path
    components = schema["components"]["schemas"]
    assert set(components["MemoryItem"]["properties"]) == {
        "id",
        "tier",
        "kind",
        "content",
        "created_at",
        "expires_at",
    }
    assert {"statement", "supporters", "corrections"} <= set(components["Proposal"]["properties"])
    assert {"429", "201", "200"} <= set(paths["/api/corrections/"]["post"]["responses"])
    assert "409" in paths["/api/correction-cases/{id}/accept/"]["post"]["responses"]
    assert "403" in paths["/api/memory/{id}/"]["delete"]["responses"]
