"""From a verified fix to a later student's tutor request (SPEC §6), as a
course would run it: everything through the HTTP API, reviews in the eager
worker, the offline tutor (its recorded request is what a model would get)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from lessons.models import Lesson
from tests.factories import client_for, enroll
from tests.lessons.conftest import make_lesson
from tutor.models import ModelCall

REPORT = "first() returns undefined for an empty array."
FAILING_CI = {"status": "failed", "exit_code": 1, "log_tail": "1 failing\n  first([]) should be undefined"}
PASSING_CI = {"status": "passed", "exit_code": 0, "log_tail": "3 passing"}
TASK_TAGS = ["javascript", "docs"]


@pytest.fixture(autouse=True)
def offline(settings):
    settings.TUTOR_LLM_BASE_URL = None
    settings.TUTOR_LLM_MODEL = "offline"


def ci_submission(client, task, student, ci, capture):
    with capture(execute=True):  # the review runs after the commit, as in production
        response = client.post(
            "/api/submissions/",
            {"task": str(task.pk), "student": student.username, "evidence": {"report": REPORT, "ci": ci}},
            format="json",
        )
    assert response.status_code == 201, response.content
    return response.json()


@pytest.mark.django_db
def test_a_fixed_ci_failure_becomes_a_lesson_a_later_student_gets_and_the_trace_explains_the_rest(
    course, task, student, service, staff_client, django_capture_on_commit_callbacks
):
    ci = client_for(service)

    # 1. Alice's CI fails, then passes on her next submission: one draft, pending.
    ci_submission(ci, task, student, FAILING_CI, django_capture_on_commit_callbacks)
    ci_submission(ci, task, student, PASSING_CI, django_capture_on_commit_callbacks)
    drafts = staff_client.get("/api/lessons/", {"status": "pending"}).json()["results"]
    assert [(d["source"], d["kind"], d["tags"]) for d in drafts] == [("review", "guardrail", TASK_TAGS)]
    draft = drafts[0]
    assert draft["symptoms"] == ["CI failed with exit code 1", "1 failing", "first([]) should be undefined"]

    # Nothing reaches a tutor before a person approves and injects it.
    bob = enroll(course, "bob")
    bob_client = client_for(bob)
    ci_submission(ci, task, bob, FAILING_CI, django_capture_on_commit_callbacks)
    assert bob_client.get("/api/tutor/context/", {"task": task.pk}).json()["lessons"] == {"recalled": []}

    # 2. Staff approve and inject it.
    assert staff_client.post(f"/api/lessons/{draft['id']}/approve/", {}, format="json").status_code == 200
    assert staff_client.post(f"/api/lessons/{draft['id']}/inject/", {}, format="json").status_code == 200

    # Other lessons the trace has to account for.
    huge = make_lesson(course=course, title="HUGE", tags=TASK_TAGS, tokens=900)
    queued = make_lesson(
        course=course, title="QUEUED", tags=TASK_TAGS, symptoms=["1 failing"], status="pending"
    )
    stale = make_lesson(
        course=course, title="STALE", tags=TASK_TAGS, review_by=timezone.localdate() - timedelta(days=1)
    )
    unrelated = make_lesson(course=course, title="UNRELATED", tags=["css"])

    # 3. Bob, whose CI fails the same way, asks the tutor.
    session = bob_client.post("/api/tutor/sessions/", {"task": str(task.pk)}, format="json").json()["id"]
    sent = bob_client.post(
        f"/api/tutor/sessions/{session}/messages/",
        {"content": "Why does my CI fail?"},
        format="json",
        HTTP_X_CORRELATION_ID="bob-1",
    )
    assert sent.status_code == 201, sent.content
    assert sent.json()["context_meta"]["lesson_ids"] == [draft["id"]]
    request = ModelCall.objects.get(purpose="tutor", correlation_id="bob-1").request_messages
    lesson = Lesson.objects.get(pk=draft["id"])
    assert request[0]["role"] == "system"
    assert request[0]["content"].endswith(
        f"<<<BEGIN LESSONS>>>\n{lesson.title}\n{lesson.body}\n<<<END LESSONS>>>"
    )
    assert "HUGE" not in request[0]["content"] and "QUEUED" not in request[0]["content"]

    # 4. Staff see why each other lesson was not used.
    [trace] = staff_client.get("/api/lessons/traces/", {"correlation_id": "bob-1"}).json()["results"]
    assert trace["context"]["symptoms"] == [
        "1 failing",
        "ci failed with exit code 1",
        "first([]) should be undefined",
    ]
    decisions = {line["lesson"]: (line["decision"], line["score"]) for line in trace["lines"]}
    assert decisions == {
        draft["id"]: ("recalled", 1.0),  # 0.5·2/2 + 0.3·3/3 + 0.2·1
        str(huge.pk): ("budget", 0.7),  # 900 tokens > 800
        str(queued.pk): ("filtered_status", None),
        str(stale.pk): ("filtered_expired", None),
        str(unrelated.pk): ("floor", 0.2),  # could never reach the floor: listed all the same
    }
    assert trace["omitted"] == {}
    assert trace["recalled"] == [draft["id"]]
    lesson.refresh_from_db()
    assert (lesson.hit_count, lesson.last_hit) == (1, timezone.localdate())
