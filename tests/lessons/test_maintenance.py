"""Lessons past their review date (seed 003 review_by): a periodic task and a
command list them for staff; neither changes a lesson, and recall keeps them out."""

from __future__ import annotations

import logging
from datetime import timedelta
from io import StringIO

import pytest
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from lessons.models import LessonStatus
from lessons.tasks import report_review_due
from tests.lessons.conftest import make_lesson


@pytest.fixture
def library(course, other_course):
    past = timezone.localdate() - timedelta(days=3)
    return {
        "injected": make_lesson(course=course, title="injected past", review_by=past),
        "approved": make_lesson(
            course=course, title="approved past", review_by=past, status=LessonStatus.APPROVED
        ),
        "quarantined": make_lesson(course=other_course, title="q past", review_by=past, status="quarantined"),
        "global": make_lesson(course=None, title="global past", review_by=past),
        "retired": make_lesson(
            course=course, title="retired past", review_by=past, status=LessonStatus.RETIRED
        ),
        "pending": make_lesson(
            course=course, title="pending past", review_by=past, status=LessonStatus.PENDING
        ),
        "current": make_lesson(course=course, title="current", review_by=timezone.localdate()),
    }


@pytest.mark.django_db
def test_the_command_lists_lessons_past_review_and_changes_nothing(library):
    out, err = StringIO(), StringIO()

    call_command("lessons_review_due", stdout=out, stderr=err)

    text = out.getvalue()
    for title in ("injected past", "approved past", "q past", "global past"):
        assert title in text
    for title in ("retired past", "pending past", "current"):
        assert title not in text
    assert "4 lessons past review_by" in err.getvalue()
    assert "(global)" in text and "    3 " in text  # days over
    for lesson in library.values():
        before = lesson.status
        lesson.refresh_from_db()
        assert lesson.status == before


@pytest.mark.django_db
def test_the_command_filters_by_course_and_refuses_an_unknown_one(library):
    out = StringIO()
    call_command("lessons_review_due", "--course", "other-101", stdout=out, stderr=StringIO())

    assert "q past" in out.getvalue() and "injected past" not in out.getvalue()
    with pytest.raises(CommandError, match="no course with slug 'nope'"):
        call_command("lessons_review_due", "--course", "nope", stdout=StringIO(), stderr=StringIO())


@pytest.mark.django_db
def test_nothing_due_says_so(course):
    make_lesson(course=course)
    out = StringIO()

    call_command("lessons_review_due", stdout=out, stderr=StringIO())

    assert out.getvalue().strip() == "no lessons past review_by"


@pytest.mark.django_db
def test_the_periodic_task_logs_per_course_and_never_injects(library, caplog):
    with caplog.at_level(logging.WARNING, logger="lessons.maintenance"):
        counts = report_review_due.delay().get()

    assert counts == {"se-101": 2, "other-101": 1, "(global)": 1}
    assert any("lessons past review_by in se-101: 2" in r.getMessage() for r in caplog.records)
    library["approved"].refresh_from_db()
    assert library["approved"].status == "approved"
    assert settings.CELERY_BEAT_SCHEDULE["lessons-review-due"]["task"] == "lessons.tasks.report_review_due"
