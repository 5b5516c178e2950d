"""Submissions and review attempts in Django admin: read-only history,
scoped to the staff member's courses (SPEC §8)."""

from __future__ import annotations

import pytest
from django.contrib import admin
from django.test import Client, RequestFactory, TestCase
from django.urls import reverse

from feedback.models import ReviewAttempt, Submission
from feedback.services.intake import submission_create
from tests.factories import enroll, make_course, make_task, make_user
from tutor.models import Enrollment

MODELS = [Submission, ReviewAttempt]


@pytest.fixture(autouse=True)
def offline(settings):
    settings.TUTOR_LLM_BASE_URL = None
    settings.TUTOR_LLM_MODEL = "offline"


def submit(student, task, report: str) -> Submission:
    with TestCase.captureOnCommitCallbacks(execute=True):
        return submission_create(
            student=student,
            task=task,
            evidence={"report": report},
            submitted_by=student,
            ci_source="student",
        )


@pytest.fixture
def two_courses(task, student):
    other_task = make_task(make_course("other-202"))
    stranger = enroll(other_task.course, "stranger")
    return {
        "mine": submit(student, task, "report-in-my-course"),
        "theirs": submit(stranger, other_task, "report-in-another-course"),
    }


@pytest.fixture
def superuser_client(db):
    client = Client()
    client.force_login(make_user("root", is_superuser=True, is_staff=True))
    return client


@pytest.fixture
def course_staff_client(staff):
    client = Client()
    client.force_login(staff)
    return client


def changelist(model) -> str:
    # Every row, not only the default "needs a decision" queue (tests/feedback/test_admin_queue.py).
    return reverse(f"admin:feedback_{model._meta.model_name}_changelist") + "?decision=all"


def change(obj) -> str:
    return reverse(f"admin:feedback_{obj._meta.model_name}_change", args=[obj.pk])


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_superuser_opens_changelist_with_every_course(two_courses, superuser_client, model):
    response = superuser_client.get(changelist(model))

    assert response.status_code == 200
    assert response.context["cl"].result_count == 2


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_course_staff_see_only_their_courses_rows(two_courses, course_staff_client, model):
    response = course_staff_client.get(changelist(model))

    assert response.status_code == 200
    rows = list(response.context["cl"].result_list)
    submissions = [row if model is Submission else row.submission for row in rows]
    assert [s.pk for s in submissions] == [two_courses["mine"].pk]


def test_course_staff_cannot_open_another_courses_submission(two_courses, course_staff_client):
    theirs = two_courses["theirs"]
    response = course_staff_client.get(change(theirs))
    assert response.status_code == 302  # admin redirects a missing object to the index
    attempt_response = course_staff_client.get(change(theirs.attempts.get()))
    assert attempt_response.status_code == 302


def test_submission_page_is_read_only_with_its_attempts(two_courses, course_staff_client):
    mine = two_courses["mine"]

    response = course_staff_client.get(change(mine))

    assert response.status_code == 200
    assert response.context["has_change_permission"] is False
    assert b'name="_save"' not in response.content
    (inline,) = response.context["inline_admin_formsets"]
    assert [form.original.pk for form in inline] == [mine.attempts.get().pk]
    assert inline.has_add_permission is False
    assert inline.has_delete_permission is False


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_no_add_change_or_delete_permission_even_for_superuser(two_courses, model):
    root = make_user("root2", is_superuser=True, is_staff=True)
    request = RequestFactory().get("/")
    request.user = root
    model_admin = admin.site._registry[model]
    obj = model.objects.first()

    assert model_admin.has_view_permission(request, obj) is True
    assert model_admin.has_add_permission(request) is False
    assert model_admin.has_change_permission(request, obj) is False
    assert model_admin.has_delete_permission(request, obj) is False


def test_add_change_and_delete_urls_are_refused(two_courses, superuser_client):
    mine = two_courses["mine"]
    attempt = mine.attempts.get()
    before = ReviewAttempt.objects.filter(pk=attempt.pk).values().get()

    add = superuser_client.get(reverse("admin:feedback_submission_add"))
    post = superuser_client.post(change(attempt), {"status": "queued", "result": "null"})
    delete = superuser_client.post(
        reverse("admin:feedback_reviewattempt_delete", args=[attempt.pk]), {"post": "yes"}
    )
    bulk_delete = superuser_client.post(
        changelist(Submission), {"action": "delete_selected", "_selected_action": [mine.pk], "post": "yes"}
    )

    assert add.status_code == 403
    assert post.status_code == 403
    assert delete.status_code == 403
    assert bulk_delete.status_code != 500
    assert Submission.objects.filter(pk=mine.pk).exists()
    assert ReviewAttempt.objects.filter(pk=attempt.pk).values().get() == before


def test_attempt_changelist_filters_by_status(two_courses, superuser_client):
    response = superuser_client.get(changelist(ReviewAttempt), {"status__exact": "queued"})
    assert response.status_code == 200
    assert response.context["cl"].result_count == 0


def test_staff_of_no_course_sees_nothing(two_courses):
    user = make_user("loner", is_staff=True)
    course = two_courses["mine"].task.course
    # A student enrolment gives no admin rows, even with is_staff set.
    Enrollment.objects.create(user=user, course=course, role=Enrollment.Role.STUDENT)
    from tutor.services import course_staff_group

    user.groups.add(course_staff_group())
    client = Client()
    client.force_login(user)

    response = client.get(changelist(Submission))

    assert response.status_code == 200
    assert response.context["cl"].result_count == 0


def test_student_cannot_open_admin(two_courses, student):
    client = Client()
    client.force_login(student)
    response = client.get(changelist(Submission))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_submission_page_shows_the_redactions_per_field_and_no_secret(task, student, course_staff_client):
    key = "sk-proj-" + "Zx9Cv8Bn7Mm6Ll5Kk4Jj3Hh2"
    with TestCase.captureOnCommitCallbacks(execute=True):
        submission = submission_create(
            student=student,
            task=task,
            evidence={
                "report": f"my key {key}",
                "files": {".env": f"OPENAI_API_KEY={key}\nDB_PASSWORD=hunter22x"},
            },
            submitted_by=student,
            ci_source="student",
        )

    response = course_staff_client.get(change(submission))

    assert response.status_code == 200
    page = response.content.decode()
    assert "files/.env ×2, report ×1" in page
    assert key not in page and "hunter22x" not in page
