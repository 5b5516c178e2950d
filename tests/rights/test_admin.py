"""Erasure from the admin (SPEC §13): course staff erase a student's data of
their own course after seeing the plan; only superusers erase a person
entirely; every erasure is audited."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.admin.helpers import ACTION_CHECKBOX_NAME
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from tests.factories import enroll, make_course, make_user
from tutor.models import AuditEvent, Enrollment

pytestmark = pytest.mark.django_db
CHANGELIST = reverse("admin:tutor_enrollment_changelist")


@pytest.fixture
def teacher_client(course):
    call_command(
        "enroll", course.slug, "teacher", "--staff", "--create", stdout=StringIO(), stderr=StringIO()
    )
    client = Client()
    client.force_login(get_user_model().objects.get(username="teacher"))
    return client


def act(client, action: str, enrollments, *, apply: bool):
    data = {"action": action, ACTION_CHECKBOX_NAME: [e.pk for e in enrollments]}
    if apply:
        data["apply"] = "yes"
    return client.post(CHANGELIST, data, follow=apply)


def test_course_staff_see_the_plan_then_erase_a_students_course_data(course, student, teacher_client):
    other = make_course("se-202")
    enroll(other, "alice")
    enrollment = Enrollment.objects.get(user=student, course=course)

    plan = act(teacher_client, "erase_course_data", [enrollment], apply=False)

    assert plan.status_code == 200 and b"tutor.Enrollment" in plan.content
    assert Enrollment.objects.filter(pk=enrollment.pk).exists()  # nothing yet

    done = act(teacher_client, "erase_course_data", [enrollment], apply=True)

    assert b"the residue check found nothing" in done.content
    assert not Enrollment.objects.filter(pk=enrollment.pk).exists()
    assert Enrollment.objects.filter(user=student, course=other).exists()  # the other course stays
    event = AuditEvent.objects.get(event="student_erased")
    assert (event.actor.username, event.course_id, event.extra["whole"]) == ("teacher", course.pk, False)


def test_course_staff_cannot_erase_a_person_entirely_nor_another_courses_student(
    course, student, teacher_client
):
    other = make_course("se-202")
    stranger = Enrollment.objects.get(user=enroll(other, "zoe"), course=other)
    mine = Enrollment.objects.get(user=student, course=course)

    whole = act(teacher_client, "erase_person", [mine], apply=True)
    foreign = act(teacher_client, "erase_course_data", [stranger], apply=True)

    assert whole.status_code == 200 and foreign.status_code == 200
    assert get_user_model().objects.filter(username="alice").exists()
    assert Enrollment.objects.filter(pk=stranger.pk).exists()
    assert not AuditEvent.objects.filter(event="student_erased").exists()


def test_a_superuser_erases_a_person_entirely(course, student):
    client = Client()
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    enrollment = Enrollment.objects.get(user=student, course=course)

    done = act(client, "erase_person", [enrollment], apply=True)

    assert b"erased entirely as erased-" in done.content
    assert not get_user_model().objects.filter(username="alice").exists()


@pytest.mark.parametrize("selected", ["x", "1\x00", "99999999999999999999999"])
@pytest.mark.parametrize(
    ("changelist", "action"),
    [
        (CHANGELIST, "erase_person"),
        (CHANGELIST, "delete_selected"),
        (reverse("admin:feedback_reviewattempt_changelist"), "force_rereview"),
        (reverse("admin:lessons_lesson_changelist"), "approve"),
        (reverse("admin:lessons_skillcandidate_changelist"), "accept"),
    ],
    ids=["erase", "delete", "a queue's action", "a lesson decision", "a skill candidate's"],
)
def test_an_action_on_ids_no_row_can_have_changes_nothing_and_is_no_server_error(
    course, student, changelist, action, selected
):
    client = Client(raise_request_exception=False)
    client.force_login(make_user("root", is_staff=True, is_superuser=True))

    for apply in (False, True):
        data = {"action": action, ACTION_CHECKBOX_NAME: [selected], "index": "0"}
        if apply:
            data["apply"] = "yes"
        response = client.post(changelist, data, follow=True)
        assert response.status_code == 200
        assert "not an item of this list" in response.content.decode()

    assert get_user_model().objects.filter(username="alice").exists()
    assert not AuditEvent.objects.filter(event="student_erased").exists()
