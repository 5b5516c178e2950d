"""Playbook deltas (SPEC §6; seed 004: the model only proposes, deterministic
code writes, and only on a signal that comes from outside the model). Each
refusal is a 400 naming the delta and the rule; a request applies all or
nothing. Details: docs/architecture.md, Lesson capture, deltas, import and
lifecycle.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import F, Q

from feedback.models import AttemptStatus, ReviewAttempt
from feedback.results import EXTERNAL_SIGNAL_BASES
from lessons import access
from lessons.models import DELTA_MAX_ADDS, DeltaBump, Lesson, LessonKind, LessonSource
from lessons.selectors import lesson_recalled_for
from lessons.services.lifecycle import lesson_quarantine_if_harmful
from lessons.services.store import lesson_insert, redact_lesson
from lessons.text import jaccard, shingles
from lessons.validation import clean_body, clean_symptoms, clean_tags, clean_title
from tutor.audit import audit_record
from tutor.kernel.conf import optional_setting
from tutor.kernel.errors import InvalidInput, PermissionRefused
from tutor.kernel.rubrics import CriterionKind, Verdict
from tutor.models import AuditEvent

# SPEC §6: an add this close to an existing lesson is a duplicate.
LESSON_DUPLICATE_JACCARD = 0.8
DELTAS_MAX_PER_REQUEST = 50
SIGNAL_REQUIRED = "external verification signal required"
ADD_KEYS = {"op", "title", "body", "tags", "symptoms"}
MARK_KEYS = {"op", "lesson"}


@dataclass
class _Add:
    index: int
    title: str
    body: str
    tags: list[str]
    symptoms: list[str]
    shingles: list[str]
    duplicate_of: object = None  # a lesson id, or ("request", index) of an earlier add
    slot: int | None = None


@dataclass
class _Mark:
    index: int
    op: str
    lesson: Lesson


@dataclass
class DeltaResult:
    signal_attempt: uuid.UUID
    applied: list[dict] = field(default_factory=list)


def duplicate_threshold() -> float:
    return float(optional_setting("LESSON_DUPLICATE_JACCARD", LESSON_DUPLICATE_JACCARD))


def _signal_attempt(actor, attempt_id) -> ReviewAttempt:
    attempt = (
        ReviewAttempt.objects.select_for_update(of=("self",))
        .select_related("submission", "submission__task")
        .filter(pk=attempt_id)
        .first()
    )
    if attempt is None or not (
        actor.is_superuser
        or access.delta_course_ids(actor).filter(course_id=attempt.submission.task.course_id).exists()
    ):
        raise InvalidInput(
            "no such review attempt in a course you are staff or service account of", field="signal_attempt"
        )
    return attempt


def signal_kind(attempt: ReviewAttempt) -> str:
    """The lesson kind an add gets from this signal, or a 400 when the attempt
    carries no external signal."""
    criteria = (
        (attempt.result or {}).get("criteria") or [] if attempt.status == AttemptStatus.COMPLETED else []
    )
    external = [c for c in criteria if c.get("basis") in EXTERNAL_SIGNAL_BASES]
    if not any(c.get("kind") == CriterionKind.ACCEPTANCE for c in external):
        raise InvalidInput(SIGNAL_REQUIRED, field="signal_attempt")
    failed = any(c.get("status") == Verdict.FAIL for c in external)
    return LessonKind.GUARDRAIL if failed else LessonKind.STRATEGY


def _unknown_keys(delta: dict, allowed: set[str], at: str) -> None:
    for key in sorted(set(delta) - allowed, key=str):
        raise InvalidInput(
            f"unknown key for op {delta.get('op')!r}; allowed: {', '.join(sorted(allowed))}",
            field=f"{at}.{key}",
        )


def _parse_add(delta: dict, index: int) -> _Add:
    at = f"deltas.{index}"
    _unknown_keys(delta, ADD_KEYS, at)
    title = clean_title(delta.get("title"), f"{at}.title")
    body = clean_body(delta.get("body"), f"{at}.body")
    tags = clean_tags(delta.get("tags"), f"{at}.tags")
    symptoms = clean_symptoms(delta.get("symptoms"), f"{at}.symptoms")
    # Compared as it would be stored: redacted.
    text = redact_lesson(title=title, body=body, tags=tags, symptoms=symptoms)
    return _Add(index, title, body, tags, symptoms, shingles(f"{text.title}\n{text.body}"))


def _parse_mark(delta: dict, index: int, attempt: ReviewAttempt, marked: set) -> _Mark:
    at = f"deltas.{index}"
    _unknown_keys(delta, MARK_KEYS, at)
    try:
        lesson_id = uuid.UUID(str(delta.get("lesson")))
    except ValueError:
        raise InvalidInput("must be a lesson id", field=f"{at}.lesson") from None
    course_id = attempt.submission.task.course_id
    lesson = Lesson.objects.filter(Q(course__isnull=True) | Q(course_id=course_id), pk=lesson_id).first()
    if lesson is None:
        raise InvalidInput("no such lesson in this attempt's course", field=f"{at}.lesson")
    if not lesson_recalled_for(
        lesson_id=lesson.pk, student_id=attempt.submission.student_id, task_id=attempt.submission.task_id
    ):
        raise InvalidInput(
            "no recall trace shows this lesson recalled for the signal attempt's student and task; "
            "only a lesson that was used can be marked",
            field=f"{at}.lesson",
        )
    if lesson.pk in marked:
        raise InvalidInput(
            "this lesson is already marked for this signal attempt (one mark per signal attempt and lesson)",
            field=f"{at}.lesson",
        )
    marked.add(lesson.pk)
    return _Mark(index, delta["op"], lesson)


@transaction.atomic(durable=True)
def deltas_apply(*, actor, signal_attempt_id, deltas: list) -> DeltaResult:
    """Check every delta, then apply them all (SPEC §6 deltas)."""
    if actor is None or not access.may_send_deltas(actor):
        raise PermissionRefused("only course staff or a course service account may send playbook deltas")
    if not isinstance(deltas, list) or not deltas:
        raise InvalidInput("must be a non-empty list of deltas", field="deltas")
    if len(deltas) > DELTAS_MAX_PER_REQUEST:
        raise InvalidInput(f"at most {DELTAS_MAX_PER_REQUEST} deltas per request", field="deltas")
    # Locked (PostgreSQL): two requests for one signal attempt apply one after
    # the other, so the add limit and the one-mark rule see each other's work.
    attempt = _signal_attempt(actor, signal_attempt_id)
    kind = signal_kind(attempt)
    course_id = attempt.submission.task.course_id
    threshold = duplicate_threshold()

    taken = set(
        Lesson.objects.filter(source=LessonSource.DELTA, source_attempt=attempt).values_list(
            "delta_slot", flat=True
        )
    )
    free_slots = [slot for slot in range(1, DELTA_MAX_ADDS + 1) if slot not in taken]
    marked = set(DeltaBump.objects.filter(signal_attempt=attempt).values_list("lesson_id", flat=True))
    plan: list[_Add | _Mark] = []
    adds: list[_Add] = []
    for index, delta in enumerate(deltas):
        at = f"deltas.{index}"
        if not isinstance(delta, dict):
            raise InvalidInput("must be an object with an 'op'", field=at)
        op = delta.get("op")
        if op == "add":
            add = _parse_add(delta, index)
            add.duplicate_of = _nearest_duplicate_of(add, course_id, adds, threshold)
            if add.duplicate_of is None:
                if not free_slots:
                    raise InvalidInput(
                        f"at most {DELTA_MAX_ADDS} add deltas per signal attempt "
                        f"({len(taken)} already added for this attempt)",
                        field=at,
                    )
                add.slot = free_slots.pop(0)
            adds.append(add)
            plan.append(add)
        elif op in DeltaBump.Op.values:
            plan.append(_parse_mark(delta, index, attempt, marked))
        else:
            raise InvalidInput(
                f"unknown op {op!r}: the ops are add, helpful and harmful "
                "(no op rewrites or deletes a lesson)",
                field=f"{at}.op",
            )

    result = DeltaResult(signal_attempt=attempt.pk)
    new_lessons: dict[int, Lesson] = {}
    for step in plan:
        if isinstance(step, _Add):
            result.applied.append(_apply_add(step, actor, attempt, kind, course_id, new_lessons))
        else:
            result.applied.append(_apply_mark(step, actor, attempt))
    return result


def _nearest_duplicate_of(add: _Add, course_id, earlier: list[_Add], threshold: float):
    """An existing lesson, else an earlier add of this request (named by its index until stored)."""
    found = _nearest_existing(add, course_id, threshold)
    if found is not None:
        return found
    for other in earlier:
        if other.duplicate_of is None and jaccard(add.shingles, other.shingles) >= threshold:
            return ("request", other.index)
    return None


def _nearest_existing(add: _Add, course_id, threshold: float) -> uuid.UUID | None:
    """The most similar lesson of the scope (any status: a rejected draft
    proposed again is still a duplicate); Jaccard ≥ t needs a shingle count
    within [t·n, n/t], which the index on (course, shingle_count) serves."""
    n = len(add.shingles)
    if n == 0:
        return None
    low, high = int(n * threshold), int(n / threshold) + 1
    rows = Lesson.objects.filter(
        Q(course__isnull=True) | Q(course_id=course_id), shingle_count__gte=low, shingle_count__lte=high
    ).values_list("id", "shingles")
    scored = [(jaccard(add.shingles, their), str(lesson_id), lesson_id) for lesson_id, their in rows]
    scored = [s for s in scored if s[0] >= threshold]
    if not scored:
        return None
    return min(scored, key=lambda s: (-s[0], s[1]))[2]


def _apply_add(step: _Add, actor, attempt: ReviewAttempt, kind: str, course_id, new_lessons: dict) -> dict:
    duplicate = step.duplicate_of
    if isinstance(duplicate, tuple):  # an earlier add of this request
        duplicate = new_lessons[duplicate[1]].pk
    if duplicate is not None:
        return {"index": step.index, "op": "add", "lesson": None, "duplicate_of": duplicate}
    lesson = lesson_insert(
        course_id=course_id,
        title=step.title,
        body=step.body,
        tags=step.tags,
        symptoms=step.symptoms,
        kind=kind,
        source=LessonSource.DELTA,
        source_attempt=attempt,
        delta_slot=step.slot,
        created_by=actor,
    )
    new_lessons[step.index] = lesson
    audit_record(
        actor=actor,
        event=AuditEvent.Event.DELTA_APPLIED,
        target=lesson,
        course=course_id,
        to_state=lesson.status,
        extra={
            "op": "add",
            "signal_attempt": str(attempt.pk),
            "index": step.index,
            "kind": kind,
            "redactions": lesson.redactions,
        },
    )
    return {"index": step.index, "op": "add", "lesson": lesson.pk, "duplicate_of": None}


def _apply_mark(step: _Mark, actor, attempt: ReviewAttempt) -> dict:
    lesson = step.lesson
    DeltaBump.objects.create(signal_attempt=attempt, lesson=lesson, op=step.op, actor=actor)
    Lesson.objects.filter(pk=lesson.pk).update(**{step.op: F(step.op) + 1})
    helpful, harmful = Lesson.objects.filter(pk=lesson.pk).values_list("helpful", "harmful").get()
    audit_record(
        actor=actor,
        event=AuditEvent.Event.DELTA_APPLIED,
        target=lesson,
        course=lesson.course_id,
        extra={
            "op": step.op,
            "signal_attempt": str(attempt.pk),
            "index": step.index,
            "helpful": helpful,
            "harmful": harmful,
        },
    )
    lesson_quarantine_if_harmful(lesson_id=lesson.pk, course_id=lesson.course_id, actor=actor)
    return {"index": step.index, "op": step.op, "lesson": lesson.pk, "duplicate_of": None}
