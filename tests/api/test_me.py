"""GET /api/me/ (SPEC §12): who the caller is and their enrolments."""

from __future__ import annotations

import json

import pytest
from rest_framework.test import APIClient

from tests.factories import client_for, enroll, make_course, make_user
from tutor.models import Enrollment
from tutor.rights.notice import notice_version

ME = "/api/me/"


@pytest.mark.django_db
def test_me_names_the_user_and_each_enrolment_with_its_course_and_role(student, course):
    other = make_course("ai-201")
    enroll(other, student.username, Enrollment.Role.STAFF)
    student.first_name, student.last_name = "Alice", "Liddell"
    student.save(update_fields=["first_name", "last_name"])

    response = client_for(student).get(ME)

    assert response.status_code == 200
    assert response.json() == {
        "username": "alice",
        "display_name": "Alice Liddell",
        "is_staff": True,  # staff of ai-201: admin access
        "ai_notice_version": notice_version(),
        "enrollments": [
            {
                "course": str(other.pk),
                "course_slug": "ai-201",
                "course_title": other.title,
                "role": "staff",
                "ai_notice_required": False,
                "ai_notice_acknowledged": None,
            },
            {
                "course": str(course.pk),
                "course_slug": "se-101",
                "course_title": course.title,
                "role": "student",
                "ai_notice_required": False,
                "ai_notice_acknowledged": None,
            },
        ],
    }


@pytest.mark.django_db
def test_me_without_a_name_shows_the_username_and_without_courses_an_empty_list():
    user = make_user("newcomer")

    body = client_for(user).get(ME).json()

    assert body == {
        "username": "newcomer",
        "display_name": "newcomer",
        "is_staff": False,
        "ai_notice_version": notice_version(),
        "enrollments": [],
    }


@pytest.mark.django_db
def test_me_is_refused_to_anonymous_callers_with_401():
    response = APIClient().get(ME)

    assert response.status_code == 401
    assert response.json()["errors"][0]["code"] == "not_authenticated"


@pytest.mark.django_db
def test_me_refuses_writes_with_405(student_client):
    assert student_client.post(ME, {}, format="json").status_code == 405


@pytest.mark.django_db
@pytest.mark.parametrize("courses", [1, 12])
def test_me_costs_the_same_queries_for_one_course_or_many(django_assert_num_queries, courses):
    user = make_user()
    for _ in range(courses):
        enroll(make_course(), user.username)
    client = client_for(user)

    # the token with its user, then the enrolments with their courses
    with django_assert_num_queries(2):
        response = client.get(ME)

    assert len(response.json()["enrollments"]) == courses


@pytest.mark.django_db
def test_me_is_in_the_schema_with_its_shape():
    schema = json.loads(APIClient().get("/api/schema/", {"format": "json"}).content)

    operation = schema["paths"]["/api/me/"]["get"]
    assert {"200", "401"} <= set(operation["responses"])
    ref = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    me = schema["components"]["schemas"][ref.rsplit("/", 1)[1]]
    fields = {"username", "display_name", "is_staff", "ai_notice_version", "enrollments"}
    assert set(me["properties"]) == fields
    item_ref = me["properties"]["enrollments"]["items"]["$ref"]
    enrollment = schema["components"]["schemas"][item_ref.rsplit("/", 1)[1]]
    assert set(enrollment["properties"]) == {
        "course",
        "course_slug",
        "course_title",
        "role",
        "ai_notice_required",
        "ai_notice_acknowledged",
    }
    assert enrollment["properties"]["course"]["format"] == "uuid"
