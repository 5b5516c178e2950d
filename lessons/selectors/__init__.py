"""Reads of the lessons app (SPEC §6, §8): the lists staff work from, and
recall (``statement``: the SQL reader of the library; ``rows``: what it
shares with the snapshots).
"""

from __future__ import annotations

from datetime import date

from django.db.models import Q, QuerySet
from django.utils import timezone

from lessons import access
from lessons.models import Lesson, LessonStatus, RecalledLesson, RecallTrace, SkillCandidate
from lessons.selectors.recalled import recalled_now
from lessons.selectors.statement import lessons_recall
from lessons.text import jaccard

__all__ = [
    "lesson_recalled_for",
    "lessons_past_review",
    "lessons_recall",
    "recalled_now",
    "similar_lessons",
    "visible_lessons",
    "visible_skill_candidates",
    "visible_traces",
]


# --- lists for staff ---------------------------------------------------------------------


def visible_lessons(user) -> QuerySet[Lesson]:
    """Lessons staff may read: their courses' and the global ones."""
    qs = Lesson.objects.select_related("course")
    if user.is_superuser:
        return qs
    return qs.filter(Q(course__isnull=True) | Q(course_id__in=access.staff_course_ids(user)))


def visible_traces(user) -> QuerySet[RecallTrace]:
    qs = RecallTrace.objects.select_related("course", "student", "task")
    if user.is_superuser:
        return qs
    return qs.filter(course_id__in=access.staff_course_ids(user))


def visible_skill_candidates(user) -> QuerySet[SkillCandidate]:
    qs = SkillCandidate.objects.select_related("lesson", "lesson__course")
    if user.is_superuser:
        return qs
    return qs.filter(Q(lesson__course__isnull=True) | Q(lesson__course_id__in=access.staff_course_ids(user)))


def lessons_past_review(*, today: date | None = None, course_ids=None) -> QuerySet[Lesson]:
    """Lessons whose ``review_by`` has passed while they are, or could again
    be, in use (approved, injected, quarantined): recall filters them out
    (``filtered_expired``) until staff act. Listed, never re-injected."""
    today = today or timezone.localdate()
    qs = Lesson.objects.filter(
        review_by__lt=today,
        status__in=[LessonStatus.APPROVED, LessonStatus.INJECTED, LessonStatus.QUARANTINED],
    ).select_related("course")
    if course_ids is not None:
        qs = qs.filter(course_id__in=list(course_ids))
    return qs.order_by("review_by", "id")


def similar_lessons(lesson: Lesson, *, threshold: float = 0.5, limit: int = 5) -> list[tuple[Lesson, float]]:
    """Other lessons of the same scope whose text overlaps ``lesson``'s
    (token Jaccard ≥ ``threshold``), most similar first: what a reviewer
    checks before approving a draft (SPEC §8)."""
    mine = set(lesson.shingles)
    if not mine:
        return []
    low, high = int(len(mine) * threshold), int(len(mine) / threshold) + 1
    scope = Q(course__isnull=True) | Q(course_id=lesson.course_id) if lesson.course_id else Q()
    others = (
        Lesson.objects.filter(scope, shingle_count__gte=low, shingle_count__lte=high)
        .exclude(pk=lesson.pk)
        .only("id", "title", "status", "shingles", "course_id")
    )
    found = [(other, jaccard(mine, other.shingles)) for other in others]
    found = [pair for pair in found if pair[1] >= threshold]
    found.sort(key=lambda pair: (-pair[1], str(pair[0].pk)))
    return found[:limit]


def lesson_recalled_for(*, lesson_id, student_id, task_id) -> bool:
    """Whether a stored recall trace shows ``lesson`` recalled into a tutor
    request of this student and task, at any time (SPEC §6 deltas)."""
    return RecalledLesson.objects.filter(
        lesson_id=lesson_id, trace__student_id=student_id, trace__task_id=task_id
    ).exists()
