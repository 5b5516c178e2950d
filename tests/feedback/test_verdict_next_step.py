"""A staff verdict's ``next_step`` on the wire (SPEC §2, §3 ``passed``).

The rule: the staff member's own text when given; otherwise empty when the
verdict's overall is PASS; otherwise the earlier step is kept only while a
rubric id it names is still not PASS. Each case reviews a submission through
the API with the model asking for staff on A3, gives a verdict through the
API, and checks the exact feedback block of the system message the tutor's
model receives next -- the tutor is never told a next step that contradicts
the verdict.
"""

from __future__ import annotations

import json

import pytest
from django.conf import settings

from feedback.models import ReviewAttempt
from tests.factories import client_for
from tutor.kernel.fencing import fence

ASK_STAFF = "Ask staff to check A3 before you go on."
EVIDENCE = {
    "report": "first() returns undefined for an empty array.",
    "ci": {"status": "passed", "exit_code": 0, "log_tail": "3 passing"},
}


def review_reply(status: str, next_step: str) -> str:
    verdict = {"rubric_id": "A3", "status": status, "reason": "unclear", "evidence": "the report"}
    return json.dumps({"verdicts": [verdict], "next_step": next_step})


@pytest.fixture
def reviewed(task, student_client, fake_llm, django_capture_on_commit_callbacks):
    """A submission whose review left A3 NEED_REVIEW with the model's step
    pointing at A3 (A1 and A2 pass their checks)."""
    fake_llm.reply(review_reply("NEED_REVIEW", ASK_STAFF))
    with django_capture_on_commit_callbacks(execute=True):
        response = student_client.post("/api/submissions/", {"task": task.pk, "evidence": EVIDENCE})
    assert response.status_code == 201, response.content
    body = student_client.get(f"/api/submissions/{response.json()['id']}/").json()
    [attempt] = body["attempts"]
    assert attempt["result"]["overall"] == "NEED_REVIEW"
    assert attempt["result"]["next_step"] == ASK_STAFF
    return body


def give_verdict(staff, submission_id, criteria, **extra) -> dict:
    response = client_for(staff).post(
        f"/api/submissions/{submission_id}/verdicts/", {"criteria": criteria, **extra}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()


def system_message_after(student_client, task, fake_llm) -> str:
    fake_llm.reply("Well done.")
    session = student_client.post("/api/tutor/sessions/", {"task": task.pk}, format="json").json()
    response = student_client.post(
        f"/api/tutor/sessions/{session['id']}/messages/", {"content": "what next?"}, format="json"
    )
    assert response.status_code == 201, response.content
    messages = fake_llm.last_messages
    assert messages[0]["role"] == "system"
    return messages[0]["content"]


def expected_fence(submission: dict, verdict: dict, *, state, review_status, items, next_step) -> str:
    """The fenced block of SPEC §3, key order and serialization included."""
    block = {
        "state": state,
        "submission_id": submission["id"],
        "submission_seq": submission["submission_seq"],
        "attempt_id": verdict["id"],
        "attempt_seq": verdict["attempt_seq"],
        "attempt_status": "completed",
        "review_status": review_status,
        "rubric_version": "2026.1",
        "prompt_version": settings.REVIEW_PROMPT_VERSION,
        "engine_version": settings.REVIEW_ENGINE_VERSION,
        "model": verdict["model"],
        "reused": False,
        "snapshot_hash": submission["snapshot_hash"],
        "items": items,
        "next_step": next_step,
        "total_items": len(items),
        "omitted_count": 0,
        "truncated_fields": [],
    }
    return fence("REVIEW_FEEDBACK", json.dumps(block, ensure_ascii=False, separators=(",", ":")))


def item(rubric_id, status, criterion, reason, basis="staff", evidence="") -> dict:
    return {
        "rubric_id": rubric_id,
        "status": status,
        "criterion": criterion,
        "reason": reason,
        "evidence": evidence,
        "basis": basis,
    }


@pytest.mark.django_db
def test_verdict_passing_the_open_criterion_drops_the_old_step_from_the_system_message(
    task, staff, student_client, fake_llm, reviewed
):
    verdict = give_verdict(
        staff, reviewed["id"], [{"rubric_id": "A3", "status": "PASS", "reason": "correct"}]
    )

    system = system_message_after(student_client, task, fake_llm)

    assert verdict["result"]["overall"] == "PASS"
    assert verdict["result"]["next_step"] == ""
    expected = expected_fence(reviewed, verdict, state="passed", review_status="PASS", items=[], next_step="")
    assert expected in system
    # The old step appears nowhere the model could read it.
    assert "Ask staff" not in system


@pytest.mark.django_db
def test_verdict_failing_another_criterion_drops_a_step_about_the_settled_one(
    task, staff, student_client, fake_llm, reviewed
):
    verdict = give_verdict(
        staff,
        reviewed["id"],
        [
            {"rubric_id": "A3", "status": "PASS", "reason": "correct"},
            {"rubric_id": "A2", "status": "FAIL", "reason": "the report copies the docs"},
        ],
    )

    system = system_message_after(student_client, task, fake_llm)

    failing = item("A2", "FAIL", "Report names first and undefined", "the report copies the docs")
    expected = expected_fence(
        reviewed, verdict, state="current", review_status="FAIL", items=[failing], next_step=""
    )
    assert expected in system
    assert ASK_STAFF not in system


@pytest.mark.django_db
def test_verdict_leaving_the_named_criterion_open_keeps_the_step(
    task, staff, student_client, fake_llm, reviewed
):
    verdict = give_verdict(staff, reviewed["id"], [{"rubric_id": "A2", "status": "FAIL", "reason": "copied"}])

    system = system_message_after(student_client, task, fake_llm)

    items = [
        item("A2", "FAIL", "Report names first and undefined", "copied"),
        item("A3", "NEED_REVIEW", "Explanation is correct", "unclear", basis="model", evidence="the report"),
    ]
    expected = expected_fence(
        reviewed, verdict, state="current", review_status="FAIL", items=items, next_step=ASK_STAFF
    )
    assert expected in system


@pytest.mark.django_db
def test_the_staff_members_own_step_reaches_the_model(task, staff, student_client, fake_llm, reviewed):
    verdict = give_verdict(
        staff,
        reviewed["id"],
        [{"rubric_id": "A3", "status": "PASS", "reason": "correct"}],
        next_step="Try the empty-array case in a test.",
    )

    system = system_message_after(student_client, task, fake_llm)

    expected = expected_fence(
        reviewed,
        verdict,
        state="passed",
        review_status="PASS",
        items=[],
        next_step="Try the empty-array case in a test.",
    )
    assert expected in system
    assert (
        ReviewAttempt.objects.get(pk=verdict["id"]).result["next_step"]
        == "Try the empty-array case in a test."
    )
