"""Lesson writes of concurrent transactions do not lock each other unless
they write the same lesson (SPEC §6 lesson states, §10): nothing kept per
status or course is locked by a lesson's move, and the lesson tables load
from a dump. Migration 0005 dropped the trigger-kept ``LessonStageCount``
that did (0004); migrating back and forth keeps its counts right."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest
from django.db import connection
from django.utils import timezone

from lessons.models import Lesson, LessonStatus
from tests.concurrency import (
    assert_reloads_from_dump,
    concurrent_writers,
    interleave,
    migrate,
    table_exists,
    table_triggers,
)
from tests.factories import make_course
from tests.lessons.conftest import make_lesson

COUNTS = "lessons_lessonstagecount"


def moved(lesson: Lesson, status: str):
    fields = {"injected_at": timezone.now()} if status == LessonStatus.INJECTED else {}
    return lambda: Lesson.objects.filter(pk=lesson.pk).update(status=status, **fields)


@concurrent_writers
@pytest.mark.django_db(transaction=True)
def test_crossing_status_moves_of_two_transactions_both_commit():
    """Each transaction moves two of a course's lessons between statuses
    that the other's moves also touch (pending/approved -> injected/
    quarantined, crosswise): no row they share is locked, so both commit.
    With 0004's triggers this deadlocked on PostgreSQL every time."""
    course = make_course("crossing")
    day = timezone.localdate()
    pending = [make_lesson(course=course, status=LessonStatus.PENDING, review_by=day) for _ in range(2)]
    approved = [make_lesson(course=course, status=LessonStatus.APPROVED, review_by=day) for _ in range(2)]

    errors = interleave(
        [moved(pending[0], LessonStatus.INJECTED), moved(approved[0], LessonStatus.INJECTED)],
        [moved(approved[1], LessonStatus.QUARANTINED), moved(pending[1], LessonStatus.QUARANTINED)],
    )

    assert errors == [None, None]
    assert Counter(Lesson.objects.values_list("status", flat=True)) == {"injected": 2, "quarantined": 2}


@concurrent_writers
@pytest.mark.django_db(transaction=True)
def test_two_transactions_moving_lessons_out_of_one_status_do_not_wait_on_each_other():
    """A long write of a course's lessons (an import, a batch of approvals)
    holds nothing the course's other lesson writes need: here each
    transaction moves a pending lesson of the same course and review date,
    then edits another; neither waits for the other's commit (a wait fails
    the statement, ``interleave``'s lock_timeout). With 0004's triggers the
    second waited on the first's counter row."""
    course = make_course("same-status")
    day = timezone.localdate()
    pending = [make_lesson(course=course, status=LessonStatus.PENDING, review_by=day) for _ in range(2)]
    edited = [make_lesson(course=course, review_by=day) for _ in range(2)]

    def retitled(lesson):
        return lambda: Lesson.objects.filter(pk=lesson.pk).update(title=f"{lesson.title} (edited)")

    errors = interleave(
        [moved(pending[0], LessonStatus.INJECTED), retitled(edited[0])],
        [moved(pending[1], LessonStatus.QUARANTINED), retitled(edited[1])],
    )

    assert errors == [None, None]
    assert Lesson.objects.filter(title__endswith="(edited)").count() == 2


@pytest.mark.django_db(transaction=True)
def test_the_lessons_load_from_their_own_dump(tmp_path):
    course = make_course("dumped")
    for status in (LessonStatus.PENDING, LessonStatus.INJECTED, LessonStatus.INJECTED):
        make_lesson(course=course, status=status, tags=["ci"])
    make_lesson(status=LessonStatus.PENDING)  # a global lesson

    assert_reloads_from_dump(
        "lessons", Lesson.objects.all(), ["id", "course_id", "status", "review_by"], tmp_path
    )


@pytest.mark.django_db(transaction=True)
def test_migrating_back_to_the_trigger_kept_counts_refills_them_and_forward_drops_them():
    assert not table_exists(COUNTS)
    assert table_triggers("lessons_lesson") == set()
    course = make_course("mig-back")
    day = timezone.localdate()
    for status in ("injected", "injected", "pending"):
        make_lesson(course=course, status=status, review_by=day)
    make_lesson(status="pending", review_by=day)

    try:
        old = migrate("lessons", "0004_stage_counts")
        counts = old.get_model("lessons", "LessonStageCount").objects
        stored = {(row.scope, row.status, row.review_by): row.lesson_count for row in counts.all()}
        assert stored == {
            (course.pk, "injected", day): 2,
            (course.pk, "pending", day): 1,
            (uuid.UUID(int=0), "pending", day): 1,  # the global scope
        }
        # 0004 keeps them by triggers again
        assert table_triggers("lessons_lesson") == (
            {"lessons_stage_count_write", "lessons_stage_count_move"}
            if connection.vendor == "postgresql"
            else {"lessons_stage_count_insert", "lessons_stage_count_delete", "lessons_stage_count_move"}
        )
    finally:
        migrate("lessons", None)

    assert not table_exists(COUNTS)
    assert table_triggers("lessons_lesson") == set()
    make_lesson(course=course, status="injected")  # no trigger writes to the dropped table
    assert Lesson.objects.count() == 5
