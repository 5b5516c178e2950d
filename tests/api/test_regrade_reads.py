"""Regrade requests as the student reads them (SPEC §7, §9): a settled request
on a hidden check keeps the check's staff reason hidden, and listing
submissions with their requests costs the same queries for one or many."""

from __future__ import annotations

import pytest

from feedback.services.regrades import regrade_request_create
from tests.factories import (
    client_for,
    criterion_entry,
    enroll,
    make_attempt,
    make_course,
    make_submission,
    make_task,
    review_result,
)
from tests.feedback.test_hidden_checks import FIXED_FAIL, HIDDEN_CRITERIA, SECRET_PATH
from tutor.models import Enrollment

STAFF_REASON = f"still no {SECRET_PATH}"


def ask(client, submission, rubric_id: str):
    response = client.post(
        f"/api/submissions/{submission.pk}/regrade-requests/",
        {"rubric_id": rubric_id, "reason": "I think I covered it"},
        format="json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def test_a_settled_request_on_a_hidden_check_never_shows_the_staff_reason_to_the_student(db):
    task = make_task(make_course("hidden-201", criteria=HIDDEN_CRITERIA))
    alice = enroll(task.course, "alice")
    teacher = enroll(task.course, "teacher", Enrollment.Role.STAFF)
    submission = make_submission(alice, task)
    make_attempt(
        submission,
        result=review_result(
            [
                criterion_entry("A3", "FAIL", basis="model", reason="explanation is wrong"),
                criterion_entry("H1", "FAIL", reason=f"missing {SECRET_PATH}"),
            ]
        ),
    )
    student = client_for(alice)
    ask(student, submission, "H1")
    ask(student, submission, "A3")

    verdict = client_for(teacher).post(
        f"/api/submissions/{submission.pk}/verdicts/",
        {
            "criteria": [
                {"rubric_id": "H1", "status": "FAIL", "reason": STAFF_REASON},
                {"rubric_id": "A3", "status": "PASS", "reason": "section 2 is right"},
            ]
        },
        format="json",
    )

    assert verdict.status_code == 201
    shown = student.get(f"/api/submissions/{submission.pk}/")
    requests = {r["rubric_id"]: r for r in shown.json()["regrade_requests"]}
    assert requests["H1"]["status"] == "settled"
    assert requests["H1"]["response"] == f"Staff gave a verdict: FAIL — {FIXED_FAIL}"
    assert SECRET_PATH not in shown.content.decode()
    # A visible criterion's response still quotes the staff member.
    assert requests["A3"]["response"] == "Staff gave a verdict: PASS — section 2 is right"
    # Staff keep the whole verdict.
    staff_view = client_for(teacher).get(f"/api/submissions/{submission.pk}/").json()
    newest = max(staff_view["attempts"], key=lambda a: a["attempt_seq"])
    assert {c["rubric_id"]: c["reason"] for c in newest["result"]["criteria"]}["H1"] == STAFF_REASON


@pytest.mark.parametrize("count", [1, 12])
def test_listing_submissions_with_their_requests_costs_the_same_queries(
    task, student, student_client, django_assert_num_queries, count
):
    for _ in range(count):
        submission = make_submission(student, task)
        make_attempt(
            submission,
            result=review_result([criterion_entry("A3", "FAIL", basis="model", reason="wrong")]),
        )
        regrade_request_create(submission=submission, student=student, rubric_id="A3", reason="look again")

    # the token with its user, the page of submissions, their attempts, their requests
    with django_assert_num_queries(4):
        response = student_client.get(f"/api/submissions/?task={task.pk}&page_size=50")

    rows = response.json()["results"]
    assert len(rows) == count
    assert all(len(row["regrade_requests"]) == 1 for row in rows)
