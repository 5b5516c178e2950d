"""The lesson lifecycle (SPEC §6, §8): every legal and illegal transition
through the API and through admin, the audit trail, who may act, and the
rule that nothing reaches ``injected`` from ``pending`` without a human."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from lessons.models import Lesson, LessonStatus
from lessons.services.lifecycle import IllegalTransition, lesson_approve
from tests.lessons.conftest import errors, make_lesson
from tutor.kernel.errors import PermissionRefused
from tutor.models import AuditEvent

ACTIONS = ["approve", "reject", "inject", "quarantine", "retire"]
# (action, from) -> to: the edges of SPEC §6; every other pair is illegal.
LEGAL = {
    ("approve", "pending"): "approved",
    ("reject", "pending"): "rejected",
    ("inject", "approved"): "injected",
    ("inject", "quarantined"): "injected",
    ("quarantine", "injected"): "quarantined",
    ("retire", "injected"): "retired",
    ("retire", "quarantined"): "retired",
}
MATRIX = [(action, status) for action in ACTIONS for status in LessonStatus.values]
BODIES = {"reject": {"reason": "duplicate"}, "quarantine": {"reason": "students confused"}}


def act(client, lesson, action: str, body=None, **headers):
    body = BODIES.get(action, {}) if body is None else body
    return client.post(f"/api/lessons/{lesson.pk}/{action}/", body, format="json", **headers)


def lesson_events(lesson) -> list[AuditEvent]:
    return list(AuditEvent.objects.filter(target_id=str(lesson.pk)).order_by("id"))


@pytest.mark.django_db
@pytest.mark.parametrize(("action", "status"), MATRIX)
def test_every_transition_through_the_api(course, staff, staff_client, action, status):
    lesson = make_lesson(course=course, status=status, tags=["a"])

    response = act(staff_client, lesson, action, HTTP_X_CORRELATION_ID=f"cid-{action}-{status}")

    lesson.refresh_from_db()
    if (action, status) in LEGAL:
        to = LEGAL[(action, status)]
        assert response.status_code == 200, response.content
        assert response.json()["status"] == to == lesson.status
        [event] = lesson_events(lesson)
        assert (event.event, event.actor, event.from_state, event.to_state) == (
            f"lesson_{to}",
            staff,
            status,
            to,
        )
        assert event.correlation_id == f"cid-{action}-{status}"
        assert event.course_id == course.pk
    else:
        assert response.status_code == 409, response.content
        assert response.json()["errors"][0]["code"] == "conflict"
        assert lesson.status == status
        assert lesson_events(lesson) == []


@pytest.fixture
def admin_staff_client(staff):
    client = Client()
    client.force_login(staff)
    return client


def admin_action(client, action: str, lessons, **extra):
    return client.post(
        reverse("admin:lessons_lesson_changelist") + "?queue=all",
        {"action": action, "_selected_action": [str(lesson.pk) for lesson in lessons], **extra},
        follow=True,
    )


ADMIN_ACTIONS = {
    "approve": ("approve", {}),
    "reject": ("reject_with_reason", {"apply": "1", "reason": "too_specific", "note": ""}),
    "inject": ("inject", {}),
    "quarantine": ("quarantine", {}),
    "retire": ("retire", {}),
}


@pytest.mark.django_db
@pytest.mark.parametrize(("action", "status"), MATRIX)
def test_every_transition_through_admin(course, staff, admin_staff_client, action, status):
    lesson = make_lesson(course=course, status=status)
    name, extra = ADMIN_ACTIONS[action]

    response = admin_action(admin_staff_client, name, [lesson], **extra)

    assert response.status_code == 200
    lesson.refresh_from_db()
    messages = [str(m) for m in response.context["messages"]]
    if (action, status) in LEGAL:
        assert lesson.status == LEGAL[(action, status)]
        [event] = lesson_events(lesson)
        assert (event.actor, event.from_state, event.to_state) == (staff, status, lesson.status)
        assert any(m.endswith(": 1") for m in messages), messages
    else:
        assert lesson.status == status
        assert lesson_events(lesson) == []
        assert any(f"cannot {action} a {status} lesson" in m for m in messages), messages


@pytest.mark.django_db
def test_admin_rejection_asks_for_a_reason_first_and_other_needs_a_note(course, admin_staff_client):
    lesson = make_lesson(course=course, status=LessonStatus.PENDING)

    form = admin_action(admin_staff_client, "reject_with_reason", [lesson])
    missing_note = admin_action(admin_staff_client, "reject_with_reason", [lesson], apply="1", reason="other")
    lesson.refresh_from_db()
    status_after_form = lesson.status
    done = admin_action(
        admin_staff_client, "reject_with_reason", [lesson], apply="1", reason="other", note="wrong course"
    )

    assert "Reject lessons" in form.content.decode() and status_after_form == "pending"
    assert "needs a note" in missing_note.content.decode()
    lesson.refresh_from_db()
    assert (lesson.status, lesson.reject_reason, lesson.reject_note) == ("rejected", "other", "wrong course")
    assert done.status_code == 200


# --- rejection reasons, review dates -----------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "reason"),
        ({"reason": "boring"}, "reason"),
        ({"reason": "other"}, "note"),
        ({"reason": "other", "note": "   "}, "note"),
    ],
)
def test_a_rejection_needs_a_template_reason_and_other_a_note(course, staff_client, body, field):
    lesson = make_lesson(course=course, status=LessonStatus.PENDING)

    response = act(staff_client, lesson, "reject", body)

    assert response.status_code == 400
    assert field in errors(response)
    lesson.refresh_from_db()
    assert lesson.status == "pending"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "reason", ["not_reproducible", "sensitive_data", "infrastructure_noise", "duplicate", "too_specific"]
)
def test_each_template_reason_rejects(course, staff_client, reason):
    lesson = make_lesson(course=course, status=LessonStatus.PENDING)

    response = act(staff_client, lesson, "reject", {"reason": reason})

    assert response.status_code == 200
    assert response.json()["reject_reason"] == reason
    assert AuditEvent.objects.get(target_id=str(lesson.pk)).reason == reason


@pytest.mark.django_db
def test_an_expired_lesson_is_injected_only_with_a_new_review_date(course, staff_client):
    today = timezone.localdate()
    lesson = make_lesson(course=course, status=LessonStatus.APPROVED, review_by=today - timedelta(days=1))

    refused = act(staff_client, lesson, "inject")
    past = act(staff_client, lesson, "inject", {"review_by": (today - timedelta(days=3)).isoformat()})
    done = act(staff_client, lesson, "inject", {"review_by": (today + timedelta(days=30)).isoformat()})

    assert refused.status_code == 409 and "review date" in refused.json()["errors"][0]["detail"]
    assert past.status_code == 400 and "review_by" in errors(past)
    assert done.status_code == 200
    lesson.refresh_from_db()
    assert (lesson.status, lesson.review_by) == ("injected", today + timedelta(days=30))


# --- who may act -----------------------------------------------------------------------------


@pytest.mark.django_db
def test_no_path_from_pending_to_injected_without_a_person(course):
    lesson = make_lesson(course=course, status=LessonStatus.PENDING)

    with pytest.raises(PermissionRefused):
        lesson_approve(lesson=lesson, actor=None)
    lesson.refresh_from_db()
    assert lesson.status == "pending"


@pytest.mark.django_db
def test_a_stale_copy_cannot_transition_twice(course, staff):
    lesson = make_lesson(course=course, status=LessonStatus.PENDING)
    stale = Lesson.objects.get(pk=lesson.pk)

    lesson_approve(lesson=lesson, actor=staff)
    with pytest.raises(IllegalTransition):
        lesson_approve(lesson=stale, actor=staff)
    assert AuditEvent.objects.filter(target_id=str(lesson.pk)).count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("action", ACTIONS)
def test_a_student_token_can_do_none_of_it(course, student_client, action):
    lesson = make_lesson(course=course, status=LessonStatus.PENDING)

    assert act(student_client, lesson, action).status_code == 403
    lesson.refresh_from_db()
    assert lesson.status == "pending"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/api/lessons/"),
        ("post", "/api/lessons/"),
        ("get", "/api/lessons/recall/"),
        ("post", "/api/lessons/deltas/"),
        ("get", "/api/lessons/skill-candidates/"),
        ("get", "/api/lessons/traces/"),
    ],
)
def test_students_are_refused_and_anonymous_callers_unauthenticated(student_client, method, path):
    from rest_framework.test import APIClient

    assert getattr(student_client, method)(path, {}, format="json").status_code == 403
    assert getattr(APIClient(), method)(path, {}, format="json").status_code == 401


@pytest.mark.django_db
def test_a_student_cannot_read_a_lesson(course, student_client):
    lesson = make_lesson(course=course)

    assert student_client.get(f"/api/lessons/{lesson.pk}/").status_code == 403


@pytest.mark.django_db
def test_staff_of_another_course_neither_see_nor_move_a_lesson(course, other_staff_client):
    lesson = make_lesson(course=course, status=LessonStatus.PENDING)

    assert other_staff_client.get(f"/api/lessons/{lesson.pk}/").status_code == 404
    assert act(other_staff_client, lesson, "approve").status_code == 404
    assert other_staff_client.get("/api/lessons/").json()["results"] == []


@pytest.mark.django_db
def test_global_lessons_are_read_by_staff_and_managed_by_superusers(staff_client, superuser_client):
    lesson = make_lesson(course=None, status=LessonStatus.PENDING)

    assert staff_client.get(f"/api/lessons/{lesson.pk}/").status_code == 200
    refused = act(staff_client, lesson, "approve")
    approved = act(superuser_client, lesson, "approve")

    assert refused.status_code == 403 and "superusers" in refused.json()["errors"][0]["detail"]
    assert approved.status_code == 200 and approved.json()["status"] == "approved"


@pytest.mark.django_db
def test_a_service_account_cannot_approve(course, service):
    from tests.factories import client_for

    lesson = make_lesson(course=course, status=LessonStatus.PENDING)

    assert act(client_for(service), lesson, "approve").status_code == 403


@pytest.mark.django_db
def test_a_lesson_id_that_is_not_a_uuid_is_a_404(staff_client):
    assert staff_client.post("/api/lessons/123/approve/", {}, format="json").status_code == 404
    assert staff_client.get("/api/lessons/not-a-uuid/").status_code == 404
