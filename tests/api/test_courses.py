"""Course content endpoints (SPEC §7): shapes, enrolment scoping, bad input."""

import uuid

import pytest
from rest_framework.test import APIClient

from tests.factories import DEFAULT_CRITERIA, client_for, enroll, make_course, make_task, make_user
from tutor.models import Enrollment

TASK_FIELDS = {
    "id",
    "slug",
    "title",
    "course",
    "goal",
    "steps",
    "materials",
    "tags",
    "rubric_version",
    "criteria",
}


@pytest.fixture
def other_course(db):
    return make_course("other-201", tasks=2)


@pytest.fixture
def superuser(db):
    return make_user("root", is_staff=True, is_superuser=True)


def slugs(response) -> list[str]:
    return [row["slug"] for row in response.json()["results"]]


# --- authentication -------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/courses/", "/api/tasks/"])
def test_anonymous_request_is_401_with_token_challenge(db, path):
    response = APIClient().get(path)

    assert response.status_code == 401
    # Token authentication is listed first, so DRF answers 401 with its challenge
    # rather than 403.
    assert response["WWW-Authenticate"] == "Token"
    assert response.json() == {
        "type": "client_error",
        "errors": [
            {
                "code": "not_authenticated",
                "detail": "Authentication credentials were not provided.",
                "attr": None,
            }
        ],
    }


def test_unknown_token_is_401(db):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token " + "0" * 40)

    response = client.get("/api/courses/")

    assert response.status_code == 401
    assert response.json()["errors"][0]["code"] == "authentication_failed"


def test_session_login_also_works(student):
    client = APIClient()
    client.force_login(student)

    assert client.get("/api/courses/").status_code == 200


# --- shapes ---------------------------------------------------------------------


def test_course_list_shape(course, student_client):
    response = student_client.get("/api/courses/")

    assert response.status_code == 200
    assert response.json() == {
        "count": 1,
        "next": None,
        "previous": None,
        "results": [{"id": str(course.pk), "slug": "se-101", "title": "Course se-101"}],
    }


def test_task_list_shape_for_a_course(course, task, student_client):
    response = student_client.get("/api/tasks/", {"course": course.pk})

    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 1
    (row,) = body["results"]
    assert set(row) == TASK_FIELDS
    assert row == {
        "id": str(task.pk),
        "slug": "t1",
        "title": "Task 1",
        "course": str(course.pk),
        "goal": "Goal of task 1",
        "steps": ["Read", "Write", "Check"],
        "materials": "Some materials",
        "tags": ["javascript", "docs"],
        "rubric_version": "2026.1",
        "criteria": [{"check": None, "visibility": "visible", **c} for c in DEFAULT_CRITERIA],
    }


def test_task_retrieve_has_the_same_shape(course, task, student_client):
    listed = student_client.get("/api/tasks/", {"course": course.pk}).json()["results"][0]

    response = student_client.get(f"/api/tasks/{task.pk}/")

    assert response.status_code == 200
    assert response.json() == listed


def test_tasks_are_ordered_by_their_position_in_the_course_file(db):
    course = make_course("se-101", tasks=3)
    client = client_for(enroll(course, "alice"))

    response = client.get("/api/tasks/", {"course_slug": "se-101"})

    assert slugs(response) == ["t1", "t2", "t3"]


def test_task_list_uses_a_constant_number_of_queries(db, django_assert_num_queries):
    course = make_course("se-101", tasks=5)
    client = client_for(enroll(course, "alice"))

    # 1 token + user, 2 count, 3 the page of tasks joined with course and rubric.
    with django_assert_num_queries(3):
        response = client.get("/api/tasks/")

    assert response.json()["count"] == 5


def test_course_list_uses_a_constant_number_of_queries(db, django_assert_num_queries):
    client = client_for(enroll(make_course("a-1"), "alice"))
    for slug in ("b-1", "c-1"):
        enroll(make_course(slug), "alice")

    # 1 token + user, 2 count, 3 the page of courses.
    with django_assert_num_queries(3):
        response = client.get("/api/courses/")

    assert slugs(response) == ["a-1", "b-1", "c-1"]


# --- enrolment scoping ----------------------------------------------------------


def test_student_lists_only_their_courses(course, other_course, student_client):
    response = student_client.get("/api/courses/")

    assert slugs(response) == ["se-101"]


def test_student_cannot_list_another_courses_tasks(course, other_course, student_client):
    filtered = student_client.get("/api/tasks/", {"course": other_course.pk})
    by_slug = student_client.get("/api/tasks/", {"course_slug": other_course.slug})
    unfiltered = student_client.get("/api/tasks/")

    assert filtered.status_code == 200
    assert filtered.json()["results"] == []
    assert by_slug.json()["results"] == []
    assert {row["course"] for row in unfiltered.json()["results"]} == {str(course.pk)}


def test_student_cannot_retrieve_another_courses_task_or_course(course, other_course, student_client):
    foreign_task = make_task(other_course)

    task_response = student_client.get(f"/api/tasks/{foreign_task.pk}/")
    course_response = student_client.get(f"/api/courses/{other_course.pk}/")

    assert task_response.status_code == 404
    assert course_response.status_code == 404
    assert task_response.json()["errors"][0]["code"] == "not_found"


def test_user_without_enrolment_sees_nothing(course):
    client = client_for(make_user("loner"))

    assert client.get("/api/courses/").json()["count"] == 0
    assert client.get("/api/tasks/").json()["count"] == 0


def test_staff_see_their_courses_only(course, other_course, staff_client):
    courses = staff_client.get("/api/courses/")
    tasks = staff_client.get("/api/tasks/")

    assert slugs(courses) == ["se-101"]
    assert {row["course"] for row in tasks.json()["results"]} == {str(course.pk)}


def test_user_enrolled_in_two_courses_sees_both(course, other_course):
    alice = enroll(course, "alice")
    enroll(other_course, "alice", Enrollment.Role.STAFF)

    response = client_for(alice).get("/api/courses/")

    assert slugs(response) == ["other-201", "se-101"]


def test_superuser_sees_every_course(course, other_course, superuser):
    client = client_for(superuser)

    assert slugs(client.get("/api/courses/")) == ["other-201", "se-101"]
    assert client.get("/api/tasks/").json()["count"] == 3


# --- bad input ------------------------------------------------------------------


@pytest.mark.parametrize("value", ["abc", "1", "1.5", "1e400", "9" * 30, "not-a-uuid-at-all"])
def test_course_filter_that_is_no_uuid_is_400_on_the_field(course, student_client, value):
    response = student_client.get("/api/tasks/", {"course": value})

    assert response.status_code == 400
    body = response.json()
    assert body["type"] == "validation_error"
    assert body["errors"] == [{"code": "invalid", "detail": "Enter a valid UUID.", "attr": "course"}]


def test_task_filter_for_a_course_that_does_not_exist_is_empty(course, student_client):
    response = student_client.get("/api/tasks/", {"course": str(uuid.uuid4())})

    assert response.status_code == 200
    assert response.json()["results"] == []


@pytest.mark.parametrize(
    "path", ["/api/tasks/abc/", "/api/tasks/999999/", "/api/courses/abc/", f"/api/tasks/{uuid.uuid4()}/"]
)
def test_malformed_or_unknown_id_is_404(course, student_client, path):
    response = student_client.get(path)

    assert response.status_code == 404
    assert response.json()["errors"][0]["code"] == "not_found"


def test_page_past_the_end_is_404_not_500(course, student_client):
    response = student_client.get("/api/tasks/", {"page": "abc"})

    assert response.status_code == 404
    assert response.json()["type"] == "client_error"


def test_write_methods_are_not_allowed(course, staff_client):
    response = staff_client.post("/api/courses/", {"slug": "x", "title": "X"})

    assert response.status_code == 405
    assert response.json()["errors"][0]["code"] == "method_not_allowed"
