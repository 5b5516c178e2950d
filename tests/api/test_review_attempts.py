"""GET /api/review-attempts/{id}/ (SPEC §7): own / staff, nobody else."""

from __future__ import annotations

import uuid

import pytest
from django.test import TestCase
from rest_framework.test import APIClient

from feedback.services.intake import submission_create
from tests.factories import client_for, enroll, make_course, make_task
from tutor.models import Enrollment

EVIDENCE = {
    "report": "first returns undefined",
    "ci": {"status": "failed", "exit_code": 1, "log_tail": "1 failing"},
}


@pytest.fixture(autouse=True)
def offline(settings):
    settings.TUTOR_LLM_BASE_URL = None
    settings.TUTOR_LLM_MODEL = "offline"


@pytest.fixture
def attempt(student, task):
    with TestCase.captureOnCommitCallbacks(execute=True):
        submission = submission_create(
            student=student, task=task, evidence=EVIDENCE, submitted_by=student, ci_source="student"
        )
    return submission.attempts.get()


def url(attempt_id) -> str:
    return f"/api/review-attempts/{attempt_id}/"


def test_owner_reads_status_versions_and_result(student_client, attempt):
    response = student_client.get(url(attempt.pk))

    assert response.status_code == 200
    body = response.json()
    assert body["id"] == str(attempt.pk)
    assert body["submission"] == str(attempt.submission_id)
    assert body["attempt_seq"] == attempt.attempt_seq
    assert body["status"] == "completed"
    assert (body["rubric_version"], body["rubric_hash"]) == (attempt.rubric_version, attempt.rubric_hash)
    assert (body["prompt_version"], body["engine_version"]) == (
        attempt.prompt_version,
        attempt.engine_version,
    )
    assert body["model"] == "offline"
    assert body["result"]["overall"] == "FAIL"
    assert body["reused_from"] is None
    assert body["error_code"] == ""
    assert body["generation_attempts"] == 0
    assert body["finished_at"] is not None


def test_queued_attempt_has_null_result(student_client, student, task):
    submission = submission_create(
        student=student, task=task, evidence=EVIDENCE, submitted_by=student, ci_source="student"
    )
    response = student_client.get(url(submission.attempts.get().pk))
    assert response.status_code == 200
    assert response.json()["status"] == "queued"
    assert response.json()["result"] is None
    assert response.json()["finished_at"] is None


def test_another_students_attempt_is_404(other_student, attempt):
    response = client_for(other_student).get(url(attempt.pk))
    assert response.status_code == 404
    assert response.json()["errors"][0]["code"] == "not_found"


def test_course_staff_read_it_and_staff_of_another_course_do_not(staff_client, attempt):
    outsider = enroll(make_course("elsewhere"), "prof-y", Enrollment.Role.STAFF)

    assert staff_client.get(url(attempt.pk)).status_code == 200
    assert client_for(outsider).get(url(attempt.pk)).status_code == 404


def test_service_account_reads_attempts_it_submitted(service, student, task):
    with TestCase.captureOnCommitCallbacks(execute=True):
        submission = submission_create(
            student=student, task=task, evidence=EVIDENCE, submitted_by=service, ci_source="service"
        )
    assert client_for(service).get(url(submission.attempts.get().pk)).status_code == 200


def test_reused_attempt_exposes_only_the_same_students_attempt_id(student_client, student, task, attempt):
    with TestCase.captureOnCommitCallbacks(execute=True):
        again = submission_create(
            student=student, task=task, evidence=EVIDENCE, submitted_by=student, ci_source="student"
        )
    reused = again.attempts.get()

    body = student_client.get(url(reused.pk)).json()

    assert body["reused_from"] == str(attempt.pk)
    assert student_client.get(url(body["reused_from"])).status_code == 200


def test_unknown_and_non_uuid_ids_are_404(student_client, attempt):
    assert student_client.get(url(uuid.uuid4())).status_code == 404
    assert student_client.get(url("42")).status_code == 404


def test_anonymous_is_401(attempt):
    response = APIClient().get(url(attempt.pk))
    assert response.status_code == 401


def test_attempts_are_read_only(student_client, attempt):
    for method in ("put", "patch", "delete"):
        response = getattr(student_client, method)(url(attempt.pk), {"status": "queued"}, format="json")
        assert response.status_code == 405, method
    attempt.refresh_from_db()
    assert attempt.status == "completed"


def test_attempts_of_another_course_task_stay_hidden(student_client, attempt):
    other_task = make_task(make_course("hidden-101"))
    stranger = enroll(other_task.course, "quinn")
    with TestCase.captureOnCommitCallbacks(execute=True):
        submission = submission_create(
            student=stranger, task=other_task, evidence=EVIDENCE, submitted_by=stranger, ci_source="student"
        )
    assert student_client.get(url(submission.attempts.get().pk)).status_code == 404
