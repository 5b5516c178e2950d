"""HTTP API for submissions, reviews and verdicts (SPEC §7)."""

from __future__ import annotations

import json
import uuid

import pytest
from django.core.cache import cache
from django.test import TestCase

from feedback.models import AttemptStatus, Counter, ReviewAttempt, Submission
from feedback.services.intake import submission_create
from tests.factories import client_for, enroll, make_course, make_task
from tutor.models import Enrollment
from tutor.web.throttling import WriteThrottle

URL = "/api/submissions/"
EVIDENCE = {
    "report": "first returns undefined for an empty array",
    "files": {"src/first.js": "export const first = (xs) => xs[0];"},
    "ci": {"status": "passed", "exit_code": 0, "log_tail": "3 passing"},
    "head_sha": "0123abc",
    "repo_url": "https://git.example/alice/first",
}
SUBMISSION_FIELDS = {
    "id",
    "task",
    "student",
    "submission_seq",
    "previous",
    "snapshot_hash",
    "ci_source",
    "created_at",
    "attempts",
}
ATTEMPT_FIELDS = {
    "id",
    "submission",
    "attempt_seq",
    "status",
    "rubric_version",
    "rubric_hash",
    "prompt_version",
    "engine_version",
    "model",
    "result",
    "reused_from",
    "error_code",
    "generation_attempts",
    "created_at",
    "finished_at",
}


@pytest.fixture(autouse=True)
def offline_and_fresh_throttle(settings):
    settings.TUTOR_LLM_BASE_URL = None
    settings.TUTOR_LLM_MODEL = "offline"
    cache.clear()
    yield
    cache.clear()


def stored_rows() -> tuple:
    """Everything a submission writes: rows and the sequence counters."""
    return (
        Submission.objects.count(),
        ReviewAttempt.objects.count(),
        sorted(Counter.objects.values_list("name", "value")),
    )


def error_attrs(response) -> dict[str, str]:
    body = response.json()
    assert body["type"] == "validation_error", body
    return {e["attr"]: e["detail"] for e in body["errors"]}


def make_submission(student, task, evidence=EVIDENCE, run=True) -> Submission:
    if not run:
        return submission_create(
            student=student, task=task, evidence=evidence, submitted_by=student, ci_source="student"
        )
    with TestCase.captureOnCommitCallbacks(execute=True):
        return submission_create(
            student=student, task=task, evidence=evidence, submitted_by=student, ci_source="student"
        )


def set_status(submission: Submission, status: str) -> ReviewAttempt:
    """End the submission's queued attempt in ``status`` the way a worker would."""
    from feedback.services.worker import attempt_claim, attempt_failed

    attempt, claim = attempt_claim(attempt_id=submission.attempts.get().pk)
    attempt_failed(attempt_id=attempt.pk, claim=claim, status=status, error_code="REVIEW_UNAVAILABLE")
    return attempt


@pytest.fixture
def other_course_task(db):
    return make_task(make_course("other-101"))


# --- POST /api/submissions/ ---------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_post_returns_201_with_submission_and_first_attempt_after_commit(student_client, student, task):
    response = student_client.post(URL, {"task": task.pk, "evidence": EVIDENCE}, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) >= SUBMISSION_FIELDS
    submission = Submission.objects.get()
    assert body["id"] == str(submission.pk)
    assert body["task"] == str(task.pk)
    assert body["student"] == "alice"
    assert body["submission_seq"] == submission.submission_seq
    assert body["previous"] is None
    assert body["snapshot_hash"] == submission.snapshot_hash
    assert body["ci_source"] == "student"
    assert len(body["attempts"]) == 1
    attempt = body["attempts"][0]
    assert set(attempt) >= ATTEMPT_FIELDS
    assert attempt["submission"] == body["id"]
    assert attempt["rubric_version"] == "2026.1"
    # Serialized after the commit: the eager worker has already finished it.
    assert attempt["status"] == "completed"
    assert attempt["finished_at"] is not None
    by_id = {c["rubric_id"]: c for c in attempt["result"]["criteria"]}
    assert (by_id["A1"]["status"], by_id["A1"]["basis"]) == ("PASS", "self_report")
    assert attempt["result"]["overall"] == "NEED_REVIEW"
    assert submission.evidence["head_sha"] == "0123abc"


@pytest.mark.django_db(transaction=True)
def test_second_post_links_previous_and_reuses_identical_review(student_client, task):
    first = student_client.post(URL, {"task": task.pk, "evidence": EVIDENCE}, format="json").json()
    second = student_client.post(URL, {"task": task.pk, "evidence": EVIDENCE}, format="json").json()

    assert second["previous"] == first["id"]
    assert second["submission_seq"] > first["submission_seq"]
    assert second["attempts"][0]["status"] == "completed"
    assert second["attempts"][0]["reused_from"] == first["attempts"][0]["id"]


def test_post_with_correlation_header_stamps_the_attempt(student_client, task):
    response = student_client.post(
        URL, {"task": task.pk, "evidence": EVIDENCE}, format="json", HTTP_X_CORRELATION_ID="req-42"
    )
    assert response.status_code == 201
    assert response["X-Correlation-ID"] == "req-42"
    assert ReviewAttempt.objects.get().correlation_id == "req-42"


def test_post_without_evidence_keys_stores_empty_values(student_client, task):
    response = student_client.post(URL, {"task": task.pk, "evidence": {"report": "r"}}, format="json")

    assert response.status_code == 201, response.content
    assert Submission.objects.get().evidence == {
        "report": "r",
        "files": {},
        "ci": None,
        "head_sha": "",
        "repo_url": "",
    }


@pytest.mark.parametrize(
    "evidence",
    [
        {},
        {"report": ""},
        {"report": "  \n\t "},
        {"report": None, "files": {}, "ci": None},
        {"head_sha": "abc"},
    ],
    ids=["no-keys", "blank-report", "whitespace-report", "nulls", "provenance-only"],
)
def test_evidence_with_nothing_to_review_is_a_400_naming_the_field(student_client, task, evidence):
    response = student_client.post(URL, {"task": task.pk, "evidence": evidence}, format="json")

    assert response.status_code == 400, response.content
    assert response.json()["errors"] == [
        {
            "code": "empty",
            "detail": "the evidence is empty: send a report, at least one file or a CI result",
            "attr": "evidence",
        }
    ]
    assert not Submission.objects.exists()


@pytest.mark.parametrize(
    "evidence",
    [{"files": {"a.js": ""}}, {"ci": {"status": "failed", "exit_code": 1}}, {"report": "done"}],
    ids=["one-file", "ci-only", "report-only"],
)
def test_evidence_with_one_part_is_enough(student_client, task, evidence):
    response = student_client.post(URL, {"task": task.pk, "evidence": evidence}, format="json")

    assert response.status_code == 201, response.content


def test_service_account_submits_for_a_student_with_ci_basis(
    service, student, task, django_capture_on_commit_callbacks
):
    client = client_for(service)
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            URL, {"task": task.pk, "student": "alice", "evidence": EVIDENCE}, format="json"
        )

    assert response.status_code == 201, response.content
    submission = Submission.objects.get()
    assert submission.student == student
    assert submission.submitted_by == service
    assert submission.ci_source == "service"
    assert response.json()["student"] == "alice"
    attempt = submission.attempts.get()
    assert attempt.status == AttemptStatus.COMPLETED
    ci = next(c for c in attempt.result["criteria"] if c["rubric_id"] == "A1")
    assert (ci["status"], ci["basis"]) == ("PASS", "ci")


def test_service_account_must_name_an_enrolled_student(service, staff, task):
    client = client_for(service)
    before = stored_rows()

    missing = client.post(URL, {"task": task.pk, "evidence": EVIDENCE}, format="json")
    stranger = client.post(URL, {"task": task.pk, "student": "nobody", "evidence": EVIDENCE}, format="json")
    not_a_student = client.post(
        URL, {"task": task.pk, "student": "teacher", "evidence": EVIDENCE}, format="json"
    )

    for response in (missing, stranger, not_a_student):
        assert response.status_code == 400
        assert "student" in error_attrs(response)
    assert stored_rows() == before


def test_student_naming_another_student_is_400_on_student(student_client, other_student, task):
    before = stored_rows()
    response = student_client.post(
        URL, {"task": task.pk, "student": "bob", "evidence": EVIDENCE}, format="json"
    )

    assert response.status_code == 400
    assert "student" in error_attrs(response)
    assert stored_rows() == before


def test_student_naming_themselves_is_allowed(student_client, task):
    response = student_client.post(
        URL, {"task": task.pk, "student": "alice", "evidence": EVIDENCE}, format="json"
    )
    assert response.status_code == 201
    assert Submission.objects.get().ci_source == "student"


@pytest.mark.parametrize("which", ["other_course", "missing", "staff"])
def test_task_outside_enrolment_is_400_on_task(which, student_client, staff_client, task, other_course_task):
    client = staff_client if which == "staff" else student_client
    task_id = {"other_course": other_course_task.pk, "missing": 999_999, "staff": task.pk}[which]
    before = stored_rows()

    response = client.post(URL, {"task": task_id, "evidence": EVIDENCE}, format="json")

    assert response.status_code == 400
    assert "task" in error_attrs(response)
    assert stored_rows() == before


def test_task_without_a_rubric_is_400_on_task(student_client, task):
    from tutor.models import Task

    bare = Task.objects.create(course=task.course, slug="no-rubric", title="Not ready")
    before = stored_rows()

    response = student_client.post(URL, {"task": str(bare.pk), "evidence": EVIDENCE}, format="json")

    assert response.status_code == 400
    assert "task" in error_attrs(response)
    assert stored_rows() == before


def test_null_evidence_keys_mean_missing(student_client, task):
    evidence = {"report": "r", "files": None, "ci": None, "head_sha": None, "repo_url": None}

    response = student_client.post(URL, {"task": task.pk, "evidence": evidence}, format="json")

    assert response.status_code == 201, response.content
    stored = Submission.objects.get().evidence
    assert stored == {"report": "r", "files": {}, "ci": None, "head_sha": "", "repo_url": ""}


@pytest.mark.parametrize(
    "evidence,attr",
    [
        ({"files": ["src/first.js"]}, "evidence.files"),
        ({"files": {"a.js": 5}}, "evidence.files.a.js"),
        ({"ci": {"status": "ok"}}, "evidence.ci.status"),
        ({"ci": {"status": "passed", "exit_code": "zero"}}, "evidence.ci.exit_code"),
        ({"ci": {"status": "passed", "verdict": "green"}}, "evidence.ci.verdict"),
        ({"report": "x", "grade": "A+"}, "evidence.grade"),
        ({"report": 5}, "evidence.report"),
        ({"report": ["a"]}, "evidence.report"),
        ("a string", "evidence.non_field_errors"),
    ],
    ids=[
        "files-not-dict",
        "file-not-text",
        "ci-status-ok",
        "exit-code-text",
        "ci-unknown-key",
        "unknown-key",
        "report-int",
        "report-list",
        "evidence-not-object",
    ],
)
def test_malformed_evidence_is_400_with_field_message_and_nothing_stored(
    student_client, task, evidence, attr
):
    before = stored_rows()

    response = student_client.post(URL, {"task": task.pk, "evidence": evidence}, format="json")

    assert response.status_code == 400, response.content
    attrs = error_attrs(response)
    assert attr in attrs, attrs
    assert attrs[attr]
    assert stored_rows() == before


def test_malformed_body_is_400_not_500(student_client, task):
    before = stored_rows()
    bad_json = student_client.generic("POST", URL, "{not json", content_type="application/json")
    no_task = student_client.post(URL, {"evidence": EVIDENCE}, format="json")
    text_task = student_client.post(URL, {"task": "t1", "evidence": EVIDENCE}, format="json")

    assert bad_json.status_code == 400
    assert no_task.status_code == 400 and "task" in error_attrs(no_task)
    assert text_task.status_code == 400 and "task" in error_attrs(text_task)
    assert stored_rows() == before


@pytest.mark.parametrize(
    "evidence,needle",
    [
        ({"report": "x" * (1024 * 1024 + 1)}, "at most 1048576 bytes"),
        ({"files": {f"f{i}.txt": "x" for i in range(201)}}, "at most 200"),
        ({"files": {"big.bin": "x" * (256 * 1024 + 1)}}, "at most 262144 bytes per file"),
        # Characters are counted as UTF-8 bytes: 90k CJK characters are 270 KB.
        ({"files": {"zh.md": "\u4e2d" * 90_000}}, "at most 262144 bytes per file"),
    ],
    ids=["total-over-1MiB", "201-files", "file-over-256KiB", "file-over-256KiB-utf8"],
)
def test_oversize_evidence_is_413_json_and_nothing_stored(student_client, task, evidence, needle):
    before = stored_rows()

    response = student_client.post(URL, {"task": task.pk, "evidence": evidence}, format="json")

    assert response.status_code == 413
    assert response["Content-Type"].startswith("application/json")
    body = response.json()
    assert body["errors"][0]["code"] == "payload_too_large"
    assert needle in body["errors"][0]["detail"]
    assert stored_rows() == before


def test_evidence_at_the_limits_is_accepted(student_client, task):
    files = {f"f{i}.txt": "x" for i in range(199)}
    files["big.txt"] = "y" * (256 * 1024)
    response = student_client.post(URL, {"task": task.pk, "evidence": {"files": files}}, format="json")
    assert response.status_code == 201, response.content[:300]


# --- GET list and detail ---------------------------------------------------------------


def test_list_shows_only_own_submissions_filtered_by_task(
    student_client, student, other_student, course, task
):
    second_task = make_task(make_course("two-tasks", tasks=2), slug="t2")
    Enrollment.objects.create(user=student, course=second_task.course)
    mine = make_submission(student, task)
    elsewhere = make_submission(student, second_task)
    make_submission(other_student, task)

    all_mine = student_client.get(URL)
    by_task = student_client.get(URL, {"task": task.pk})

    assert all_mine.status_code == 200
    assert {s["id"] for s in all_mine.json()["results"]} == {str(mine.pk), str(elsewhere.pk)}
    assert [s["id"] for s in by_task.json()["results"]] == [str(mine.pk)]
    assert by_task.json()["results"][0]["attempts"][0]["status"] == "completed"


def test_student_filter_cannot_reveal_another_students_submissions(student_client, other_student, task):
    make_submission(other_student, task)

    response = student_client.get(URL, {"student": "bob"})

    assert response.status_code == 200
    assert response.json()["results"] == []


def test_staff_see_their_course_and_filter_by_student(
    staff_client, student, other_student, task, other_course_task
):
    a = make_submission(student, task)
    b = make_submission(other_student, task)
    outsider = enroll(other_course_task.course, "zed")
    make_submission(outsider, other_course_task)

    everyone = staff_client.get(URL)
    only_bob = staff_client.get(URL, {"student": "bob", "task": task.pk})

    assert [s["id"] for s in everyone.json()["results"]] == [str(b.pk), str(a.pk)]  # newest first
    assert [s["id"] for s in only_bob.json()["results"]] == [str(b.pk)]


@pytest.mark.parametrize("task_param", ["abc", "1.5", "99999999999999999999999", "0"])
def test_bad_task_filter_is_400_not_500(student_client, student, task, task_param):
    make_submission(student, task, run=False)

    response = student_client.get(URL, {"task": task_param})

    assert response.status_code == 400
    assert "task" in error_attrs(response)


def test_list_is_cursor_paginated_by_submission_seq(student_client, student, task):
    ids = [str(make_submission(student, task, {"report": f"try {i}"}, run=False).pk) for i in range(3)]

    page1 = student_client.get(URL, {"page_size": 2}).json()
    page2 = student_client.get(page1["next"]).json()

    assert [s["id"] for s in page1["results"] + page2["results"]] == ids[::-1]
    assert page2["next"] is None


def test_detail_of_own_submission_has_attempts(student_client, student, task):
    submission = make_submission(student, task)

    response = student_client.get(f"{URL}{submission.pk}/")

    assert response.status_code == 200
    body = response.json()
    assert body["id"] == str(submission.pk)
    assert [a["attempt_seq"] for a in body["attempts"]] == [submission.attempts.get().attempt_seq]


def test_detail_of_another_students_submission_is_404(student_client, other_student, task):
    submission = make_submission(other_student, task)

    response = student_client.get(f"{URL}{submission.pk}/")

    assert response.status_code == 404
    assert response.json()["errors"][0]["code"] == "not_found"


@pytest.mark.parametrize("bad_id", ["123", "not-a-uuid", "1' OR '1'='1"])
def test_non_uuid_id_is_json_404(student_client, bad_id):
    response = student_client.get(f"{URL}{bad_id}/")
    assert response.status_code == 404
    assert response.json()["errors"][0]["code"] == "not_found"


def test_unknown_uuid_is_404(student_client):
    assert student_client.get(f"{URL}{uuid.uuid4()}/").status_code == 404


# --- POST …/reviews/ ------------------------------------------------------------------------


def reviews_url(submission) -> str:
    return f"{URL}{submission.pk}/reviews/"


@pytest.mark.parametrize("status", [AttemptStatus.UNAVAILABLE, AttemptStatus.INVALID])
def test_owner_may_retry_after_unavailable_or_invalid(student_client, student, task, status):
    submission = make_submission(student, task, run=False)
    failed = set_status(submission, status)

    response = student_client.post(reviews_url(submission), {}, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert set(body) >= ATTEMPT_FIELDS
    assert body["id"] != str(failed.pk)
    assert body["submission"] == str(submission.pk)
    assert submission.attempts.count() == 2


def test_owner_may_retry_a_stale_review(tmp_path, student_client, student, task):
    from tests.factories import course_data
    from tutor.coursefile import course_import, validate_course

    submission = make_submission(student, task)
    course_import(spec=validate_course(course_data("se-101", version="2026.2")))

    response = student_client.post(reviews_url(submission), {}, format="json")

    assert response.status_code == 201, response.content
    assert response.json()["rubric_version"] == "2026.2"


@pytest.mark.parametrize("run", [True, False], ids=["completed", "queued"])
def test_owner_retry_of_a_current_review_is_409(student_client, student, task, run):
    submission = make_submission(student, task, run=run)

    response = student_client.post(reviews_url(submission), {}, format="json")

    assert response.status_code == 409
    assert response.json()["errors"][0]["code"] == "conflict"
    assert submission.attempts.count() == 1


def test_owner_retry_of_an_older_submission_is_409(student_client, student, task):
    older = make_submission(student, task, run=False)
    set_status(older, AttemptStatus.UNAVAILABLE)
    make_submission(student, task, {"report": "newer"})

    response = student_client.post(reviews_url(older), {}, format="json")

    assert response.status_code == 409
    assert older.attempts.count() == 1


def test_student_may_not_force(student_client, student, task):
    submission = make_submission(student, task, run=False)
    set_status(submission, AttemptStatus.UNAVAILABLE)

    response = student_client.post(reviews_url(submission), {"force": True}, format="json")

    assert response.status_code == 403
    assert submission.attempts.count() == 1


def test_staff_force_creates_a_fresh_attempt(staff_client, student, task, django_capture_on_commit_callbacks):
    submission = make_submission(student, task)
    first = submission.attempts.get()

    with django_capture_on_commit_callbacks(execute=True):
        response = staff_client.post(reviews_url(submission), {"force": True}, format="json")

    assert response.status_code == 201
    body = response.json()
    assert body["reused_from"] is None
    assert body["attempt_seq"] > first.attempt_seq
    fresh = ReviewAttempt.objects.get(pk=body["id"])
    assert fresh.forced is True
    assert fresh.status == AttemptStatus.COMPLETED


def test_reviews_of_another_students_submission_is_404(student_client, other_student, task):
    submission = make_submission(other_student, task, run=False)
    set_status(submission, AttemptStatus.UNAVAILABLE)

    response = student_client.post(reviews_url(submission), {}, format="json")

    assert response.status_code == 404
    assert submission.attempts.count() == 1


def test_reviews_with_bad_force_is_400(student_client, student, task):
    submission = make_submission(student, task)
    response = student_client.post(reviews_url(submission), {"force": "maybe"}, format="json")
    assert response.status_code == 400
    assert "force" in error_attrs(response)


# --- POST …/verdicts/ -----------------------------------------------------------------------


def verdicts_url(submission) -> str:
    return f"{URL}{submission.pk}/verdicts/"


VERDICT = {"criteria": [{"rubric_id": "A3", "status": "PASS", "reason": "checked by hand"}]}


def test_staff_verdict_creates_a_staff_attempt(staff_client, student, task):
    submission = make_submission(student, task)
    old = submission.attempts.get()
    old_result = json.loads(json.dumps(old.result))

    response = staff_client.post(verdicts_url(submission), VERDICT, format="json")

    assert response.status_code == 201, response.content
    body = response.json()
    assert body["status"] == "completed"
    assert body["attempt_seq"] > old.attempt_seq
    a3 = next(c for c in body["result"]["criteria"] if c["rubric_id"] == "A3")
    assert (a3["status"], a3["basis"], a3["reason"]) == ("PASS", "staff", "checked by hand")
    assert body["result"]["overall"] == "PASS"
    old.refresh_from_db()
    assert old.result == old_result


def test_verdict_by_the_owner_is_403(student_client, student, task):
    submission = make_submission(student, task)
    response = student_client.post(verdicts_url(submission), VERDICT, format="json")
    assert response.status_code == 403
    assert submission.attempts.count() == 1


def test_verdict_by_another_student_is_404(student_client, other_student, task):
    submission = make_submission(other_student, task)
    response = student_client.post(verdicts_url(submission), VERDICT, format="json")
    assert response.status_code == 404


def test_verdict_by_staff_of_another_course_is_404(student, task, other_course_task):
    outsider_staff = enroll(other_course_task.course, "prof-x", Enrollment.Role.STAFF)
    submission = make_submission(student, task)
    response = client_for(outsider_staff).post(verdicts_url(submission), VERDICT, format="json")
    assert response.status_code == 404


def test_verdict_with_unknown_first_rubric_id_is_400_on_criteria_0(staff_client, student, task):
    submission = make_submission(student, task)
    body = {"criteria": [{"rubric_id": "Z9", "status": "PASS", "reason": "no such criterion"}]}

    response = staff_client.post(verdicts_url(submission), body, format="json")

    assert response.status_code == 400
    assert list(error_attrs(response)) == ["criteria.0.rubric_id"]
    assert submission.attempts.count() == 1


def test_verdict_with_unknown_rubric_id_is_400_on_that_item(staff_client, student, task):
    submission = make_submission(student, task)
    body = {
        "criteria": [
            {"rubric_id": "A3", "status": "PASS", "reason": "fine"},
            {"rubric_id": "Z9", "status": "PASS", "reason": "no such criterion"},
        ]
    }

    response = staff_client.post(verdicts_url(submission), body, format="json")

    assert response.status_code == 400
    attrs = error_attrs(response)
    assert list(attrs) == ["criteria.1.rubric_id"]
    assert "Z9" in attrs["criteria.1.rubric_id"]
    assert submission.attempts.count() == 1


@pytest.mark.parametrize(
    "body,attr",
    [
        ({"criteria": []}, "criteria.non_field_errors"),
        ({"criteria": [{"rubric_id": "A3", "status": "MAYBE", "reason": "x"}]}, "criteria.0.status"),
        ({"criteria": [{"rubric_id": "A3", "status": "PASS"}]}, "criteria.0.reason"),
        (
            {
                "criteria": [
                    {"rubric_id": "A3", "status": "PASS", "reason": "x"},
                    {"rubric_id": "A3", "status": "FAIL", "reason": "y"},
                ]
            },
            "criteria",
        ),
    ],
    ids=["empty", "bad-status", "no-reason", "duplicate"],
)
def test_malformed_verdict_is_400(staff_client, student, task, body, attr):
    submission = make_submission(student, task)
    response = staff_client.post(verdicts_url(submission), body, format="json")
    assert response.status_code == 400
    assert attr in error_attrs(response)
    assert submission.attempts.count() == 1


# --- anonymous ---------------------------------------------------------------------------------


def test_anonymous_gets_401_everywhere(client, student, task):
    from rest_framework.test import APIClient

    submission = make_submission(student, task)
    attempt = submission.attempts.get()
    anonymous = APIClient()
    calls = [
        ("get", URL),
        ("post", URL),
        ("get", f"{URL}{submission.pk}/"),
        ("post", reviews_url(submission)),
        ("post", verdicts_url(submission)),
        ("get", f"/api/review-attempts/{attempt.pk}/"),
    ]
    for method, url in calls:
        response = (
            getattr(anonymous, method)(url, {}, format="json") if method == "post" else anonymous.get(url)
        )
        assert response.status_code == 401, (method, url)
        assert response.json()["errors"][0]["code"] == "not_authenticated"
    assert submission.attempts.count() == 1


def test_bad_token_is_401(task):
    from rest_framework.test import APIClient

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    assert client.get(URL).status_code == 401


# --- throttling ----------------------------------------------------------------------------------


def test_third_submission_within_a_minute_is_429(settings, monkeypatch, student_client, task):
    rates = {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "submissions": "2/min"}
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}
    # DRF copies the rates onto SimpleRateThrottle when rest_framework.throttling
    # is first imported, so a settings override alone works only if no earlier
    # test imported it.
    monkeypatch.setattr(WriteThrottle, "THROTTLE_RATES", rates)

    statuses = [
        student_client.post(
            URL, {"task": task.pk, "evidence": {"report": f"try {i}"}}, format="json"
        ).status_code
        for i in range(3)
    ]

    assert statuses == [201, 201, 429]
    assert Submission.objects.count() == 2
    assert student_client.get(URL).status_code == 200  # reads are not throttled


def test_throttle_fails_open_when_the_cache_is_down(monkeypatch, student_client, task):
    class DownCache:
        def get(self, *args, **kwargs):
            raise ConnectionError("redis is down")

        def set(self, *args, **kwargs):
            raise ConnectionError("redis is down")

    monkeypatch.setattr(WriteThrottle, "cache", DownCache())

    response = student_client.post(URL, {"task": task.pk, "evidence": EVIDENCE}, format="json")

    assert response.status_code == 201
    assert Submission.objects.count() == 1


def test_broker_outage_still_stores_the_submission(
    monkeypatch, student_client, task, django_capture_on_commit_callbacks
):
    from feedback.tasks import review_attempt

    def broker_down(attempt_id):
        raise ConnectionError("redis is down")

    monkeypatch.setattr(review_attempt, "delay", broker_down)
    with django_capture_on_commit_callbacks(execute=True):
        response = student_client.post(URL, {"task": task.pk, "evidence": EVIDENCE}, format="json")

    assert response.status_code == 201
    # The queued row is the outbox the sweep re-dispatches.
    assert ReviewAttempt.objects.get().status == AttemptStatus.QUEUED
