"""Lessons past their ``review_by`` (seed 003: every lesson has a review
date). Recall already filters them out (``filtered_expired``); this report is
how staff find them -- the periodic task logs it per course, the command
prints it. Nothing here re-injects or extends a lesson: that is a staff
decision (``inject`` with a new ``review_by``, or ``retire``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import date

from django.utils import timezone

from lessons.selectors import lessons_past_review

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ReviewDue:
    lesson_id: str
    course: str  # slug, or "(global)"
    title: str
    status: str
    review_by: date
    days_over: int


def lessons_review_due(*, today: date | None = None, course_ids=None) -> list[ReviewDue]:
    today = today or timezone.localdate()
    return [
        ReviewDue(
            lesson_id=str(lesson.pk),
            course=lesson.course.slug if lesson.course_id else "(global)",
            title=lesson.title,
            status=lesson.status,
            review_by=lesson.review_by,
            days_over=(today - lesson.review_by).days,
        )
        for lesson in lessons_past_review(today=today, course_ids=course_ids).only(
            "id", "title", "status", "review_by", "course__slug"
        )
    ]


def log_review_due(*, today: date | None = None) -> dict[str, int]:
    """One log line per course with lessons past review (count and ids)."""
    per_course: dict[str, list[str]] = {}
    for item in lessons_review_due(today=today):
        per_course.setdefault(item.course, []).append(item.lesson_id)
    for course, ids in sorted(per_course.items()):
        log.warning("lessons past review_by in %s: %d (%s)", course, len(ids), ", ".join(ids[:20]))
    return {course: len(ids) for course, ids in per_course.items()}
