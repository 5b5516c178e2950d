"""The per-scope lesson counts recall's trace reads (``LessonStageCount``,
SPEC §6 counts, §10): kept by database triggers, they equal a count of the
lessons themselves after every kind of write -- the ORM's save, queryset
updates and deletes, bulk inserts, a course's cascade, raw SQL -- and the
migration that adds them fills them from the lessons already stored."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from lessons.models import GLOBAL_SCOPE, Lesson, LessonStageCount, LessonStatus
from tests.factories import make_course
from tests.lessons.conftest import bulk_lessons, make_lesson
from tutor.models import Course


def stored() -> dict:
    return {
        (row.scope, row.status, row.review_by): row.lesson_count for row in LessonStageCount.objects.all()
    }


def counted() -> dict:
    """What the rows should say: the lessons counted one by one."""
    return dict(
        Counter(
            (lesson.course_id or GLOBAL_SCOPE, lesson.status, lesson.review_by)
            for lesson in Lesson.objects.only("course_id", "status", "review_by")
        )
    )


def assert_kept():
    assert stored() == counted()


@pytest.mark.django_db
def test_the_counts_follow_every_kind_of_lesson_write(course, other_course):
    today = timezone.localdate()
    soon, later = today + timedelta(days=10), today + timedelta(days=40)
    first = make_lesson(course=course, review_by=soon)
    make_lesson(course=course, review_by=soon)
    global_lesson = make_lesson(course=None, review_by=soon, status=LessonStatus.PENDING)
    bulk_lessons(course, 30)
    bulk_lessons(other_course, 5)
    doomed = Course.objects.create(slug="doomed-101", title="Doomed")  # no task: it can be deleted
    bulk_lessons(doomed, 4)
    assert_kept()
    assert stored()[(course.pk, LessonStatus.INJECTED, soon)] == 2
    assert stored()[(GLOBAL_SCOPE, LessonStatus.PENDING, soon)] == 1

    first.status = LessonStatus.QUARANTINED
    first.save()  # every column rewritten: only the moved lesson moves
    assert_kept()
    first.hit_count += 1
    first.save()  # no counted column changed
    Lesson.objects.filter(pk=first.pk).update(hit_count=5, last_hit=today)
    assert_kept()

    Lesson.objects.filter(course=course, review_by=soon).update(review_by=later)
    Lesson.objects.filter(pk=global_lesson.pk).update(
        course=other_course, status=LessonStatus.INJECTED, injected_at=timezone.now()
    )
    assert_kept()
    assert (course.pk, LessonStatus.INJECTED, soon) not in stored()  # no row of 0 is kept

    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE lessons_lesson SET status = %s WHERE course_id = %s",
            [
                LessonStatus.RETIRED,
                Lesson._meta.get_field("course").get_db_prep_value(other_course.pk, connection),
            ],
        )
    assert_kept()

    first.delete()
    Lesson.objects.filter(
        pk__in=list(Lesson.objects.filter(course=course).values_list("pk", flat=True)[:10])
    ).delete()
    assert_kept()
    doomed.delete()  # the course's lessons go with it
    assert_kept()
    Lesson.objects.all().delete()
    assert stored() == {}


@pytest.mark.django_db
def test_a_lesson_write_that_fails_leaves_the_counts_as_they_were(course):
    from django.db import IntegrityError, transaction

    make_lesson(course=course)
    before = stored()

    with pytest.raises(IntegrityError), transaction.atomic():
        make_lesson(course=course)
        Lesson.objects.filter(course=course).update(status="no-such-status")  # lesson_status_valid

    assert stored() == before == counted()


BEFORE = [("lessons", "0003_lesson_harmful_kept")]


@pytest.mark.django_db(transaction=True)
def test_migrating_counts_the_lessons_stored_before():
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes("lessons")
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    Course, OldLesson = old.get_model("tutor", "Course"), old.get_model("lessons", "Lesson")
    course = Course.objects.create(slug="mig-counts", title="Migrated")
    today = timezone.localdate()
    for n, (scope, status) in enumerate([(course, "injected"), (course, "injected"), (None, "pending")]):
        OldLesson.objects.create(
            course=scope,
            title=f"old {n}",
            body="b",
            tags=[],
            symptoms=[],
            status=status,
            source="manual",
            review_by=today,
            tokens=10,
            injected_at=timezone.now() if status == "injected" else None,
        )

    MigrationExecutor(connection).migrate(latest)

    assert stored() == {(course.pk, "injected", today): 2, (GLOBAL_SCOPE, "pending", today): 1}
    make_lesson(course=make_course("after-mig"), review_by=today)
    assert_kept()
