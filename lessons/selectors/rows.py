"""What both readers of the lesson library share (SPEC §6, §10): the lesson
columns recall reads and their row (``lesson_row``), a request's scope, the
context's normalized tags and marked texts (``recall_query``), and the
symptom test. The statement (``lessons.selectors.statement``) and the
snapshots (``lessons.selectors.library``) hand ``lessons.recall`` rows made here, so
the rule has one reading of a lesson.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass

from django.db.models import (
    CharField,
    DateField,
    DateTimeField,
    IntegerField,
    Q,
    TextField,
    UUIDField,
)
from django.db.models.functions import Cast
from django.utils import timezone

from lessons.models import (
    SYMPTOM_MAX_CHARS,
    LessonStatus,
)
from lessons.recall import LessonRow
from lessons.text import marked, normalize, symptom_anchor, text_tokens

# Float sums in SQL and in Python may differ in the last bits: the SQL
# pre-filter lets borderline lessons through, and Python decides exactly.
SQL_SLACK = 1e-9

ROW_FIELDS = (
    "id",
    "title",
    "body",
    "tags",
    "symptoms",
    "status",
    "review_by",
    "tokens",
    "last_hit",
    "injected_at",
    "course_id",
)
# Tags and symptoms come as their JSON text: its normalized set is cached
# (``_keyset``), so a lesson read again is neither decoded nor normalized again.
ROW_COLUMNS = tuple(
    Cast(name, output_field=TextField()) if name in ("tags", "symptoms") else name for name in ROW_FIELDS
)
ROW_TYPES = (
    UUIDField,
    CharField,
    TextField,
    TextField,
    TextField,
    CharField,
    DateField,
    IntegerField,
    DateField,
    DateTimeField,
    UUIDField,
)


def lessons_scope(course_ids) -> Q:
    """A request's lessons: its course's and the global ones (SPEC §6);
    ``course_ids`` None means every course (a superuser's preview)."""
    if course_ids is None:
        return Q()
    return Q(course__isnull=True) | Q(course_id__in=list(course_ids))


# --- normalized text, cached -------------------------------------------------------------
# What a request normalizes depends on the strings alone -- a task's tags, a
# lesson's stored tags and symptoms, a feedback item's text -- so it is cached
# (bounded) in-process and can never go stale.
NORMALIZED_CACHE_SIZE = 4096
# A feedback item's reason or evidence recurs from one request to the next; a
# long text is mostly a one-off message, and is not worth keeping.
TEXT_CACHE_MAX_CHARS = 500


@functools.lru_cache(maxsize=NORMALIZED_CACHE_SIZE)
def _normalized(values: tuple[str, ...]) -> tuple[str, ...]:
    """Normalized as a lesson's keys store them: cut to ``SYMPTOM_MAX_CHARS``
    (compatibility folding can make a short tag long), so a context's value
    and a lesson's stored key compare alike in SQL and in Python."""
    seen: dict[str, None] = {}
    for value in values:
        norm = normalize(value)[:SYMPTOM_MAX_CHARS]
        if norm:
            seen.setdefault(norm, None)
    return tuple(seen)


@functools.lru_cache(maxsize=NORMALIZED_CACHE_SIZE)
def _keyset(stored: str | None) -> frozenset[str]:
    """A lesson's normalized tags or symptoms, from the JSON text stored."""
    return frozenset(_normalized(tuple(json.loads(stored) or ()))) if stored else frozenset()


def normalize_list(values) -> tuple[str, ...]:
    """Normalized, de-duplicated, in first-seen order: ``|ctx.tags|`` counts distinct tags."""
    return _normalized(tuple(values or ()))


def _piece(text: str) -> tuple[frozenset[str], str]:
    """A text's tokens (where a symptom's anchor must occur) and its
    word-edge-marked form (where the phrase itself must occur)."""
    norm = normalize(text)
    return frozenset(text_tokens(norm)), marked(norm)


_cached_piece = functools.lru_cache(maxsize=NORMALIZED_CACHE_SIZE)(_piece)


@dataclass(frozen=True)
class RecallQuery:
    """What the statement looks for: explicit symptoms, or a marked text."""

    course_ids: object
    tags: tuple[str, ...]
    symptoms: tuple[str, ...] | None  # explicit (the preview); None: from the text
    anchors: tuple[str, ...] = ()
    haystack: str = ""  # the texts, marked (lessons.text.marked), one per line


def tag_reach(tag_weight: float, threshold: float) -> int:
    """How many shared tags make a lesson's tag part alone reach ``threshold``."""
    if tag_weight <= 0:
        return 0
    need = max(1, math.ceil(threshold / tag_weight))
    while need > 1 and (need - 1) * tag_weight >= threshold:
        need -= 1
    while need * tag_weight < threshold:
        need += 1
    return need


def lesson_row(values: tuple, tz) -> LessonRow:
    lesson_id, title, body, tags, symptoms, status = values[:6]
    review_by, tokens, last_hit, injected_at, course_id = values[6:]
    return LessonRow(
        id=lesson_id,
        title=title,
        body=body,
        tags=_keyset(tags),
        symptoms=_keyset(symptoms),
        status=status,
        review_by=review_by,
        tokens=tokens,
        last_hit=last_hit,
        injected_on=timezone.localtime(injected_at, tz).date() if injected_at else None,
        course_id=course_id,
    )


def recall_query(course_ids, tags, symptoms, texts: list[str] | None) -> RecallQuery:
    ctx_tags = normalize_list(tags)
    if texts is None:
        return RecallQuery(course_ids=course_ids, tags=ctx_tags, symptoms=normalize_list(symptoms))
    anchors: set[str] = set()
    haystack = []
    # Feedback items repeat one evidence text per criterion: each text counts once.
    for text in dict.fromkeys(texts):
        if not text:
            continue
        tokens, mark = (_cached_piece if len(text) <= TEXT_CACHE_MAX_CHARS else _piece)(text)
        anchors |= tokens
        haystack.append(mark)
    return RecallQuery(
        course_ids=course_ids,
        tags=ctx_tags,
        symptoms=None,
        anchors=tuple(sorted(anchors)),
        haystack="\n".join(haystack),
    )


@functools.lru_cache(maxsize=NORMALIZED_CACHE_SIZE)
def symptom_probe(phrase: str) -> tuple[str, str]:
    """A normalized symptom's anchor and marked form, as its key stores them
    (``lessons.services.store.lesson_keys``)."""
    return symptom_anchor(phrase), marked(phrase)


def found_phrases(rows: list[LessonRow], query: RecallQuery) -> tuple[str, ...]:
    """The symptom phrases of the injected lessons among ``rows`` that occur
    in the query's texts, sorted: the same test as the statement's
    (``_in_text``: the anchor among the texts' tokens, the marked phrase in
    the marked texts), on the same rows. Exact for the shapes that load
    every lesson of the scope with such a phrase (not ``phrases_in_sql``)."""
    anchors = frozenset(query.anchors)
    found = set()
    for row in rows:
        if row.status != LessonStatus.INJECTED:
            continue
        for phrase in row.symptoms:
            anchor, mark = symptom_probe(phrase)
            if anchor in anchors and mark in query.haystack:
                found.add(phrase)
    return tuple(sorted(found))


# Lists are padded to the next power of two by repeating their last value --
# the same IN list for the database -- so that the SQL, compiled once per
# list length, takes a few forms, not one per number of words in a message.
def padded(values: list) -> list:
    if not values:
        return values
    return values + values[-1:] * ((1 << (len(values) - 1).bit_length()) - len(values))


def rank_order(row: LessonRow):
    """A row's place by id, as recall breaks ties (``LessonRow.rank_key``)."""
    return row.rank_key
