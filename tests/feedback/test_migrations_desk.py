"""Attempts and submissions stored before the desk (migrations 0006, 0007)
get what the desk and the student's numbers read: the criteria waiting for
staff -- written through the immutability trigger, which stays in place --
and each student's submission numbers, on the database the suite runs on."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from feedback.models import ReviewAttempt, Submission

BEFORE = [("feedback", "0005_evidence_summary_and_delete_guard")]
AFTER = [("feedback", "0007_submission_number")]


def entry(rubric_id, status, basis, kind="acceptance"):
    return {
        "rubric_id": rubric_id,
        "criterion": rubric_id,
        "kind": kind,
        "status": status,
        "reason": "",
        "evidence": "",
        "basis": basis,
    }


@pytest.mark.django_db(transaction=True)
def test_migrating_marks_waiting_criteria_of_terminal_attempts_and_numbers_submissions():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    course = old.get_model("tutor", "Course").objects.create(slug="mig-101", title="Migrated")
    task = old.get_model("tutor", "Task").objects.create(
        course=course, slug="t1", title="T", goal="g", steps=[], materials=""
    )
    rubric = old.get_model("tutor", "Rubric").objects.create(
        task=task, version="1", content_hash="h", criteria=[]
    )
    users = [old.get_model("auth", "User").objects.create(username=name) for name in ("ann", "ben")]
    OldSubmission = old.get_model("feedback", "Submission")
    OldAttempt = old.get_model("feedback", "ReviewAttempt")
    subs, previous = [], {}
    for seq, user in enumerate([users[0], users[1], users[0], users[0]], start=1):
        sub = OldSubmission.objects.create(
            student=user,
            task=task,
            submission_seq=seq,
            previous=previous.get(user.pk),
            evidence={"report": "r"},
            snapshot_hash=f"h{seq}",
            ci_source="student",
            submitted_by=user,
        )
        previous[user.pk] = sub
        subs.append(sub)
    waiting = {
        "overall": "FAIL",
        "criteria": [
            entry("A1", "FAIL", "ci"),
            entry("A3", "NEED_REVIEW", "none"),
            entry("L1", "PASS", "check"),
        ],
        "next_step": "",
    }
    settled = {"overall": "PASS", "criteria": [entry("A1", "PASS", "ci")], "next_step": ""}
    stamp = {
        "rubric": rubric,
        "rubric_version": "1",
        "rubric_hash": "h",
        "prompt_version": "p",
        "engine_version": "e",
    }
    now = timezone.now()
    for seq, (sub, result) in enumerate([(subs[0], waiting), (subs[1], settled)], start=1):
        OldAttempt.objects.create(
            submission=sub, attempt_seq=seq, status="completed", result=result, finished_at=now, **stamp
        )

    MigrationExecutor(connection).migrate(AFTER)

    marks = dict(ReviewAttempt.objects.values_list("attempt_seq", "awaiting_staff"))
    assert marks == {1: '"A3"', 2: None}
    numbers = dict(Submission.objects.values_list("submission_seq", "number"))
    assert numbers == {1: 1, 2: 1, 3: 2, 4: 3}
    # The trigger is back: a terminal attempt still refuses any change.
    with pytest.raises(IntegrityError), transaction.atomic():
        ReviewAttempt.objects.filter(attempt_seq=1).update(awaiting_staff=None)
    MigrationExecutor(connection).migrate(MigrationExecutor(connection).loader.graph.leaf_nodes("feedback"))
