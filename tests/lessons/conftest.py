"""Factories and fixtures of the lessons tests."""

from __future__ import annotations

import itertools
import uuid
from datetime import date, timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from lessons.models import Lesson, LessonKind, LessonSource, LessonStatus, RecallTrace
from lessons.services.store import lesson_insert
from tests.factories import client_for, enroll, make_course, make_task
from tutor.models import Enrollment

_n = itertools.count(1)


def lesson_id(n: int) -> uuid.UUID:
    """Ids that sort as their number: ties in recall are broken by id."""
    return uuid.UUID(int=n)


def make_lesson(
    *,
    course=None,
    title: str | None = None,
    body: str = "Check the escaping of the comparison output.",
    tags=(),
    symptoms=(),
    status: str = LessonStatus.INJECTED,
    last_hit: date | None = None,
    review_by: date | None = None,
    tokens: int | None = 100,
    hit_count: int = 0,
    kind: str = LessonKind.NOTE,
    source: str = LessonSource.MANUAL,
    **fields,
) -> Lesson:
    if status == LessonStatus.REJECTED:
        fields.setdefault("reject_reason", "duplicate")
    with transaction.atomic():
        return lesson_insert(
            course_id=course.pk if course is not None else None,
            title=title or f"lesson {next(_n)}",
            body=body,
            tags=list(tags),
            symptoms=list(symptoms),
            kind=kind,
            source=source,
            status=status,
            review_by=review_by or timezone.localdate() + timedelta(days=60),
            tokens=tokens,
            hit_count=hit_count,
            last_hit=last_hit,
            **fields,
        )


@pytest.fixture
def other_course(db):
    return make_course("other-101")


@pytest.fixture
def other_staff(other_course):
    return enroll(other_course, "other-teacher", Enrollment.Role.STAFF)


@pytest.fixture
def other_staff_client(other_staff):
    return client_for(other_staff)


@pytest.fixture
def superuser(db):
    from tests.factories import make_user

    return make_user("root", is_staff=True, is_superuser=True)


@pytest.fixture
def superuser_client(superuser):
    return client_for(superuser)


@pytest.fixture
def other_task(other_course):
    return make_task(other_course)


def bulk_lessons(course, count: int, *, tags=("unrelated",), symptoms=("nothing like it",), **fields) -> None:
    """``count`` injected lessons with their recall keys, inserted in bulk."""
    from lessons.models import LessonKey
    from lessons.services.store import lesson_keys

    today = timezone.localdate()
    lessons = [
        Lesson(
            course=course,
            title=f"bulk lesson {i}",
            body="bulk body",
            tags=list(tags),
            symptoms=list(symptoms),
            status=LessonStatus.INJECTED,
            source=LessonSource.IMPORT,
            review_by=today + timedelta(days=30),
            tokens=50,
            injected_at=timezone.now(),
            **fields,
        )
        for i in range(count)
    ]
    Lesson.objects.bulk_create(lessons, batch_size=500)
    LessonKey.objects.bulk_create((k for lesson in lessons for k in lesson_keys(lesson)), batch_size=1000)


def errors(response) -> dict:
    """The error shape's field messages, ``{attr: detail}``."""
    return {e["attr"]: e["detail"] for e in response.json()["errors"]}


def make_trace(*, student, task, correlation_id: str = "c", **fields) -> RecallTrace:
    """A stored recall trace of ``student`` on ``task`` with nothing in it
    unless ``fields`` say so."""
    blank = {"context": {}, "params": {}, "lines": [], "counts": {}, "omitted": {}, "used_tokens": 0}
    return RecallTrace.objects.create(
        correlation_id=correlation_id,
        course=task.course,
        student=student,
        task=task,
        budget_tokens=800,
        **{**blank, **fields},
    )
