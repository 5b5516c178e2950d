"""The recall statement (SPEC §6, §10): the lessons that can reach the floor,
the phrases a text holds, a stored trace's first filtered and injected
lessons and the stage counts, in ONE SQL statement whatever the library's size, compiled
once per shape and process (``tutor.db.prepared``). It hands the rows to
``lessons.recall``; the snapshots (``lessons.selectors.library``) are its twin.
Details: docs/architecture.md, The lesson recall statement.
"""

from __future__ import annotations

import functools
import threading
from dataclasses import dataclass
from datetime import date

from django.db import connection
from django.db.models import (
    BooleanField,
    Count,
    Exists,
    F,
    FloatField,
    Func,
    IntegerField,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    TextField,
    Value,
)
from django.db.models.functions import Cast, Coalesce, StrIndex
from django.utils import timezone

from lessons.models import (
    Lesson,
    LessonHit,
    LessonKey,
    LessonStatus,
)
from lessons.recall import RecallContext, RecallParams, RecallResult, Totals, below_reach, recall
from lessons.selectors.rows import (
    ROW_COLUMNS,
    ROW_FIELDS,
    ROW_TYPES,
    SQL_SLACK,
    RecallQuery,
    found_phrases,
    lesson_row,
    lessons_scope,
    padded,
    rank_order,
    recall_query,
    tag_reach,
)
from lessons.selectors.stages import active_ids, first_filtered_ids, stage_counts
from lessons.text import tag_pairs
from tutor.db.prepared import PreparedQuery

# The one statement's rows: a lesson ("r"), one of the first injected lessons
# by id for a trace's floor lines ("a", with no body), a symptom phrase found in
# the texts ("p", see ``_Shape.phrases_in_sql``), or the stage counts ("c"),
# told apart by the first column.
_LESSON, _ACTIVE, _PHRASE, _COUNTS = "r", "a", "p", "c"
# Placeholders of the branches without a lesson. The counts branch takes plain
# NULLs: Django leaves constants out of its GROUP BY (a cast would be grouped,
# and an empty scope would give no row at all).
_NULL_ROW = tuple(Value(None, output_field=field()) for field in ROW_TYPES)
# The phrase branch takes typed NULLs: PostgreSQL resolves an untyped NULL of
# a SELECT DISTINCT as text, which a UNION with a uuid or jsonb column refuses.
_TYPED_NULL_ROW = tuple(Cast(Value(None), output_field=field()) for field in ROW_TYPES)
_NO_BODY = Cast(Value(""), output_field=TextField())
_NULL_COUNTS = tuple(Cast(Value(None), output_field=IntegerField()) for _ in range(3))


class InSubquery(Func):
    """``column IN (subquery)`` -- on PostgreSQL ``column = ANY(ARRAY(subquery))``.

    Why: PostgreSQL plans ``IN (subquery)`` as a semi-join from an estimate
    of the subquery's rows; the HAVING of the candidate keys is estimated at
    a few hundred, and a hash join over a sequential scan of every lesson
    then looks cheaper than a few primary-key lookups (5 ms instead of 0.1
    ms with 10k lessons). ``ANY(ARRAY(...))`` evaluates the ids once and
    looks each up by primary key, as SQLite does with ``IN``.
    """

    output_field = BooleanField()

    def __init__(self, column, queryset):
        super().__init__(column, Subquery(queryset))

    def as_sql(self, compiler, connection, **extra_context):
        column, column_params = compiler.compile(self.source_expressions[0])
        subquery, subquery_params = compiler.compile(self.source_expressions[1])
        return f"{column} IN {subquery}", (*column_params, *subquery_params)

    def as_postgresql(self, compiler, connection, **extra_context):
        column, column_params = compiler.compile(self.source_expressions[0])
        subquery, subquery_params = compiler.compile(self.source_expressions[1])
        return f"{column} = ANY(ARRAY{subquery})", (*column_params, *subquery_params)


# --- the one statement -------------------------------------------------------------------


# What the statement looks for, as far as its SQL goes.
_NOTHING, _SYMPTOMS, _TEXT = "nothing", "symptoms", "text"


@dataclass(frozen=True)
class _Shape:
    """What changes the statement's SQL itself (its lists' lengths aside):
    each shape is its own prepared query, whose parameters are exactly the
    values that reach its SQL."""

    scoped: bool  # some courses' lessons and the global ones; else every course's
    looks_for: str  # _NOTHING; _SYMPTOMS (explicit, maybe none); _TEXT (phrases of a text)
    every_lesson: bool  # the floor is within reach of every lesson: all are loaded
    with_counts: bool
    in_session: bool = False  # each lesson row tells whether this session already used it
    # Tags alone reach the floor only with two or more shared: candidates by tag
    # pairs (and any symptom match), see ``tag_reach``.
    by_pairs: bool = False
    # A stored trace's filtered lessons and its floor lines' injected ones: the
    # first this many of the scope by id (0: none).
    filtered_lines: int = 0

    @property
    def phrases_in_sql(self) -> bool:
        """Whether the phrases a text holds come back as rows of the statement.
        Otherwise the statement loads every lesson of the scope with such a
        phrase (tag pairs, or every lesson), and they are found from the rows
        (``found_phrases``)."""
        return self.looks_for == _TEXT and not (self.by_pairs or self.every_lesson)


# Parameter kinds (tutor.db.prepared) of the statement's values.
_KINDS = {
    "course_ids": "uuid[]",
    "tags": "str[]",
    "symptoms": "str[]",
    "anchors": "str[]",
    "haystack": "str",
    "tag_weight": "float",
    "symptom_weight": "float",
    "w_symptom": "float",
    "threshold": "float",
    "today": "date",
    "session_id": "uuid",
    "pairs": "str[]",
    "pair_need": "int",
}

# Up to this many context tags (66 pairs) recall looks candidates up by tag
# pairs; beyond, by single tags (every lesson sharing one is grouped).
PAIR_TAGS_MAX = 12


def _bind(
    query: RecallQuery, params: RecallParams, today: date, with_counts: bool, session_id=None
) -> tuple[_Shape, dict] | None:
    """The shape of the statement for ``query`` and the values it runs with;
    None when there is nothing to read."""
    every_lesson = params.reach <= 0
    from_text = query.symptoms is None and bool(query.anchors)
    if from_text:
        looks_for = _TEXT
    elif not every_lesson and (query.tags or query.symptoms):
        # A text without a word finds no phrase: it is the case of no symptoms.
        looks_for = _SYMPTOMS
    else:
        looks_for = _NOTHING
    if not (every_lesson or looks_for != _NOTHING or with_counts):
        return None
    scoped = query.course_ids is not None
    values: dict = {"course_ids": list(query.course_ids) if scoped else []}
    by_pairs = False
    if not every_lesson and looks_for != _NOTHING and 1 < len(query.tags) <= PAIR_TAGS_MAX:
        need = tag_reach(params.w_tag / len(query.tags), params.reach - SQL_SLACK)
        # Two or more shared tags needed, and the context has that many.
        by_pairs = 2 <= need <= len(query.tags)
    if by_pairs:
        # A lesson sharing n tags shares n(n-1)/2 pairs; any symptom match
        # loads the lesson too, and Python decides (``recall``).
        values["pairs"] = tag_pairs(query.tags)
        values["pair_need"] = need * (need - 1) // 2
        if looks_for == _SYMPTOMS:
            values["symptoms"] = list(query.symptoms or ())
    elif not every_lesson and looks_for != _NOTHING:
        values["tags"] = list(query.tags)
        values["tag_weight"] = params.w_tag / len(query.tags) if query.tags else 0.0
        values["threshold"] = params.reach - SQL_SLACK
        if looks_for == _SYMPTOMS:
            symptoms = query.symptoms or ()
            values["symptoms"] = list(symptoms)
            values["symptom_weight"] = params.w_symptom / max(len(symptoms), 1)
        else:
            values["w_symptom"] = params.w_symptom
    if looks_for == _TEXT and not every_lesson:
        values["anchors"] = list(query.anchors)
        values["haystack"] = query.haystack
    if with_counts:
        values["today"] = today
    # Only a statement that reads lessons can say which ones the session used.
    in_session = session_id is not None and (every_lesson or looks_for != _NOTHING)
    if in_session:
        values["session_id"] = session_id
    filtered_lines = params.max_lines if with_counts and not every_lesson else 0
    return _Shape(scoped, looks_for, every_lesson, with_counts, in_session, by_pairs, filtered_lines), values


def _in_text(values: dict) -> Q:
    """Symptom keys whose phrase occurs in the texts: the anchor (an indexed
    lookup) narrows them, the marked substring test decides -- in SQL,
    exactly as ``lessons.text.phrase_in`` (and ``found_phrases``). The keys
    need ``at`` (``_keys_in_text``)."""
    return Q(kind=LessonKey.Kind.SYMPTOM, anchor__in=values["anchors"], at__gt=0)


def _keys_in_text(scope: Q, values: dict) -> QuerySet:
    return (
        LessonKey.objects.filter(scope)
        .alias(at=StrIndex(Value(values["haystack"]), F("marked")))
        .filter(_in_text(values))
    )


def _found_keys(scope: Q, values: dict) -> QuerySet:
    """The keys of the phrases found in the texts whose lesson is injected.

    On PostgreSQL the lessons are looked up by id (``InSubquery``), not
    joined: it plans a prepared statement once for any values, and its plan
    of the join hashed every lesson of the library. That searches the texts
    twice. SQLite, which plans each run for its values, looks each found
    key's lesson up by primary key (a correlated EXISTS, which it never turns
    into a scan of the lessons), and searches them once: on the bench, the
    statement of a one-tag task took 1.41 ms with the PostgreSQL form and
    0.55 ms with this one, as before generic plans. The statement is compiled
    per database vendor (``tutor.db.prepared``)."""
    keys = _keys_in_text(scope, values)
    if connection.vendor != "postgresql":
        injected = Lesson.objects.filter(pk=OuterRef("lesson_id"), status=LessonStatus.INJECTED)
        return keys.filter(Exists(injected)).order_by()
    injected = Lesson.objects.filter(
        InSubquery(F("id"), keys.values("lesson_id")), status=LessonStatus.INJECTED
    ).values("id")
    return keys.filter(InSubquery(F("lesson_id"), injected)).order_by()


def _candidate_ids(shape: _Shape, scope: Q, values: dict, known: QuerySet | None) -> QuerySet:
    """Ids of the scope's lessons that can reach the floor (a subquery).

    One row per matching key, grouped by lesson, HAVING its tag and symptom
    parts ≥ floor − W_DECAY: a matching tag is worth W_TAG/|ctx.tags|, a
    matching symptom W_SYMPTOM/|ctx.symptoms|. From a text, |ctx.symptoms|
    is the number of distinct phrases of injected lessons found in it -- an
    uncorrelated scalar subquery, computed once. (A lesson that is not
    injected may be over-counted by a phrase only it knows: it is then
    loaded, and filtered; never the reverse.) So a phrase that thousands of
    lessons share loads them only when it can weigh enough.
    """

    if shape.by_pairs:
        return _candidate_ids_by_pairs(shape, scope, values)

    def hits(kind: str) -> Cast:
        # A double (PostgreSQL would compute in numeric with the literal
        # weights), cast after the aggregate: a cast weight would be grouped by.
        return Cast(Count("lesson_id", filter=Q(kind=kind)), output_field=FloatField())

    def weight(name: str) -> Value:
        return Value(values[name])

    tag_part = weight("tag_weight") * hits(LessonKey.Kind.TAG)
    tags = values["tags"]
    match = [Q(kind=LessonKey.Kind.TAG, value__in=tags)] if tags else []
    keys = LessonKey.objects.filter(scope)
    if shape.looks_for == _SYMPTOMS:
        if values["symptoms"]:
            match.append(Q(kind=LessonKey.Kind.SYMPTOM, value__in=values["symptoms"]))
        symptom_part = weight("symptom_weight") * hits(LessonKey.Kind.SYMPTOM)
    else:
        match.append(_in_text(values))
        found = known.values("kind").annotate(n=Count("value", distinct=True)).values("n")[:1]
        symptom_part = Coalesce(
            weight("w_symptom") * hits(LessonKey.Kind.SYMPTOM) / Subquery(found, output_field=FloatField()),
            Value(0.0),
        )
        keys = keys.alias(at=StrIndex(Value(values["haystack"]), F("marked")))
    return (
        keys.filter(functools.reduce(Q.__or__, match))
        .values("lesson_id")
        .annotate(part=tag_part + symptom_part)
        .filter(part__gte=values["threshold"])
        .values("lesson_id")
    )


def _candidate_ids_by_pairs(shape: _Shape, scope: Q, values: dict) -> QuerySet:
    """Ids of the scope's lessons sharing at least ``pair_need`` of the
    context's tag pairs (so enough tags to reach the floor by tags alone), or
    matching any symptom (a superset: ``lessons.recall`` scores them exactly).
    A common tag's many lessons are never read: only their pairs that match."""
    keys = LessonKey.objects.filter(scope)
    match = [Q(kind=LessonKey.Kind.TAG_PAIR, value__in=values["pairs"])]
    if shape.looks_for == _SYMPTOMS:
        if values["symptoms"]:
            match.append(Q(kind=LessonKey.Kind.SYMPTOM, value__in=values["symptoms"]))
    else:
        keys = keys.alias(at=StrIndex(Value(values["haystack"]), F("marked")))
        match.append(_in_text(values))
    return (
        keys.filter(functools.reduce(Q.__or__, match))
        .values("lesson_id")
        .annotate(
            n_pairs=Count("lesson_id", filter=Q(kind=LessonKey.Kind.TAG_PAIR)),
            n_symptoms=Count("lesson_id", filter=Q(kind=LessonKey.Kind.SYMPTOM)),
        )
        .filter(Q(n_pairs__gte=values["pair_need"]) | Q(n_symptoms__gt=0))
        .values("lesson_id")
    )


def _recall_queryset(shape: _Shape, **values) -> QuerySet:
    """ONE statement, UNION ALL of: the candidate lessons; the phrases found
    in the texts (``_Shape.phrases_in_sql``; in the ``title`` column); with
    ``with_counts``, one row of stage counts over the whole scope -- one
    snapshot for all."""
    scope = lessons_scope(values["course_ids"] if shape.scoped else None)
    tail = _NULL_COUNTS if shape.with_counts else ()
    known = _found_keys(scope, values) if shape.phrases_in_sql else None
    parts = []  # (kind, lessons)
    if shape.every_lesson:  # every lesson can reach the floor
        parts.append((_LESSON, Lesson.objects.filter(scope)))
    elif shape.looks_for != _NOTHING:
        # By id only: the keys are already scoped, and the lookup goes by primary key.
        ids = _candidate_ids(shape, scope, values, known)
        parts.append((_LESSON, Lesson.objects.filter(InSubquery(F("id"), ids))))
    if shape.filtered_lines:
        # A stored trace lists its filtered lessons by id (SPEC §6), then those
        # below the floor's reach while room remains: the first of each are read.
        course_ids = values["course_ids"] if shape.scoped else None
        first = first_filtered_ids(course_ids, values["today"])
        parts.append((_LESSON, Lesson.objects.filter(InSubquery(F("id"), first[: shape.filtered_lines]))))
        for ids in active_ids(course_ids):
            parts.append((_ACTIVE, Lesson.objects.filter(InSubquery(F("id"), ids[: shape.filtered_lines]))))
    used, typed_unused, unused = (), (), ()
    if shape.in_session:
        used = (Exists(LessonHit.objects.filter(lesson_id=OuterRef("id"), session_id=values["session_id"])),)
        typed_unused = (Cast(Value(None), output_field=BooleanField()),)
        unused = (Value(None, output_field=BooleanField()),)
    # A floor line shows no body, and a lesson below the floor is never a use of the session.
    below = tuple(_NO_BODY if column == "body" else column for column in ROW_COLUMNS) + typed_unused
    parts = [
        p.order_by().values_list(Value(kind), *(below if kind == _ACTIVE else (*ROW_COLUMNS, *used)), *tail)
        for kind, p in parts
    ]
    if known is not None:
        phrase_row = (_TYPED_NULL_ROW[0], "value", *_TYPED_NULL_ROW[2:], *typed_unused)
        parts.append(known.values_list(Value(_PHRASE), *phrase_row, *tail).distinct())
    if shape.with_counts:
        parts.append(
            stage_counts(values["course_ids"] if shape.scoped else None, values["today"]).values_list(
                Value(_COUNTS), *_NULL_ROW, *unused, "n_active", "n_expired", "n_other"
            )
        )
    return parts[0].union(*parts[1:], all=True) if len(parts) > 1 else parts[0]


def _statement(
    query: RecallQuery, params: RecallParams, today: date, with_counts: bool, session_id=None
) -> QuerySet | None:
    """The statement for ``query`` as an ORM queryset; None when there is nothing to read."""
    bound = _bind(query, params, today, with_counts, session_id)
    return _recall_queryset(bound[0], **bound[1]) if bound else None


_prepared: dict[_Shape, PreparedQuery] = {}
_prepared_lock = threading.Lock()


def _prepared_for(shape: _Shape, names) -> PreparedQuery:
    """The statement of ``shape``, compiled once per process (tutor.db.prepared)."""
    prepared = _prepared.get(shape)
    if prepared is None:
        with _prepared_lock:
            prepared = _prepared.get(shape) or PreparedQuery(
                functools.partial(_recall_queryset, shape), **{name: _KINDS[name] for name in names}
            )
            _prepared[shape] = prepared
    return prepared


def _run(bound: tuple[_Shape, dict] | None) -> list[tuple]:
    """The rows of a bound statement, run as its prepared SQL."""
    if bound is None:
        return []
    shape, values = bound
    values = {name: padded(v) if isinstance(v, list) else v for name, v in values.items()}
    return _prepared_for(shape, values).tuples(**values)


def _statement_rows(
    query: RecallQuery, params: RecallParams, today: date, with_counts: bool, session_id=None
) -> list[tuple]:
    """The rows of ``_statement``, run as its prepared SQL."""
    return _run(_bind(query, params, today, with_counts, session_id))


def lessons_recall(
    *,
    course_ids,
    tags,
    symptoms=None,
    texts: list[str] | None = None,
    today: date | None = None,
    params: RecallParams | None = None,
    with_counts: bool = True,
    lines: bool = True,
    session_id=None,
) -> RecallResult:
    """Recall for a context (SPEC §6), in at most ONE query whatever the library size (SPEC §10).

    ``symptoms`` (a preview) or ``texts`` (the tutor: ctx.symptoms are the
    phrases of injected lessons found in them); ``with_counts`` adds the
    scope's stage counts (a stored trace), ``lines`` the trace's lines, and
    ``session_id`` which of the lessons read that session already used.
    Only the lessons that can reach the floor are read (through ``LessonKey``),
    with a stored trace's first filtered lessons and the stage counts; the
    rule runs in Python (``lessons.recall``). Details: docs/architecture.md,
    The lesson recall statement.
    """
    params = params or RecallParams.from_settings()
    today = today or timezone.localdate()
    query = recall_query(course_ids, tags, symptoms, texts)
    rows, found, totals, used = [], [], None, set()
    width = 1 + len(ROW_FIELDS)
    bound = _bind(query, params, today, with_counts, session_id)
    in_session = bound is not None and bound[0].in_session
    counts_at = width + in_session
    tz = timezone.get_current_timezone()
    read, active = set(), []
    for values in _run(bound):
        if values[0] == _ACTIVE:  # the first injected lessons by id, of each part: floor lines
            active.append(lesson_row(values[1:width], tz))
        elif values[0] == _LESSON:
            if values[1] in read:  # a filtered lesson among the candidates too
                continue
            read.add(values[1])
            rows.append(lesson_row(values[1:width], tz))
            if in_session and values[width]:
                used.add(values[1])
        elif values[0] == _PHRASE:
            found.append(values[2])
        else:
            totals = Totals(*values[counts_at : counts_at + 3])
    if query.symptoms is not None:
        symptoms_found = query.symptoms
    elif bound is not None and bound[0].phrases_in_sql:
        symptoms_found = tuple(sorted(found))
    else:
        symptoms_found = found_phrases(rows, query)
    ctx = RecallContext(tags=query.tags, symptoms=symptoms_found, today=today)
    below = ()
    if lines and active:  # the scope's first ``max_lines`` injected lessons by id, those not past review
        active.sort(key=rank_order)
        below = below_reach([r for r in active[: params.max_lines] if r.review_by >= today], ctx, params)
    result = recall(rows, totals, ctx, params, lines=lines, below=below)
    result.used_in_session = frozenset(used)
    return result
