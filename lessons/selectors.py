"""Reads of the lessons app (SPEC §6, §10): recall, and the lists staff work from."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.db.models import (
    BooleanField,
    Case,
    CharField,
    Count,
    DateField,
    DateTimeField,
    F,
    FloatField,
    Func,
    IntegerField,
    JSONField,
    Q,
    QuerySet,
    Subquery,
    Sum,
    TextField,
    UUIDField,
    Value,
    When,
)
from django.db.models.functions import Cast, Coalesce, StrIndex
from django.utils import timezone

from lessons import access
from lessons.models import Lesson, LessonKey, LessonStatus, RecalledLesson, RecallTrace, SkillCandidate
from lessons.recall import LessonRow, RecallContext, RecallParams, RecallResult, Totals, recall
from lessons.text import jaccard, marked, normalize, text_tokens

# Float sums in SQL and in Python may differ in the last bits: the SQL
# pre-filter lets borderline lessons through, and Python decides exactly.
_SQL_SLACK = 1e-9

# The one statement's rows: a lesson ("r"), a symptom phrase found in the
# texts ("p"), or the stage counts ("c"), told apart by the first column.
_LESSON, _PHRASE, _COUNTS = "r", "p", "c"
_ROW_FIELDS = (
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
)
_ROW_TYPES = (
    UUIDField,
    CharField,
    TextField,
    JSONField,
    JSONField,
    CharField,
    DateField,
    IntegerField,
    DateField,
    DateTimeField,
)
# Placeholders of the branches without a lesson. The counts branch takes plain
# NULLs: Django leaves constants out of its GROUP BY (a cast would be grouped,
# and an empty scope would give no row at all).
_NULL_ROW = tuple(Value(None, output_field=field()) for field in _ROW_TYPES)
# The phrase branch takes typed NULLs: PostgreSQL resolves an untyped NULL of
# a SELECT DISTINCT as text, which a UNION with a uuid or jsonb column refuses.
_TYPED_NULL_ROW = tuple(Cast(Value(None), output_field=field()) for field in _ROW_TYPES)
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


def _scope(course_ids) -> Q:
    """A request's lessons: its course's and the global ones (SPEC §6);
    ``course_ids`` None means every course (a superuser's preview)."""
    if course_ids is None:
        return Q()
    return Q(course__isnull=True) | Q(course_id__in=list(course_ids))


def normalize_list(values) -> tuple[str, ...]:
    """Normalized, de-duplicated, in first-seen order: ``|ctx.tags|`` counts distinct tags."""
    seen: dict[str, None] = {}
    for value in values or ():
        norm = normalize(value)
        if norm:
            seen.setdefault(norm, None)
    return tuple(seen)


@dataclass(frozen=True)
class _Query:
    """What the statement looks for: explicit symptoms, or a marked text."""

    course_ids: object
    tags: tuple[str, ...]
    symptoms: tuple[str, ...] | None  # explicit (the preview); None: from the text
    anchors: tuple[str, ...] = ()
    haystack: str = ""  # the texts, marked (lessons.text.marked), one per line


def _keys_in_text(query: _Query) -> QuerySet:
    """Symptom keys of the scope whose phrase occurs in the texts: the anchor
    (an indexed lookup) narrows them, the marked substring test decides --
    in SQL, exactly as ``lessons.text.phrase_in``."""
    return (
        LessonKey.objects.filter(
            _scope(query.course_ids), kind=LessonKey.Kind.SYMPTOM, anchor__in=query.anchors
        )
        .alias(at=StrIndex(Value(query.haystack), F("marked")))
        .filter(at__gt=0)
    )


def _candidate_ids(query: _Query, params: RecallParams, known: QuerySet | None) -> QuerySet | None:
    """Ids of the scope's lessons that can reach the floor (a subquery), or
    None when nothing can match.

    One row per matching key, grouped by lesson, HAVING its tag and symptom
    parts ≥ floor − W_DECAY: a matching tag is worth W_TAG/|ctx.tags|, a
    matching symptom W_SYMPTOM/|ctx.symptoms|. From a text, |ctx.symptoms|
    is the number of distinct phrases of injected lessons found in it -- an
    uncorrelated scalar subquery, computed once. (A lesson that is not
    injected may be over-counted by a phrase only it knows: it is then
    loaded, and filtered; never the reverse.)
    """
    tag_weight = params.w_tag / len(query.tags) if query.tags else 0.0
    tag_part = Sum(
        Case(
            When(kind=LessonKey.Kind.TAG, then=Value(tag_weight)),
            default=Value(0.0),
            output_field=FloatField(),
        )
    )
    symptom_hits = Sum(
        Case(
            When(kind=LessonKey.Kind.SYMPTOM, then=Value(1.0)), default=Value(0.0), output_field=FloatField()
        )
    )
    match = Q(kind=LessonKey.Kind.TAG, value__in=list(query.tags)) if query.tags else Q(pk__in=[])
    if query.symptoms is not None:
        if query.symptoms:
            match |= Q(kind=LessonKey.Kind.SYMPTOM, value__in=list(query.symptoms))
        symptom_part = Value(params.w_symptom / max(len(query.symptoms), 1)) * symptom_hits
        keys = LessonKey.objects.filter(_scope(query.course_ids))
    else:
        if known is None:  # no text to find a phrase in
            symptom_part = Value(0.0)
        else:
            match |= Q(kind=LessonKey.Kind.SYMPTOM, anchor__in=query.anchors, at__gt=0)
            found = known.values("kind").annotate(n=Count("value", distinct=True)).values("n")[:1]
            symptom_part = Coalesce(
                Value(params.w_symptom) * symptom_hits / Subquery(found, output_field=FloatField()),
                Value(0.0),
            )
        keys = LessonKey.objects.filter(_scope(query.course_ids)).alias(
            at=StrIndex(Value(query.haystack), F("marked"))
        )
    if not query.tags and not (query.symptoms or query.anchors):
        return None
    return (
        keys.filter(match)
        .values("lesson_id")
        .annotate(part=tag_part + symptom_part)
        .filter(part__gte=params.reach - _SQL_SLACK)
        .values("lesson_id")
    )


def _stage_counts(course_ids, today: date) -> QuerySet:
    """One row: how many of the scope's lessons are active, expired, or not
    injected -- an index-only count over ``lesson_scope_status_idx``."""
    return (
        Lesson.objects.filter(_scope(course_ids))
        .order_by()
        # Grouped by a constant, which Django leaves out of GROUP BY: one row
        # of counts over the scope, even when it is empty.
        .annotate(one=Value(1))
        .values("one")
        .annotate(
            n_active=Count("pk", filter=Q(status=LessonStatus.INJECTED, review_by__gte=today)),
            n_expired=Count("pk", filter=Q(status=LessonStatus.INJECTED, review_by__lt=today)),
            n_other=Count("pk", filter=~Q(status=LessonStatus.INJECTED)),
        )
    )


def lessons_stage_totals(*, course_ids, today: date) -> Totals:
    """The stage counts of a scope, on their own (one query)."""
    row = _stage_counts(course_ids, today).values_list("n_active", "n_expired", "n_other").get()
    return Totals(active=row[0], expired=row[1], other_status=row[2])


def _statement(query: _Query, params: RecallParams, today: date, with_counts: bool):
    """ONE statement, UNION ALL of: the candidate lessons; the phrases found
    in the texts (from a text only; in the ``title`` column); with
    ``with_counts``, one row of stage counts over the whole scope -- one
    snapshot for all. None when there is nothing to look for."""
    tail = _NULL_COUNTS if with_counts else ()
    known = None
    if query.symptoms is None and query.anchors:
        known = _keys_in_text(query).filter(lesson__status=LessonStatus.INJECTED).order_by()
    parts = []
    if params.reach <= 0:  # every lesson can reach the floor
        parts.append(Lesson.objects.filter(_scope(query.course_ids)))
    else:
        ids = _candidate_ids(query, params, known)
        if ids is not None:
            # By id only: the keys are already scoped, and the lookup goes by primary key.
            parts.append(Lesson.objects.filter(InSubquery(F("id"), ids)))
    parts = [p.order_by().values_list(Value(_LESSON), *_ROW_FIELDS, *tail) for p in parts]
    if known is not None:
        phrase_row = (_TYPED_NULL_ROW[0], "value", *_TYPED_NULL_ROW[2:])
        parts.append(known.values_list(Value(_PHRASE), *phrase_row, *tail).distinct())
    if with_counts:
        parts.append(
            _stage_counts(query.course_ids, today).values_list(
                Value(_COUNTS), *_NULL_ROW, "n_active", "n_expired", "n_other"
            )
        )
    if not parts:
        return None
    return parts[0].union(*parts[1:], all=True) if len(parts) > 1 else parts[0]


def _row(values: tuple) -> LessonRow:
    lesson_id, title, body, tags, symptoms, status, review_by, tokens, last_hit, injected_at = values
    return LessonRow(
        id=lesson_id,
        title=title,
        body=body,
        tags=frozenset(normalize_list(tags)),
        symptoms=frozenset(normalize_list(symptoms)),
        status=status,
        review_by=review_by,
        tokens=tokens,
        last_hit=last_hit,
        injected_on=timezone.localdate(injected_at) if injected_at else None,
    )


def lessons_recall(
    *,
    course_ids,
    tags,
    symptoms=None,
    texts: list[str] | None = None,
    today: date | None = None,
    params: RecallParams | None = None,
    with_counts: bool = True,
) -> RecallResult:
    """Recall for a context (SPEC §6), in at most ONE query whatever the library size (SPEC §10).

    Give ``symptoms`` (the preview) or ``texts`` (the tutor: ctx.symptoms are
    then the symptom phrases of injected lessons found, case-insensitively,
    in the texts). Without ``with_counts`` the scope's stage counts are left
    out (the tutor's context needs none; a real send adds them with
    ``lessons_stage_totals`` before its trace is stored), so the statement
    touches only index entries of matching keys.

    Why it is cheap: a lesson whose tag and symptom parts stay below
    ``floor − W_DECAY`` (0.2 with the seed's numbers) cannot reach the floor,
    since its decay part is at most W_DECAY -- it can only be cut by the
    floor (or filtered). So the statement loads only the lessons that can
    reach it, found through ``LessonKey`` (normalized tags and symptoms,
    indexed on both SQLite and PostgreSQL): the matching keys grouped by
    lesson, HAVING their tag/symptom part ≥ floor − W_DECAY (the key index is
    covering, and the lessons are then read by primary key). Every other
    lesson of the scope is only counted, per stage (active / expired / other
    status): one aggregate row UNION ALL'ed to the candidate rows when
    ``with_counts`` -- an index-only count over ``lesson_scope_status_idx``,
    the one part that grows with the library, hence left to the stored
    trace of a real send. The trace therefore
    lists the lessons that could reach the floor and counts the others under
    their decision (SPEC §6: "the first 200 lines in rank order and counts
    per decision for the rest"). Scoring, ranking and the brakes then run in
    Python over the few candidates (``lessons.recall``), exactly as the seed
    does. When the floor is at or below W_DECAY every lesson can reach it,
    and all are loaded.

    From a text, a phrase is found in SQL: its anchor token (an indexed
    lookup among the text's tokens) narrows the keys, and a substring test on
    word-edge-marked text (``lessons.text.marked``) decides, so the found
    phrases -- ctx.symptoms, whose number weighs every symptom match -- come
    back in the same statement.
    """
    params = params or RecallParams.from_settings()
    today = today or timezone.localdate()
    ctx_tags = normalize_list(tags)
    if texts is None:
        query = _Query(course_ids=course_ids, tags=ctx_tags, symptoms=normalize_list(symptoms))
    else:
        pieces = [normalize(t) for t in texts if t]
        anchors: set[str] = set()
        for piece in pieces:
            anchors |= text_tokens(piece)
        query = _Query(
            course_ids=course_ids,
            tags=ctx_tags,
            symptoms=None,
            anchors=tuple(sorted(anchors)),
            haystack="\n".join(marked(piece) for piece in pieces),
        )
    rows, found, totals = [], [], None
    width = 1 + len(_ROW_FIELDS)
    for values in _statement(query, params, today, with_counts) or ():
        if values[0] == _LESSON:
            rows.append(_row(values[1:width]))
        elif values[0] == _PHRASE:
            found.append(values[2])
        else:
            totals = Totals(active=values[width], expired=values[width + 1], other_status=values[width + 2])
    symptoms_found = query.symptoms if query.symptoms is not None else tuple(sorted(found))
    ctx = RecallContext(tags=ctx_tags, symptoms=symptoms_found, today=today)
    return recall(rows, totals, ctx, params)


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
