"""The lessons API (SPEC §6, §7): manual entry, lists and their filters, the
recall preview, skill candidates, shapes in the OpenAPI schema."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from lessons.models import Lesson, LessonStatus, SkillCandidate
from tests.lessons.conftest import errors, make_lesson
from tutor.models import AuditEvent

LESSON_FIELDS = {
    "id",
    "title",
    "body",
    "tags",
    "symptoms",
    "status",
    "kind",
    "course",
    "hit_count",
    "last_hit",
    "review_by",
    "tokens",
    "helpful",
    "harmful",
    "redactions",
    "created_at",
}


def create(client, **body):
    data = {"course": "se-101", "title": "Check empty arrays", "body": "first([]) is undefined.", **body}
    return client.post("/api/lessons/", data, format="json")


# --- manual entry ------------------------------------------------------------------------


@pytest.mark.django_db
def test_staff_enter_a_pending_lesson_with_the_course_as_slug_or_id(course, staff, staff_client):
    by_slug = create(staff_client, tags=["Arrays", "arrays", "edge cases"], symptoms=["returns undefined"])
    by_id = create(staff_client, course=str(course.pk), title="Another")

    assert by_slug.status_code == 201, by_slug.content
    body = by_slug.json()
    assert set(body) >= LESSON_FIELDS
    assert (body["status"], body["kind"], body["course"], body["course_slug"]) == (
        "pending",
        "note",
        str(course.pk),
        "se-101",
    )
    assert body["tags"] == ["Arrays", "edge cases"]  # the same tag twice (any case) once
    assert body["tokens"] > 0 and body["redactions"] == 0
    assert by_id.status_code == 201 and by_id.json()["course"] == str(course.pk)
    event = AuditEvent.objects.get(target_id=body["id"])
    assert (event.event, event.actor, event.to_state) == ("lesson_created", staff, "pending")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"course": "nope"}, "course"),
        ({"title": ""}, "title"),
        ({"body": "x" * 4001}, "body"),
        ({"symptoms": ["!!!"]}, "symptoms.0"),
        ({"tags": ["   "]}, "tags.0"),
        # Text that shows nothing is empty, as in messages and corrections.
        ({"tags": ["\u200b"]}, "tags.0"),
        ({"tags": ["ok", "\u2060\u200d"]}, "tags.1"),
        ({"symptoms": ["\u200b"]}, "symptoms.0"),
        ({"title": "\u200b\u200b"}, "title"),
        ({"kind": "essay"}, "kind"),
        ({"review_by": "2001-01-01"}, "review_by"),
        ({"tags": "arrays"}, "tags"),
    ],
)
def test_bad_manual_entries_are_400_on_the_field_and_store_nothing(staff_client, course, body, field):
    response = create(staff_client, **body)

    assert response.status_code == 400, response.content
    assert field in errors(response)
    assert Lesson.objects.count() == 0


@pytest.mark.django_db
def test_staff_cannot_enter_a_lesson_for_another_course_or_a_global_one(staff_client, other_course):
    assert create(staff_client, course="other-101").status_code == 403
    assert create(staff_client, course=None).status_code == 403
    assert Lesson.objects.count() == 0


@pytest.mark.django_db
def test_a_superuser_enters_a_global_lesson(superuser_client):
    response = create(superuser_client, course=None)

    assert response.status_code == 201
    assert response.json()["course"] is None and response.json()["course_slug"] is None


# --- lists ---------------------------------------------------------------------------------


@pytest.mark.django_db
def test_staff_list_their_courses_and_global_lessons_filtered(course, other_course, staff_client):
    pending = make_lesson(course=course, status=LessonStatus.PENDING)
    injected = make_lesson(course=course)
    global_ = make_lesson(course=None)
    make_lesson(course=other_course)
    expired = make_lesson(course=course, review_by=timezone.localdate() - timedelta(days=1))

    def ids(**params):
        response = staff_client.get("/api/lessons/", params)
        assert response.status_code == 200, response.content
        return {item["id"] for item in response.json()["results"]}

    assert ids() == {str(x.pk) for x in (pending, injected, global_, expired)}
    assert ids(status="pending") == {str(pending.pk)}
    assert ids(course="se-101") == {str(x.pk) for x in (pending, injected, expired)}
    assert ids(course=str(course.pk), review_due="true") == {str(expired.pk)}
    assert staff_client.get("/api/lessons/", {"status": "bogus"}).status_code == 400
    assert staff_client.get("/api/lessons/", {"course": "nope"}).status_code == 400


@pytest.mark.django_db
def test_the_lesson_shape_shows_redactions_and_source(course, staff_client):
    lesson = make_lesson(course=course, body="token=abcdef1234567890 and mail bob@example.org")

    body = staff_client.get(f"/api/lessons/{lesson.pk}/").json()

    assert body["redactions"] == 2
    assert body["redaction_kinds"] == {"password": 1, "email": 1}
    assert "abcdef1234567890" not in body["body"] and "[REDACTED:email]" in body["body"]
    assert body["source"] == "manual"


@pytest.mark.django_db
def test_skill_candidates_list_shape_and_scope(course, other_course, staff_client):
    mine = make_lesson(course=course, title="mine", hit_count=3)
    theirs = make_lesson(course=other_course, hit_count=3)
    candidate = SkillCandidate.objects.create(lesson=mine, hit_count=3)
    SkillCandidate.objects.create(lesson=theirs, hit_count=3)

    body = staff_client.get("/api/lessons/skill-candidates/").json()

    assert body["results"] == [
        {
            "id": str(candidate.pk),
            "lesson": {"id": str(mine.pk), "title": "mine"},
            "hit_count": 3,
            "status": "open",
            "created_at": candidate.created_at.isoformat().replace("+00:00", "Z"),
        }
    ]
    assert staff_client.get("/api/lessons/skill-candidates/", {"status": "accepted"}).json()["results"] == []


# --- the recall preview --------------------------------------------------------------------


@pytest.mark.django_db
def test_recall_preview_returns_the_recalled_lessons_and_the_full_trace_without_side_effects(
    course, staff_client
):
    best = make_lesson(
        course=course, title="best", tags=["adaptor", "parsing"], symptoms=["escape"], tokens=300
    )
    second = make_lesson(course=course, title="second", tags=["adaptor"], symptoms=["escape"], tokens=300)
    too_big = make_lesson(course=course, title="too big", tags=["adaptor", "parsing"], tokens=600)
    draft = make_lesson(
        course=course, title="draft", tags=["adaptor", "parsing"], status=LessonStatus.PENDING
    )
    unrelated = make_lesson(course=course, title="unrelated", tags=["css"])

    response = staff_client.get(
        "/api/lessons/recall/", {"tags": "adaptor, parsing", "symptoms": "Escape", "course": "se-101"}
    )

    assert response.status_code == 200, response.content
    body = response.json()
    assert [item["id"] for item in body["recalled"]] == [str(best.pk), str(second.pk)]
    assert body["recalled"][0] == {
        "id": str(best.pk),
        "title": "best",
        "score": 1.0,
        "components": {"tag": 1.0, "symptom": 1.0, "decay": 1.0},
        "tokens": 300,
    }
    assert (body["used_tokens"], body["budget_tokens"]) == (600, 800)
    assert [(line["lesson"], line["decision"]) for line in body["trace"]] == [
        (str(draft.pk), "filtered_status"),
        (str(best.pk), "recalled"),  # 0.5 + 0.3 + 0.2
        (str(second.pk), "recalled"),  # 0.25 + 0.3 + 0.2
        (str(too_big.pk), "budget"),  # 0.5 + 0.2, but 600 + 600 > 800
        (str(unrelated.pk), "floor"),  # 0.2: no shared tag or symptom, listed all the same
    ]
    assert body["trace_counts"]["floor"] == 1 and body["trace_omitted"] == {}
    assert body["context"]["tags"] == ["adaptor", "parsing"] and body["context"]["symptoms"] == ["escape"]
    best.refresh_from_db()
    assert (best.hit_count, best.last_hit) == (0, None)


@pytest.mark.django_db
def test_recall_preview_queries_do_not_grow_with_the_library(course, staff_client, django_assert_num_queries):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from tests.lessons.conftest import bulk_lessons

    params = {"tags": "adaptor", "symptoms": "escape", "course": "se-101"}
    bulk_lessons(course, 1, tags=["adaptor"], symptoms=["escape"])
    bulk_lessons(course, 1)
    with CaptureQueriesContext(connection) as few:
        assert len(staff_client.get("/api/lessons/recall/", params).json()["recalled"]) == 1

    bulk_lessons(course, 2000, tags=["adaptor"], symptoms=["escape"])  # all candidates
    bulk_lessons(course, 2000)  # counted, never loaded
    with django_assert_num_queries(len(few)):
        body = staff_client.get("/api/lessons/recall/", params).json()

    assert len(body["recalled"]) == 3 and sum(body["trace_counts"].values()) == 4002


@pytest.mark.django_db
def test_recall_preview_defaults_to_the_callers_courses(course, other_course, staff_client):
    mine = make_lesson(course=course, tags=["a"])
    make_lesson(course=other_course, tags=["a"])

    body = staff_client.get("/api/lessons/recall/", {"tags": "a"}).json()

    assert [item["id"] for item in body["recalled"]] == [str(mine.pk)]
    assert sum(body["trace_counts"].values()) == 1


@pytest.mark.django_db
def test_recall_preview_refuses_a_course_the_caller_is_not_staff_of(staff_client, other_course):
    response = staff_client.get("/api/lessons/recall/", {"tags": "a", "course": "other-101"})

    assert response.status_code == 400 and "course" in errors(response)


@pytest.mark.django_db
def test_recall_preview_with_empty_lists_recalls_nothing(course, staff_client):
    lesson = make_lesson(course=course, tags=["a"])

    body = staff_client.get("/api/lessons/recall/").json()

    assert body["recalled"] == [] and body["trace_counts"]["floor"] == 1
    assert [(line["lesson"], line["decision"], line["score"]) for line in body["trace"]] == [
        (str(lesson.pk), "floor", 0.2)  # its decay part alone
    ]


# --- the schema --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_every_lessons_endpoint_is_in_the_schema_with_its_shapes():
    import json

    from rest_framework.test import APIClient

    schema = json.loads(APIClient().get("/api/schema/", {"format": "json"}).content)
    paths = schema["paths"]
    for path in (
        "/api/lessons/",
        "/api/lessons/{id}/",
        "/api/lessons/{id}/approve/",
        "/api/lessons/{id}/reject/",
        "/api/lessons/{id}/inject/",
        "/api/lessons/{id}/quarantine/",
        "/api/lessons/{id}/retire/",
        "/api/lessons/recall/",
        "/api/lessons/deltas/",
        "/api/lessons/skill-candidates/",
        "/api/lessons/traces/",
        "/api/lessons/traces/{id}/",
    ):
        assert path in paths, path
    components = schema["components"]["schemas"]
    assert set(components["Lesson"]["properties"]) >= LESSON_FIELDS
    assert set(components["RecallResponse"]["properties"]) >= {
        "recalled",
        "used_tokens",
        "budget_tokens",
        "trace",
    }
    assert set(components["SkillCandidate"]["properties"]) == {
        "id",
        "lesson",
        "hit_count",
        "status",
        "created_at",
    }
    assert "409" in paths["/api/lessons/{id}/approve/"]["post"]["responses"]
