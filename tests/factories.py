"""Factories for tests: real rows through the real services where they exist."""

from __future__ import annotations

import copy
import itertools

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from feedback.evidence import normalize_evidence, snapshot_hash
from feedback.models import AttemptStatus, ReviewAttempt, Submission
from feedback.results import aggregate_overall, awaiting_staff_marks, model_failed_marks
from feedback.services.intake import submission_number
from feedback.services.sequences import next_seq
from feedback.versions import current_versions
from tutor.coursefile import course_import, validate_course
from tutor.models import Course, Enrollment, Task
from tutor.services import enrollment_set

_seq = itertools.count(1)

DEFAULT_CRITERIA = [
    {"id": "A1", "kind": "acceptance", "text": "CI passes", "check": {"type": "ci_passed"}},
    {
        "id": "A2",
        "kind": "acceptance",
        "text": "Report names first and undefined",
        "check": {"type": "contains", "field": "report", "all": ["first", "undefined"]},
    },
    {"id": "A3", "kind": "acceptance", "text": "Explanation is correct", "check": {"type": "semantic"}},
    {"id": "L1", "kind": "learning", "text": "Reflects on edge cases"},
]


def course_data(slug: str | None = None, *, tasks: int = 1, criteria=None, version="2026.1") -> dict:
    slug = slug or f"course-{next(_seq)}"
    return {
        "slug": slug,
        "title": f"Course {slug}",
        "tasks": [
            {
                "slug": f"t{i + 1}",
                "title": f"Task {i + 1}",
                "goal": f"Goal of task {i + 1}",
                "steps": ["Read", "Write", "Check"],
                "materials": "Some materials",
                "tags": ["javascript", "docs"],
                # A copy per task: a test that edits one task's criteria must not
                # edit the others' nor this module's default.
                "rubric": {"version": version, "criteria": copy.deepcopy(criteria or DEFAULT_CRITERIA)},
            }
            for i in range(tasks)
        ],
    }


def make_course(slug: str | None = None, **kwargs) -> Course:
    return course_import(spec=validate_course(course_data(slug, **kwargs))).course


def make_task(course: Course | None = None, slug: str = "t1") -> Task:
    course = course or make_course()
    return Task.objects.select_related("current_rubric", "course").get(course=course, slug=slug)


def make_user(username: str | None = None, **fields):
    username = username or f"user{next(_seq)}"
    return get_user_model().objects.create_user(username=username, password="pw-" + username, **fields)


def enroll(course: Course, username: str | None = None, role: str = Enrollment.Role.STUDENT):
    username = username or f"{role}{next(_seq)}"
    user, _ = enrollment_set(course=course, username=username, role=role, create=True)
    return user


def client_for(user) -> APIClient:
    client = APIClient()
    token, _ = Token.objects.get_or_create(user=user)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


# --- feedback rows with chosen states -------------------------------------------


def make_submission(student, task: Task, evidence: dict | None = None, *, ci_source: str = "student"):
    """A submission stored without queueing a review, numbered like a real one,
    for tests that choose its attempts themselves."""
    evidence = normalize_evidence(evidence or {"report": f"report {next(_seq)}"})
    with transaction.atomic():
        previous = Submission.objects.filter(student=student, task=task).order_by("-submission_seq").first()
        return Submission.objects.create(
            student=student,
            task=task,
            submission_seq=next_seq("submission"),
            previous=previous,
            number=submission_number(previous),
            evidence=evidence,
            snapshot_hash=snapshot_hash(evidence),
            ci_source=ci_source,
            submitted_by=student,
        )


def criterion_entry(
    rubric_id: str,
    status: str,
    *,
    kind: str = "acceptance",
    criterion: str | None = None,
    reason: str = "",
    evidence: str = "",
    basis: str = "check",
) -> dict:
    """One criterion of a review result (SPEC §2 result shape)."""
    return {
        "rubric_id": rubric_id,
        "criterion": criterion if criterion is not None else f"Criterion {rubric_id}",
        "kind": kind,
        "status": status,
        "reason": reason or f"{rubric_id} is {status}",
        "evidence": evidence,
        "basis": basis,
    }


def review_result(criteria: list[dict], *, next_step: str = "Fix the first failing item.") -> dict:
    return {"overall": aggregate_overall(criteria), "criteria": criteria, "next_step": next_step}


def make_attempt(
    submission,
    status: str = AttemptStatus.COMPLETED,
    result: dict | None = None,
    *,
    created_at=None,
    reused_from=None,
    **versions,
):
    """A review attempt with a chosen status and result, numbered like a real one.

    ``versions`` overrides the stamped ``rubric_version``, ``rubric_hash``,
    ``prompt_version``, ``engine_version`` or ``model``. A completed attempt
    without a ``result`` passes every criterion of the task's current rubric.
    """
    stamp = {**current_versions(submission.task).stamp(), **versions}
    if status == AttemptStatus.COMPLETED and result is None:
        result = review_result(
            [criterion_entry(c["id"], "PASS", kind=c["kind"]) for c in stamp["rubric"].criteria]
        )
    with transaction.atomic():
        attempt = ReviewAttempt.objects.create(
            submission=submission, attempt_seq=next_seq("attempt"), reused_from=reused_from, **stamp
        )
        # What a real terminal write stores with the result (worker.attempt_complete).
        changes: dict = {
            "result": result,
            "model_failed": model_failed_marks(result),
            "awaiting_staff": awaiting_staff_marks(result),
        }
        if created_at is not None:
            changes["created_at"] = created_at
        if status != AttemptStatus.QUEUED:
            changes["status"] = status
        if status in (AttemptStatus.COMPLETED, AttemptStatus.UNAVAILABLE, AttemptStatus.INVALID):
            changes["finished_at"] = timezone.now()
        # One UPDATE from queued: the immutability trigger refuses any change
        # once the attempt is terminal.
        ReviewAttempt.objects.filter(pk=attempt.pk).update(**changes)
    attempt.refresh_from_db()
    return attempt
