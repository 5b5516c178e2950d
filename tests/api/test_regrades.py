"""Regrade requests (SPEC §7): open on one criterion of the newest completed
review of the latest submission; settled by a staff verdict or declined with a
reason; audited; visible to the student; a queue in admin."""

from __future__ import annotations

import django.db
import django.test.utils
import pytest
from django.test import Client
from django.urls import reverse

from feedback.models import RegradeRequest
from tests.factories import (
    client_for,
    criterion_entry,
    enroll,
    make_attempt,
    make_course,
    make_submission,
    review_result,
)
from tutor.models import AuditEvent, Enrollment


def url(submission) -> str:
    return f"/api/submissions/{submission.pk}/regrade-requests/"


def reviewed(student, task, **overrides):
    entries = {
        "A1": criterion_entry("A1", "FAIL", basis="ci", reason="CI failed"),
        "A2": criterion_entry("A2", "FAIL", reason="the report does not mention: undefined"),
        "A3": criterion_entry("A3", "FAIL", basis="model", reason="explanation is wrong"),
        "L1": criterion_entry("L1", "NEED_REVIEW", kind="learning", basis="none"),
    }
    entries.update(overrides)
    submission = make_submission(student, task)
    make_attempt(submission, result=review_result(list(entries.values())))
    return submission


def ask(client, submission, rubric_id="A3", reason="I explained the empty-array case in section 2"):
    return client.post(url(submission), {"rubric_id": rubric_id, "reason": reason}, format="json")


def test_a_student_opens_a_request_and_sees_it_on_the_submission(task, student, student_client):
    submission = reviewed(student, task)

    response = ask(student_client, submission, reason="see section 2, or mail me at alice@example.com")

    assert response.status_code == 201
    body = response.json()
    assert set(body) == {"id", "rubric_id", "reason", "status", "response", "created_at", "decided_at"}
    assert (body["rubric_id"], body["status"], body["response"]) == ("A3", "open", "")
    assert "alice@example.com" not in body["reason"] and "[REDACTED:email]" in body["reason"]
    shown = student_client.get(f"/api/submissions/{submission.pk}/").json()["regrade_requests"]
    assert [r["id"] for r in shown] == [body["id"]]
    event = AuditEvent.objects.get(event="regrade_requested")
    assert (event.actor, event.to_state, event.target_id) == (student, "open", body["id"])


@pytest.mark.parametrize(
    ("rubric_id", "status", "attr", "text"),
    [
        ("Z9", 400, "rubric_id", "not a criterion"),
        ("A1", 400, "rubric_id", "CI service"),  # basis ci
        ("L1", 400, "rubric_id", "acceptance"),
    ],
)
def test_refused_criteria_name_the_rule(task, student, student_client, rubric_id, status, attr, text):
    submission = reviewed(student, task)

    response = ask(student_client, submission, rubric_id=rubric_id)

    assert response.status_code == status
    (error,) = response.json()["errors"]
    assert error["attr"] == attr and text in error["detail"]
    assert not RegradeRequest.objects.exists()


def test_a_passing_criterion_cannot_be_regraded(task, student, student_client):
    submission = reviewed(student, task, A3=criterion_entry("A3", "PASS", basis="model"))

    response = ask(student_client, submission)

    assert response.status_code == 400 and "nothing to regrade" in response.json()["errors"][0]["detail"]


@pytest.mark.parametrize("reason", ["", " ", "\u200b", "\u200b \u2060", "x" * 1001])
def test_a_reason_of_1_to_1000_characters_is_required(task, student, student_client, reason):
    response = ask(student_client, reviewed(student, task), reason=reason)

    assert response.status_code == 400
    assert response.json()["errors"][0]["attr"] == "reason"


def test_one_open_request_per_criterion_and_only_on_the_latest_submission(task, student, student_client):
    older = reviewed(student, task)
    latest = reviewed(student, task)

    assert ask(student_client, older).status_code == 409
    assert ask(student_client, latest).status_code == 201
    duplicate = ask(student_client, latest)
    assert duplicate.status_code == 409 and "already open" in duplicate.json()["errors"][0]["detail"]
    assert ask(student_client, latest, rubric_id="A2").status_code == 201
    assert RegradeRequest.objects.count() == 2


def test_another_students_submission_is_invisible(task, student, other_student):
    submission = reviewed(student, task)

    response = ask(client_for(other_student), submission)

    assert response.status_code == 404
    assert not RegradeRequest.objects.exists()


def test_staff_cannot_file_a_request_for_a_student(task, student, staff_client):
    assert ask(staff_client, reviewed(student, task)).status_code == 403


def test_a_staff_verdict_settles_the_request(task, student, staff, student_client, staff_client):
    submission = reviewed(student, task)
    request_id = ask(student_client, submission).json()["id"]

    verdict = staff_client.post(
        f"/api/submissions/{submission.pk}/verdicts/",
        {"criteria": [{"rubric_id": "A3", "status": "PASS", "reason": "section 2 is right"}]},
        format="json",
    )

    assert verdict.status_code == 201
    (shown,) = student_client.get(f"/api/submissions/{submission.pk}/").json()["regrade_requests"]
    assert shown["id"] == request_id and shown["status"] == "settled"
    assert "PASS" in shown["response"] and "section 2 is right" in shown["response"]
    row = RegradeRequest.objects.get()
    assert (row.decided_by, str(row.settled_by_id)) == (staff, verdict.json()["id"])
    event = AuditEvent.objects.get(event="regrade_settled")
    assert (event.from_state, event.to_state, event.actor) == ("open", "settled", staff)
    # A settled request frees the criterion for a new one.
    assert ask(student_client, submission, rubric_id="A2").status_code == 201


def test_staff_decline_a_request_in_admin_with_a_reason(task, student, staff, student_client):
    submission = reviewed(student, task)
    ask(student_client, submission)
    row = RegradeRequest.objects.get()
    admin = Client()
    admin.force_login(staff)
    changelist = reverse("admin:feedback_regraderequest_changelist")

    queue = admin.get(changelist)
    form = admin.post(changelist, {"action": "decline", "_selected_action": [row.pk]})
    done = admin.post(
        changelist,
        {
            "action": "decline",
            "_selected_action": [row.pk],
            "apply": "yes",
            "response": "Section 2 misses the [] case",
        },
    )

    assert [r.pk for r in queue.context["cl"].result_list] == [row.pk]
    assert b"FAIL (model)" in queue.content  # what the review said, beside the student's reason
    assert form.status_code == 200 and b"Why the review stands" in form.content
    assert done.status_code == 302
    (shown,) = student_client.get(f"/api/submissions/{submission.pk}/").json()["regrade_requests"]
    assert (shown["status"], shown["response"]) == ("declined", "Section 2 misses the [] case")
    event = AuditEvent.objects.get(event="regrade_declined")
    assert (event.actor, event.from_state, event.to_state) == (staff, "open", "declined")
    assert row.pk not in [r.pk for r in admin.get(changelist).context["cl"].result_list]  # no longer open
    # Declining again changes nothing and writes no second row.
    admin.post(
        changelist, {"action": "decline", "_selected_action": [row.pk], "apply": "yes", "response": "again"}
    )
    assert AuditEvent.objects.filter(event="regrade_declined").count() == 1


def test_the_regrade_queue_keeps_a_constant_query_count(task, staff):
    admin = Client()
    admin.force_login(staff)
    changelist = reverse("admin:feedback_regraderequest_changelist")

    def fill(start, count):
        for i in range(start, start + count):
            student = enroll(task.course, f"regrader{i}")
            ask(client_for(student), reviewed(student, task))

    fill(0, 1)
    admin.get(changelist)
    with django.test.utils.CaptureQueriesContext(django.db.connection) as one:
        admin.get(changelist)
    fill(1, 30)
    with django.test.utils.CaptureQueriesContext(django.db.connection) as many:
        response = admin.get(changelist)

    assert len(response.context["cl"].result_list) == 31
    assert len(many) == len(one)


def test_another_courses_staff_never_see_the_request(task, student, student_client):
    ask(student_client, reviewed(student, task))
    outsider = enroll(make_course("other-202"), "outsider", Enrollment.Role.STAFF)
    admin = Client()
    admin.force_login(outsider)

    response = admin.get(reverse("admin:feedback_regraderequest_changelist") + "?regrade=all")

    assert list(response.context["cl"].result_list) == []
