"""The scope's lessons by stage (SPEC §6 trace): the stage counts and the
ids of the first filtered and active lessons, as index ranges of
``lesson_scope_status_idx`` -- parts of the recall statement
(``lessons.selectors.statement``). Details: docs/architecture.md, The lesson
recall statement.
"""

from __future__ import annotations

import functools
from datetime import date

from django.db.models import Count, Func, IntegerField, Q, QuerySet, Subquery, Value

from lessons.models import Lesson, LessonStatus


def _scope_parts(course_ids) -> list[Q]:
    # The global lessons and the course's apart: an OR would visit entries twice.
    if course_ids is None:
        return [Q()]
    return [Q(course__isnull=True)] + ([Q(course_id__in=list(course_ids))] if course_ids else [])


class Plus(Func):
    """``(a + b + …)`` over uncorrelated counts: a constant of the outer
    query, so never part of its GROUP BY (Django groups by every expression
    without an aggregate, and a grouped constant of no row gives no row)."""

    arg_joiner = " + "
    template = "(%(expressions)s)"
    output_field = IntegerField()

    def get_group_by_cols(self):
        return []


def _lessons_in(part: Q, **filters) -> QuerySet:
    # Grouped by a constant, which Django leaves out of GROUP BY: one count, even of nothing.
    return Lesson.objects.filter(part, **filters).order_by().annotate(one=Value(1)).values("one")


def _count(part: Q, **filters) -> Subquery:
    return Subquery(
        _lessons_in(part, **filters).annotate(n=Count("*")).values("n"), output_field=IntegerField()
    )


def stage_counts(course_ids, today: date) -> QuerySet:
    """One row: how many of the scope's lessons are active, expired, or not
    injected (SPEC §6 trace counts).

    Each count is an index range of ``lesson_scope_status_idx`` (course,
    status, review_by) counted with ``COUNT(*)``, so no lesson row is read and
    every index entry of the scope is visited once: "not injected" is the
    two ranges on either side of ``injected`` (exact in any collation), and
    the global lessons and the course's are counted apart (an OR of the two
    would visit every entry twice and deduplicate them)."""
    parts = _scope_parts(course_ids)
    injected = LessonStatus.INJECTED
    active = [_count(part, status=injected, review_by__gte=today) for part in parts]
    expired = [_count(part, status=injected, review_by__lt=today) for part in parts]
    other = [_count(part, status__gt=injected) for part in parts]
    other += [_count(part, status__lt=injected) for part in parts[1:]]
    # The first range is the row's own FROM: an aggregate without GROUP BY is one row.
    return _lessons_in(parts[0], status__lt=injected).annotate(
        n_active=Plus(*active), n_expired=Plus(*expired), n_other=Plus(Count("*"), *other)
    )


def first_filtered_ids(course_ids, today: date) -> QuerySet:
    """The ids of the scope's filtered lessons, by id: as ``stage_counts``,
    ranges of ``lesson_scope_status_idx`` -- another status on either side of
    ``injected``, or injected and past review -- per part of the scope, so
    only the filtered lessons' entries are visited, never every lesson."""
    parts = _scope_parts(course_ids)
    injected = LessonStatus.INJECTED
    stages = [Q(status__lt=injected), Q(status__gt=injected), Q(status=injected, review_by__lt=today)]
    ranges = functools.reduce(Q.__or__, (part & stage for part in parts for stage in stages))
    return Lesson.objects.filter(ranges).order_by("id").values("id")


def active_ids(course_ids) -> list[QuerySet]:
    """The ids of the scope's injected lessons by id, per part of the scope:
    each a range of ``lesson_scope_id_idx`` (course, status, id) already in id
    order, so a read of the first few stops early however large the library
    (those past review are left to the reader)."""
    return [
        Lesson.objects.filter(part, status=LessonStatus.INJECTED).order_by("id").values("id")
        for part in _scope_parts(course_ids)
    ]
