"""Retention per kind of data (SPEC §13), on a frozen clock: rows made 400
days ago through the real services go, rows of 10 days ago stay; a course's
override wins; audit events keep what happened and their counts, not who;
one audit event per run with the counts."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
import time_machine
from django.core.management import call_command
from django.utils import timezone

from corrections.models import MemoryItem
from feedback.models import Submission
from lessons.models import RecallTrace
from tests.factories import client_for, enroll, make_attempt, make_course, make_submission, make_task
from tutor.models import AuditEvent, ModelCall, RetentionOverride, TutorMessage
from tutor.rights.retention import retention_apply

pytestmark = pytest.mark.django_db

NOW = timezone.now().replace(microsecond=0)
OLD = NOW - timedelta(days=400)
RECENT = NOW - timedelta(days=10)


@pytest.fixture(autouse=True)
def thirty_days(settings):
    for kind in ("MESSAGES", "MEMORY", "RECALL_TRACES", "MODEL_CALLS", "SUBMISSIONS", "AUDIT"):
        setattr(settings, f"RETENTION_{kind}_DAYS", 30)


def a_turn(client, task, capture, words: str) -> None:
    session = client.post("/api/tutor/sessions/", {"task": str(task.pk)}, format="json").json()["id"]
    with capture(execute=True):
        response = client.post(f"/api/tutor/sessions/{session}/messages/", {"content": words}, format="json")
    assert response.status_code == 201, response.content


def a_life(course, name, capture, when):
    task = make_task(course)
    with time_machine.travel(when, tick=False):
        student = enroll(course, name)
        a_turn(client_for(student), task, capture, f"I prefer short answers, says {name}")
        make_attempt(make_submission(student, task))
    return student


def held(student) -> dict:
    return {
        "messages": TutorMessage.objects.filter(session__student=student).count(),
        "memory": MemoryItem.objects.filter(user=student).count(),
        "recall_traces": RecallTrace.objects.filter(student=student).count(),
        "model_calls": ModelCall.objects.filter(student=student).count(),
        "submissions": Submission.objects.filter(student=student).count(),
    }


def test_what_is_past_its_time_goes_and_the_rest_stays(course, django_capture_on_commit_callbacks):
    old = a_life(course, "old-olga", django_capture_on_commit_callbacks, OLD)
    recent = a_life(course, "recent-rita", django_capture_on_commit_callbacks, RECENT)
    assert held(old) == {"messages": 2, "memory": 1, "recall_traces": 1, "model_calls": 1, "submissions": 1}
    kept = held(recent)
    old_events = list(
        AuditEvent.objects.filter(created_at__lt=NOW - timedelta(days=30)).values_list("pk", flat=True)
    )
    assert old_events

    with time_machine.travel(NOW, tick=False):
        planned = retention_apply(dry_run=True)
        assert held(old)["messages"] == 2  # a dry run changes nothing
        counts = retention_apply()

    assert counts == planned
    assert held(old) == {"messages": 0, "memory": 0, "recall_traces": 0, "model_calls": 0, "submissions": 0}
    assert held(recent) == kept
    assert counts["messages"] == {"default": 2} and counts["submissions"] == {"default": 1}
    assert counts["audit"]["default"] == len(old_events)
    for event in AuditEvent.objects.filter(pk__in=old_events):
        assert (event.actor_id, event.actor_label, event.reason, event.target_repr) == (
            None,
            "(expired)",
            "",
            "",
        )
        assert all(not isinstance(v, str) for v in event.extra.values())
    [run] = AuditEvent.objects.filter(event="retention_applied")
    assert run.extra["counts"] == counts
    # The next run finds nothing more to do.
    with time_machine.travel(NOW, tick=False):
        assert retention_apply() == {}


def test_a_course_override_wins_over_the_setting(course, django_capture_on_commit_callbacks):
    other = make_course("kept-course")
    RetentionOverride.objects.create(course=other, kind="messages", days=0)  # kept
    RetentionOverride.objects.create(course=course, kind="memory", days=500)  # longer than 400 days
    here = a_life(course, "here-hana", django_capture_on_commit_callbacks, OLD)
    there = a_life(other, "there-theo", django_capture_on_commit_callbacks, OLD)

    with time_machine.travel(NOW, tick=False):
        counts = retention_apply()

    assert held(here)["messages"] == 0 and held(there)["messages"] == 2
    assert held(here)["memory"] == 1
    assert counts["messages"] == {"default": 2}


def test_the_command_goes_in_batches_with_a_progress_line(course, django_capture_on_commit_callbacks):
    a_life(course, "old-olga", django_capture_on_commit_callbacks, OLD)
    out, err = io.StringIO(), io.StringIO()
    with time_machine.travel(NOW, tick=False):
        call_command("retention_apply", "--dry-run", stdout=out, stderr=err)
        assert "messages default: would remove 2" in out.getvalue()
        out = io.StringIO()
        call_command("retention_apply", "--batch", "1", stdout=out, stderr=err)
    assert "messages default: removed 2" in out.getvalue()
    assert "messages default: 1" in err.getvalue() and "messages default: 2" in err.getvalue()


def test_zero_keeps_a_kind(settings, course, django_capture_on_commit_callbacks):
    settings.RETENTION_MESSAGES_DAYS = 0
    old = a_life(course, "old-olga", django_capture_on_commit_callbacks, OLD)
    with time_machine.travel(NOW, tick=False):
        counts = retention_apply()
    assert "messages" not in counts and held(old)["messages"] == 2


def test_one_run_expires_the_submissions_of_every_course(course, django_capture_on_commit_callbacks):
    """Submissions expire course by course: a run that stopped after the
    first course with expired histories left every other course's past their time."""
    other = make_course("second-course")
    first = a_life(course, "old-olga", django_capture_on_commit_callbacks, OLD)
    second = a_life(other, "old-oscar", django_capture_on_commit_callbacks, OLD)

    with time_machine.travel(NOW, tick=False):
        planned = retention_apply(dry_run=True)
        counts = retention_apply()

    assert (held(first)["submissions"], held(second)["submissions"]) == (0, 0)
    assert counts["submissions"] == planned["submissions"] == {"default": 2}
