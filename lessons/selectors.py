"""Reads of the lessons app (SPEC §6, §10): recall, and the lists staff work from."""

from __future__ import annotations

from datetime import date

from django.db.models import (
    Case,
    CharField,
    Count,
    DateField,
    DateTimeField,
    FloatField,
    IntegerField,
    JSONField,
    Max,
    Q,
    QuerySet,
    Sum,
    TextField,
    UUIDField,
    Value,
    When,
)
from django.utils import timezone

from lessons import access
from lessons.models import Lesson, LessonKey, LessonStatus, RecalledLesson, RecallTrace, SkillCandidate
from lessons.recall import LessonRow, RecallContext, RecallParams, RecallResult, Totals, recall
from lessons.text import jaccard, normalize, phrase_in, text_tokens

# Float sums in SQL and in Python may differ in the last bits: the SQL
# pre-filter lets borderline lessons through, and Python decides exactly.
_SQL_SLACK = 1e-9

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
_NULL_ROW = (
    Value(None, output_field=UUIDField()),
    Value(None, output_field=CharField()),
    Value(None, output_field=TextField()),
    Value(None, output_field=JSONField()),
    Value(None, output_field=JSONField()),
    Value(None, output_field=CharField()),
    Value(None, output_field=DateField()),
    Value(None, output_field=IntegerField()),
    Value(None, output_field=DateField()),
    Value(None, output_field=DateTimeField()),
)
_NULL_COUNTS = tuple(Value(None, output_field=IntegerField()) for _ in range(3))


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


def _candidate_keys(
    course_ids,
    tags: tuple[str, ...],
    symptoms: tuple[str, ...] | None,
    anchors: set[str],
    params: RecallParams,
):
    """Ids of the scope's lessons that can reach the floor, as a subquery, or
    None when no lesson can (nothing to match).

    One row per matching key, grouped by lesson: the tag part is exact (each
    matching tag is worth ``w_tag/|ctx.tags|``). With explicit symptoms the
    symptom part is exact too. From a text the context's symptoms are not
    known yet (they are the phrases found in it), so any lesson with a
    symptom anchor among the text's tokens is kept, and Python decides.
    """
    match = Q()
    if tags:
        match |= Q(kind=LessonKey.Kind.TAG, value__in=list(tags))
    if symptoms:
        match |= Q(kind=LessonKey.Kind.SYMPTOM, value__in=list(symptoms))
    if anchors:
        match |= Q(kind=LessonKey.Kind.SYMPTOM, anchor__in=sorted(anchors))
    if not match:
        return None
    tag_weight = params.w_tag / len(tags) if tags else 0.0
    symptom_weight = params.w_symptom / len(symptoms) if symptoms else 0.0
    keys = (
        LessonKey.objects.filter(_scope(course_ids), match)
        .values("lesson_id")
        .annotate(
            part=Sum(
                Case(
                    When(kind=LessonKey.Kind.TAG, then=Value(tag_weight)),
                    default=Value(symptom_weight),
                    output_field=FloatField(),
                )
            ),
            anchored=Max(
                Case(
                    When(kind=LessonKey.Kind.SYMPTOM, then=Value(1)),
                    default=Value(0),
                    output_field=IntegerField(),
                )
            ),
        )
    )
    reaches = Q(part__gte=params.reach - _SQL_SLACK)
    if symptoms is None and anchors:
        reaches |= Q(anchored=1)
    return keys.filter(reaches).values("lesson_id")


def _load(course_ids, keys, today: date, everything: bool) -> tuple[list[tuple], Totals]:
    """ONE statement: the candidate rows, UNION ALL one row of stage counts
    over the whole scope (so rows and counts come from one snapshot)."""
    scope = _scope(course_ids)
    active = Q(status=LessonStatus.INJECTED, review_by__gte=today)
    counts = (
        Lesson.objects.filter(scope)
        .order_by()
        # Grouped by a constant, which Django leaves out of GROUP BY: one row
        # of counts over the scope, even when it is empty.
        .annotate(one=Value(1))
        .values("one")
        .annotate(
            n_active=Count("pk", filter=active),
            n_expired=Count("pk", filter=Q(status=LessonStatus.INJECTED, review_by__lt=today)),
            n_other=Count("pk", filter=~Q(status=LessonStatus.INJECTED)),
        )
        .values_list(*_NULL_ROW, "n_active", "n_expired", "n_other")
    )
    if everything:
        candidates = Lesson.objects.filter(scope)
    elif keys is not None:
        candidates = Lesson.objects.filter(scope, id__in=keys)
    else:
        candidates = None
    if candidates is None:
        statement = counts
    else:
        statement = candidates.order_by().values_list(*_ROW_FIELDS, *_NULL_COUNTS).union(counts, all=True)
    rows, totals = [], Totals()
    for values in statement:
        if values[0] is None:
            totals = Totals(active=values[-3], expired=values[-2], other_status=values[-1])
        else:
            rows.append(values[: len(_ROW_FIELDS)])
    return rows, totals


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
) -> RecallResult:
    """Recall for a context (SPEC §6), in ONE query whatever the library size (SPEC §10).

    Give ``symptoms`` (the preview) or ``texts`` (the tutor: ctx.symptoms are
    then the symptom phrases of injected lessons found, case-insensitively,
    in the texts).

    Why it is cheap: a lesson whose tag and symptom parts stay below
    ``floor − W_DECAY`` (0.2 with the seed's numbers) cannot reach the floor,
    since its decay part is at most W_DECAY -- it can only be cut by the
    floor (or filtered). So the statement loads only the lessons that can
    reach it, found through ``LessonKey`` (normalized tags and symptoms,
    indexed on both SQLite and PostgreSQL): a tag or symptom lookup grouped by
    lesson, HAVING the tag/symptom part ≥ floor − W_DECAY. Every other lesson
    of the scope is only counted, per stage (active / expired / other
    status), by one aggregate row UNION ALL'ed to the candidate rows --
    an index-only count. The trace therefore lists the lessons that could
    reach the floor, and counts the others under their decision (SPEC §6:
    "the first 200 lines in rank order and counts per decision for the
    rest"). Scoring, ranking and brakes then run in Python over the
    candidates (``lessons.recall``), exactly as the seed does. When the floor
    is at or below W_DECAY every lesson can reach it, and all are loaded.

    From a text, the phrases are not known before the query: every lesson
    with a symptom whose anchor token (``lessons.text.symptom_anchor``)
    occurs among the text's tokens is loaded too, and the phrases found are
    checked in Python; a phrase can only occur in a text that holds its
    anchor, so no known phrase is missed.
    """
    params = params or RecallParams.from_settings()
    today = today or timezone.localdate()
    ctx_tags = normalize_list(tags)
    explicit = normalize_list(symptoms) if texts is None else None
    pieces = [normalize(t) for t in texts or () if t]
    anchors: set[str] = set()
    for piece in pieces:
        anchors |= text_tokens(piece)
    everything = params.reach <= 0
    keys = None if everything else _candidate_keys(course_ids, ctx_tags, explicit, anchors, params)
    values, totals = _load(course_ids, keys, today, everything)
    rows = [_row(v) for v in values]
    if explicit is None:
        known = {p for row in rows if row.status == LessonStatus.INJECTED for p in row.symptoms}
        found = tuple(sorted(p for p in known if any(phrase_in(p, piece) for piece in pieces)))
    else:
        found = explicit
    ctx = RecallContext(tags=ctx_tags, symptoms=found, today=today)
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
