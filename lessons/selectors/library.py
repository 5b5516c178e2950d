"""A course's lessons as snapshots kept per process (SPEC §6, §10).

A tutor request recalls from snapshots of its scope (the course's lessons
and the global ones) instead of searching the library in SQL: the request
then reads only the scopes' versions (``tutor.db.snapshots``). Two snapshots
per scope: its injected lessons, indexed by normalized tag and by symptom
anchor (what a preview and a send recall from), and its lessons in every
other status (what a send's trace lists as filtered, and counts). A draft
captured from a review changes the second only, so the injected lessons --
the large snapshot -- are not loaded again for it.

The decisions are the recall statement's (``lessons.selectors.statement.lessons_recall``):
the snapshot hands ``lessons.recall`` a superset of the lessons that can
reach the floor (every lesson with a phrase found in the texts, and every
lesson sharing enough of the context's tags to reach ``floor − W_DECAY`` by
tags alone), and ctx.symptoms are the phrases of injected lessons found by
the same test (the anchor among the texts' tokens, the marked phrase in the
marked texts). A real send adds the scope's first filtered and active
lessons by id (its trace's filtered and floor lines), the stage counts from both
snapshots (active and expired by review date, every other status), and
reads its recalled lessons as committed (one small query): which of them its
session already used, and that each is still injected.

What changes a snapshot -- a lesson created, moved between statuses, renewed,
edited, deleted, or hit on a day it was not yet hit (its decay part) -- calls
``lessons_changed`` in the transaction of the change, naming the snapshots
it changes (a hit, the injected lessons'; a draft created, the others').
"""

from __future__ import annotations

import bisect
import functools
import threading
from dataclasses import dataclass, field
from datetime import date

from django.db.models import Value
from django.utils import timezone

from lessons.models import Lesson, LessonStatus
from lessons.recall import LessonRow, RecallContext, RecallParams, RecallResult, Totals, below_reach, recall
from lessons.selectors.recalled import recalled_now
from lessons.selectors.rows import (
    ROW_COLUMNS,
    SQL_SLACK,
    lesson_row,
    lessons_scope,
    rank_order,
    recall_query,
    symptom_probe,
    tag_reach,
)
from lessons.selectors.statement import lessons_recall
from tutor.db.snapshots import SnapshotStore, Versions, scope_changed, scope_key

LESSONS_SCOPE = "lessons"
OTHER_LESSONS_SCOPE = "lessons_other"  # the scope's lessons in every status but injected
# Tag sets of tasks whose candidates one snapshot remembers (a task's tags are fixed).
TAG_MEMO_SIZE = 512
# Contexts (tags, symptoms found, day) whose floor lines one snapshot remembers.
RECALL_MEMO_SIZE = 32
BELOW_MEMO_SIZE = 32


def lessons_scope_keys(course_id) -> tuple[str, str]:
    """A course's lessons scope: its own lessons and the global ones."""
    return scope_key(LESSONS_SCOPE, course_id), scope_key(LESSONS_SCOPE, None)


def other_lessons_scope_keys(course_id) -> tuple[str, str]:
    return scope_key(OTHER_LESSONS_SCOPE, course_id), scope_key(OTHER_LESSONS_SCOPE, None)


def lessons_changed(*course_ids, injected: bool = True, other: bool = True, rows=None) -> None:
    """Lessons of these courses (None: global ones) change in this
    transaction: ``injected`` ones, lessons of ``other`` statuses, or both
    (a move between the two); ``rows``, their ids (None: not said, and every
    process loads the scope again)."""
    scopes = [
        scope for scope, changed in ((LESSONS_SCOPE, injected), (OTHER_LESSONS_SCOPE, other)) if changed
    ]
    scope_changed(*(scope_key(scope, course_id) for course_id in course_ids for scope in scopes), rows=rows)


@dataclass
class Library:
    """Lessons of one scope (its injected ones, or those of every other status), indexed for recall."""

    rows: tuple[LessonRow, ...]
    by_id: dict[str, LessonRow]  # the rows by ``id_text``
    by_review: tuple[LessonRow, ...]  # the rows by review date, then id
    by_rank: tuple[LessonRow, ...]  # the rows by id (``rank_key``): a trace lists filtered ones so
    by_tag: dict[str, tuple[LessonRow, ...]]
    # anchor → (phrase, marked phrase, its lessons) of every symptom with that anchor
    by_anchor: dict[str, tuple[tuple[str, str, tuple[LessonRow, ...]], ...]]
    _tag_memo: dict = field(default_factory=dict)
    # Floor lines per context (its symptoms vary with the texts): a memo of their own,
    # so that they never push out the tag candidates (each entry: up to max_lines lines).
    _below_memo: dict = field(default_factory=dict)
    # Recall results per context (``library_recall``): shared, never changed by a reader.
    _recall_memo: dict = field(default_factory=dict)
    _memo_lock: threading.Lock = field(default_factory=threading.Lock)

    def _kept(self, memo: dict, size: int, key, make):
        """``make()``'s value, worked out once per ``key`` and snapshot (a snapshot
        never changes); ``memo`` is emptied once it holds ``size`` values."""
        found = memo.get(key)
        if found is None:
            found = make()
            with self._memo_lock:
                if len(memo) >= size:
                    memo.clear()
                memo[key] = found
        return found

    def first_expired(self, today: date, limit: int) -> list[LessonRow]:
        """The first ``limit`` lessons past review on ``today`` by id, once per day."""
        return self._kept(
            self._tag_memo,
            TAG_MEMO_SIZE,
            ("expired", today, limit),
            lambda: sorted(self.by_review[: _expired_count(self, today)], key=rank_order)[:limit],
        )

    def below_reach(self, ctx: RecallContext, params: RecallParams) -> tuple:
        """``lessons.recall.below_reach`` of the first ``max_lines`` injected
        lessons by id, those not past review (a trace's floor lines), once per
        context and day."""

        def make():
            first = self.by_rank[: params.max_lines]
            return below_reach([row for row in first if row.review_by >= ctx.today], ctx, params)

        return self._kept(self._below_memo, BELOW_MEMO_SIZE, (ctx, params), make)

    def tag_candidates(self, tags: tuple[str, ...], need: int) -> tuple[LessonRow, ...]:
        """The lessons sharing at least ``need`` of ``tags``."""

        def make():
            shared: dict[object, int] = {}
            rows: dict[object, LessonRow] = {}
            for tag in tags:
                for row in self.by_tag.get(tag, ()):
                    shared[row.id] = shared.get(row.id, 0) + 1
                    rows[row.id] = row
            return tuple(rows[lesson_id] for lesson_id, n in shared.items() if n >= need)

        return self._kept(self._tag_memo, TAG_MEMO_SIZE, (tags, need), make)


def _review_order(row: LessonRow) -> tuple:
    return row.review_by, row.rank_key


def _expired_count(library: Library, today: date) -> int:
    return bisect.bisect_left(library.by_review, today, key=lambda row: row.review_by)


def first_filtered(library: Library, others: Library, today: date, limit: int) -> list[LessonRow]:
    """The scope's first ``limit`` filtered lessons by id (SPEC §6: each
    leaves a trace line): of another status, or injected and past review."""
    expired = library.first_expired(today, limit)
    # By id: a lesson that moved between the two snapshots' catch-ups is listed once.
    rows = {row.id_text: row for row in (*others.by_rank[:limit], *expired[:limit])}
    return sorted(rows.values(), key=rank_order)[:limit]


def _library(values) -> Library:
    tz = timezone.get_current_timezone()
    rows = tuple(lesson_row(value, tz) for value in values)
    by_tag: dict[str, list[LessonRow]] = {}
    by_anchor: dict[str, dict[str, tuple[str, list[LessonRow]]]] = {}
    for row in rows:
        for tag in row.tags:
            by_tag.setdefault(tag, []).append(row)
        for phrase in row.symptoms:
            anchor, mark = symptom_probe(phrase)
            by_anchor.setdefault(anchor, {}).setdefault(phrase, (mark, []))[1].append(row)
    return Library(
        rows=rows,
        by_id={row.id_text: row for row in rows},
        by_review=tuple(sorted(rows, key=_review_order)),
        by_rank=tuple(sorted(rows, key=rank_order)),
        by_tag={tag: tuple(found) for tag, found in by_tag.items()},
        by_anchor={
            anchor: tuple((phrase, mark, tuple(found)) for phrase, (mark, found) in phrases.items())
            for anchor, phrases in by_anchor.items()
        },
    )


def _library_apply(library: Library, ids: frozenset[str], values) -> Library:
    """``library`` with the lessons of ``ids`` replaced by ``values`` (those
    of them it holds now, read by id): only the index entries of their old
    and new tags and symptom anchors are rebuilt (SPEC §10)."""
    tz = timezone.get_current_timezone()
    fresh = tuple(lesson_row(value, tz) for value in values)
    gone = [library.by_id[lesson_id] for lesson_id in ids if lesson_id in library.by_id]
    if not gone and not fresh:
        return library
    by_id = dict(library.by_id)
    by_review, by_rank = list(library.by_review), list(library.by_rank)
    for row in gone:
        del by_id[row.id_text]
        for ordered, order in ((by_review, _review_order), (by_rank, rank_order)):
            del ordered[bisect.bisect_left(ordered, order(row), key=order)]
    for row in fresh:
        by_id[row.id_text] = row
        bisect.insort(by_review, row, key=_review_order)
        bisect.insort(by_rank, row, key=rank_order)
    by_tag = dict(library.by_tag)
    for tag in {tag for row in (*gone, *fresh) for tag in row.tags}:
        kept = [row for row in library.by_tag.get(tag, ()) if row.id_text not in ids]
        kept.extend(row for row in fresh if tag in row.tags)
        if kept:
            by_tag[tag] = tuple(kept)
        else:
            by_tag.pop(tag, None)
    by_anchor = dict(library.by_anchor)
    phrases = {phrase for row in (*gone, *fresh) for phrase in row.symptoms}
    for anchor in {symptom_probe(phrase)[0] for phrase in phrases}:
        entries, seen = [], set()
        for phrase, mark, lessons in library.by_anchor.get(anchor, ()):
            if phrase in phrases:  # only the phrases of the changed rows are rebuilt
                seen.add(phrase)
                lessons = (
                    *(row for row in lessons if row.id_text not in ids),
                    *(row for row in fresh if phrase in row.symptoms),
                )
            if lessons:
                entries.append((phrase, mark, lessons))
        for phrase in sorted(phrases - seen):
            probe_anchor, mark = symptom_probe(phrase)
            found = tuple(row for row in fresh if phrase in row.symptoms)
            if probe_anchor == anchor and found:
                entries.append((phrase, mark, found))
        if entries:
            by_anchor[anchor] = tuple(entries)
        else:
            by_anchor.pop(anchor, None)
    return Library(
        rows=tuple(by_id.values()),
        by_id=by_id,
        by_review=tuple(by_review),
        by_rank=tuple(by_rank),
        by_tag=by_tag,
        by_anchor=by_anchor,
    )


def _scope_lessons(course_id, columns=ROW_COLUMNS):
    # The recall statement's own columns, read by ``lesson_row``.
    return Lesson.objects.filter(lessons_scope([course_id])).order_by().values_list(*columns)


# A lesson of another status is never recalled, so never rendered: its body stays in the database.
_OTHER_COLUMNS = tuple(Value("") if column == "body" else column for column in ROW_COLUMNS)


def library_load(course_id) -> Library:
    """One query: every injected lesson of the course's scope."""
    return _library(_scope_lessons(course_id).filter(status=LessonStatus.INJECTED))


def other_library_load(course_id) -> Library:
    """One query: every lesson of the course's scope in another status."""
    return _library(_scope_lessons(course_id, _OTHER_COLUMNS).exclude(status=LessonStatus.INJECTED))


def library_apply(library: Library, course_id, ids: frozenset[str]) -> Library:
    """One query: the injected lessons among ``ids``, applied to ``library``."""
    values = _scope_lessons(course_id).filter(pk__in=sorted(ids), status=LessonStatus.INJECTED)
    return _library_apply(library, ids, values)


def other_library_apply(library: Library, course_id, ids: frozenset[str]) -> Library:
    """One query: the lessons of another status among ``ids``, applied to ``library``."""
    values = (
        _scope_lessons(course_id, _OTHER_COLUMNS)
        .filter(pk__in=sorted(ids))
        .exclude(status=LessonStatus.INJECTED)
    )
    return _library_apply(library, ids, values)


LIBRARIES = SnapshotStore("lessons", library_load, apply=library_apply, freeze=True)
OTHER_LIBRARIES = SnapshotStore("lessons_other", other_library_load, apply=other_library_apply, freeze=True)


def library_recall(
    library: Library,
    *,
    tags,
    texts: list[str],
    today: date,
    params: RecallParams,
    others: Library | None = None,
    lines: bool = False,
) -> RecallResult:
    """Recall over ``library`` (injected lessons) for a context's tags and
    texts: the decisions of ``lessons_recall`` without counts. With
    ``others`` (the scope's lessons of other statuses) the first
    ``max_lines`` filtered lessons by id are read too, and the first active
    ones below the floor's reach, as the statement reads them: a trace
    ``lines`` lists them."""
    query = recall_query(None, tags, None, texts)
    haystack = query.haystack
    found: set[str] = set()
    candidates: dict[object, LessonRow] = {}
    for anchor in query.anchors:
        for phrase, mark, lessons in library.by_anchor.get(anchor, ()):
            if mark in haystack:
                found.add(phrase)
                for row in lessons:
                    candidates[row.rank_key] = row
    ctx = RecallContext(tags=query.tags, symptoms=tuple(sorted(found)), today=today)

    def make():
        if params.reach <= 0:  # every lesson can reach the floor
            rows: tuple[LessonRow, ...] | list[LessonRow] = library.rows
            if others is not None:
                # By id: a lesson that moved between the two snapshots' loads is read once.
                rows = list({row.id: row for row in (*library.rows, *others.rows)}.values())
        else:
            need = tag_reach(params.w_tag / len(query.tags), params.reach - SQL_SLACK) if query.tags else 0
            if 1 <= need <= len(query.tags):
                for row in library.tag_candidates(query.tags, need):
                    candidates[row.rank_key] = row
            if others is not None:
                for row in first_filtered(library, others, today, params.max_lines):
                    candidates.setdefault(row.rank_key, row)
            rows = list(candidates.values())
        below = library.below_reach(ctx, params) if lines and others is not None and params.reach > 0 else ()
        return others, recall(rows, None, ctx, params, lines=lines, below=below)

    # The lessons a context finds are the same on every request with the same tags,
    # symptoms, day and settings, of these two snapshots: worked out once (a send's
    # trace lines are most of a send's recall).
    key = (ctx, params, lines, id(others))
    kept_others, result = library._kept(library._recall_memo, RECALL_MEMO_SIZE, key, make)
    if kept_others is not others:  # an id of a snapshot gone, reused
        kept_others, result = make()
    return result


def scope_totals(library: Library, others: Library, today: date) -> Totals:
    """The scope's stage counts (``lessons.selectors.statement``): its
    injected lessons up for review today or later, those past it, and every
    lesson in another status."""
    expired = _expired_count(library, today)
    return Totals(active=len(library.rows) - expired, expired=expired, other_status=len(others.rows))


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


def lessons_send_recall(
    *, course_id, tags, texts: list[str], session_id, versions: Versions | None = None
) -> RecallResult:
    """Recall for a real send in the session ``session_id`` on a task of
    ``course_id`` (SPEC §6): what ``lessons_recall`` with its stage counts
    and trace lines returns, from the scope's two snapshots, then one query
    for the recalled lessons as committed -- which of them the session
    already used, and that each is still injected and not past review. A
    lesson another process moved out of ``injected`` (quarantined, say) is
    in a snapshot until its new version is read: should one be among the
    recalled, the statement decides instead, and so it does inside a
    transaction that changed the scope."""
    statement = functools.partial(
        lessons_recall, course_ids=[course_id], tags=tags, texts=texts, session_id=session_id
    )
    library = LIBRARIES.get(lessons_scope_keys(course_id), course_id, versions)
    if library is None or session_id is None:
        return statement()
    others = OTHER_LIBRARIES.get(other_lessons_scope_keys(course_id), course_id, versions)
    if others is None:
        return statement()
    today = timezone.localdate()
    result = library_recall(
        library,
        tags=tags,
        texts=texts,
        today=today,
        params=RecallParams.from_settings(),
        others=others,
        lines=True,
    ).with_totals(scope_totals(library, others, today))
    if result.recalled:
        now = recalled_now(session_id, result.recalled_ids)
        if not all(_still_recallable(now.get(lesson_id), today) for lesson_id in result.recalled_ids):
            return statement()
        result.used_in_session = frozenset(lesson_id for lesson_id, state in now.items() if state.used)
    return result


def _still_recallable(state, today: date) -> bool:
    return state is not None and state.status == LessonStatus.INJECTED and state.review_by >= today
