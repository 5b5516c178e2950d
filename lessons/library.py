"""A course's injected lessons as a snapshot kept per process (SPEC §6, §10).

The context preview recalls from a snapshot of the scope's injected lessons
(the course's and the global ones), indexed by normalized tag and by symptom
anchor, instead of searching the library in SQL on every request: a preview
then reads only the scopes' versions (``tutor.snapshots``). A real send keeps
the statement of ``lessons.selectors.lessons_recall``: its trace counts every
lesson of the scope per stage and lists filtered ones, and it reads which
lessons its session already used.

The decisions are the statement's: the snapshot hands ``lessons.recall`` a
superset of the lessons that can reach the floor (every lesson with a phrase
found in the texts, and every lesson sharing enough of the context's tags to
reach ``floor − W_DECAY`` by tags alone), and ctx.symptoms are the phrases of
injected lessons found by the same test (the anchor among the texts' tokens,
the marked phrase in the marked texts).

What changes a snapshot -- a lesson created, moved between statuses, renewed,
deleted, or hit on a day it was not yet hit (its decay part) -- calls
``lessons_changed`` in the transaction of the change.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import date

from django.utils import timezone

from lessons.models import Lesson, LessonStatus
from lessons.recall import LessonRow, RecallContext, RecallParams, RecallResult, recall
from lessons.selectors import (
    _ROW_COLUMNS,
    _SQL_SLACK,
    _probe,
    _recall_query,
    _row,
    _scope,
    _tag_reach,
    lessons_recall,
)
from tutor.snapshots import SnapshotStore, Versions, scope_changed, scope_key

LESSONS_SCOPE = "lessons"
# Tag sets of tasks whose candidates one snapshot remembers (a task's tags are fixed).
TAG_MEMO_SIZE = 512


def lessons_scope_keys(course_id) -> tuple[str, str]:
    """A course's lessons scope: its own lessons and the global ones."""
    return scope_key(LESSONS_SCOPE, course_id), scope_key(LESSONS_SCOPE, None)


def lessons_changed(*course_ids) -> None:
    """Lessons of these courses (None: global ones) change in this transaction."""
    scope_changed(*(scope_key(LESSONS_SCOPE, course_id) for course_id in course_ids))


@dataclass
class Library:
    """The injected lessons of one scope, indexed for recall."""

    rows: tuple[LessonRow, ...]
    by_tag: dict[str, tuple[LessonRow, ...]]
    # anchor → (phrase, marked phrase, lesson) of every symptom with that anchor
    by_anchor: dict[str, tuple[tuple[str, str, LessonRow], ...]]
    _tag_memo: dict = field(default_factory=dict)
    _memo_lock: threading.Lock = field(default_factory=threading.Lock)

    def tag_candidates(self, tags: tuple[str, ...], need: int) -> tuple[LessonRow, ...]:
        """The lessons sharing at least ``need`` of ``tags``."""
        memo_key = (tags, need)
        found = self._tag_memo.get(memo_key)
        if found is not None:
            return found
        shared: dict[object, int] = {}
        rows: dict[object, LessonRow] = {}
        for tag in tags:
            for row in self.by_tag.get(tag, ()):
                shared[row.id] = shared.get(row.id, 0) + 1
                rows[row.id] = row
        found = tuple(rows[lesson_id] for lesson_id, n in shared.items() if n >= need)
        with self._memo_lock:
            if len(self._tag_memo) >= TAG_MEMO_SIZE:
                self._tag_memo.clear()
            self._tag_memo[memo_key] = found
        return found


def library_load(course_id) -> Library:
    """One query: every injected lesson of the course's scope."""
    values = (
        Lesson.objects.filter(_scope([course_id]), status=LessonStatus.INJECTED)
        .values_list(*_ROW_COLUMNS)  # the recall statement's own columns, read by ``_row``
        .order_by()
    )
    tz = timezone.get_current_timezone()
    rows = tuple(_row(value, tz) for value in values)
    by_tag: dict[str, list[LessonRow]] = {}
    by_anchor: dict[str, list[tuple[str, str, LessonRow]]] = {}
    for row in rows:
        for tag in row.tags:
            by_tag.setdefault(tag, []).append(row)
        for phrase in row.symptoms:
            anchor, mark = _probe(phrase)
            by_anchor.setdefault(anchor, []).append((phrase, mark, row))
    return Library(
        rows=rows,
        by_tag={tag: tuple(found) for tag, found in by_tag.items()},
        by_anchor={anchor: tuple(found) for anchor, found in by_anchor.items()},
    )


LIBRARIES = SnapshotStore("lessons", library_load)


def library_recall(
    library: Library, *, tags, texts: list[str], today: date, params: RecallParams
) -> RecallResult:
    """Recall over ``library`` for a context's tags and texts: the decisions
    of ``lessons_recall`` without counts, lines or session (a preview)."""
    query = _recall_query(None, tags, None, texts)
    haystack = query.haystack
    found: set[str] = set()
    candidates: dict[object, LessonRow] = {}
    for anchor in query.anchors:
        for phrase, mark, row in library.by_anchor.get(anchor, ()):
            if mark in haystack:
                found.add(phrase)
                candidates[row.id] = row
    if params.reach <= 0:  # every lesson can reach the floor
        rows: tuple[LessonRow, ...] | list[LessonRow] = library.rows
    else:
        if query.tags:
            need = _tag_reach(params.w_tag / len(query.tags), params.reach - _SQL_SLACK)
            if 1 <= need <= len(query.tags):
                for row in library.tag_candidates(query.tags, need):
                    candidates[row.id] = row
        rows = list(candidates.values())
    ctx = RecallContext(tags=query.tags, symptoms=tuple(sorted(found)), today=today)
    return recall(rows, None, ctx, params, lines=False)


def lessons_preview_recall(
    *, course_id, tags, texts: list[str], versions: Versions | None = None
) -> RecallResult:
    """Recall for a context preview of a task of ``course_id`` (SPEC §6):
    from the scope's snapshot, or -- inside a transaction that changed the
    scope -- by the statement itself."""
    library = LIBRARIES.get(lessons_scope_keys(course_id), course_id, versions)
    if library is None:
        return lessons_recall(course_ids=[course_id], tags=tags, texts=texts, with_counts=False, lines=False)
    return library_recall(
        library, tags=tags, texts=texts, today=timezone.localdate(), params=RecallParams.from_settings()
    )
