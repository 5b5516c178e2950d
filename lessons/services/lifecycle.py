"""The lesson lifecycle (SPEC §6; seed 003): no path from ``pending`` to
``injected`` except through a human approval; each transition one conditional
UPDATE with its audit event. Details: docs/architecture.md, Lesson capture,
deltas, import and lifecycle.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from lessons.access import ensure_can_manage
from lessons.models import DeltaBump, Lesson, LessonKind, LessonSource, LessonStatus, RejectReason
from lessons.selectors.library import lessons_changed
from lessons.services.store import lesson_insert
from tutor.audit import audit_record
from tutor.kernel.conf import optional_setting
from tutor.kernel.errors import Conflict, InvalidInput, NotFound, PermissionRefused
from tutor.kernel.redaction import redact_text
from tutor.models import AuditEvent, Course

# SPEC §6: quarantine without a human once harmful ≥ 3 and harmful > helpful.
LESSON_QUARANTINE_HARMFUL = 3
# A global lesson serves every course: the marks of one course alone must not
# withdraw it from all of them (a superuser decides).
LESSON_GLOBAL_QUARANTINE_COURSES = 1

Event = AuditEvent.Event


class IllegalTransition(Conflict):
    """The lesson's status does not allow this transition (409)."""


@dataclass(frozen=True)
class Transition:
    name: str
    allowed_from: tuple[str, ...]
    to: str
    event: str


TRANSITIONS = {
    t.name: t
    for t in (
        Transition("approve", (LessonStatus.PENDING,), LessonStatus.APPROVED, Event.LESSON_APPROVED),
        Transition("reject", (LessonStatus.PENDING,), LessonStatus.REJECTED, Event.LESSON_REJECTED),
        Transition(
            "inject",
            (LessonStatus.APPROVED, LessonStatus.QUARANTINED),
            LessonStatus.INJECTED,
            Event.LESSON_INJECTED,
        ),
        Transition(
            "quarantine", (LessonStatus.INJECTED,), LessonStatus.QUARANTINED, Event.LESSON_QUARANTINED
        ),
        Transition(
            "retire",
            (LessonStatus.INJECTED, LessonStatus.QUARANTINED),
            LessonStatus.RETIRED,
            Event.LESSON_RETIRED,
        ),
    )
}


def _move(
    *, lesson: Lesson, actor, name: str, reason: str = "", extra: dict | None = None, **fields
) -> Lesson:
    transition = TRANSITIONS[name]
    ensure_can_manage(actor, lesson.course_id)
    current = Lesson.objects.filter(pk=lesson.pk).values_list("status", flat=True).first()
    if current is None:
        raise NotFound("no such lesson")
    if current not in transition.allowed_from:
        allowed = " or ".join(transition.allowed_from)
        raise IllegalTransition(f"cannot {name} a {current} lesson (only a lesson that is {allowed})")
    moved = Lesson.objects.filter(pk=lesson.pk, status=current).update(status=transition.to, **fields)
    if moved != 1:  # someone moved it between the read and the update
        raise IllegalTransition(f"the lesson is no longer {current}; reload it and try again")
    # The snapshots of the statuses it left and entered (a draft approved
    # or rejected leaves the injected lessons' as they were).
    lessons_changed(
        lesson.course_id, injected=LessonStatus.INJECTED in (current, transition.to), rows=[lesson.pk]
    )
    audit_record(
        actor=actor,
        event=transition.event,
        target=lesson,
        course=lesson.course_id,
        from_state=current,
        to_state=transition.to,
        reason=reason,
        extra=extra,
    )
    lesson.refresh_from_db()
    return lesson


@transaction.atomic(durable=True)
def lesson_approve(*, lesson: Lesson, actor, reason: str = "") -> Lesson:
    """pending → approved. Only a person approves: a draft never reaches the
    tutor without a human decision (seed 003)."""
    if actor is None:
        raise PermissionRefused("a lesson is approved by a person, not by a command")
    return _move(lesson=lesson, actor=actor, name="approve", reason=reason)


@transaction.atomic(durable=True)
def lesson_reject(*, lesson: Lesson, actor, reason: str, note: str = "") -> Lesson:
    """pending → rejected, with a reason code of the template list
    (``RejectReason``); ``other`` needs a note."""
    if reason not in RejectReason.values:
        raise InvalidInput(f"must be one of {', '.join(RejectReason.values)}", field="reason")
    note = redact_text((note or "").strip())
    if reason == RejectReason.OTHER and not note:
        raise InvalidInput("a rejection for 'other' needs a note", field="note")
    return _move(
        lesson=lesson,
        actor=actor,
        name="reject",
        reason=f"{reason}: {note}" if note else reason,
        extra={"reason_code": reason},
        reject_reason=reason,
        reject_note=note,
    )


@transaction.atomic(durable=True)
def lesson_inject(*, lesson: Lesson, actor, review_by: date | None = None) -> Lesson:
    """approved | quarantined → injected: recall may use it from now on.
    A lesson past its ``review_by`` is never injected as it is: staff give
    a new review date with the injection."""
    today = timezone.localdate()
    fields: dict = {"injected_at": timezone.now()}
    if review_by is not None:
        if review_by < today:
            raise InvalidInput("must not be in the past", field="review_by")
        fields["review_by"] = review_by
    elif Lesson.objects.filter(pk=lesson.pk, review_by__lt=today).exists():
        raise IllegalTransition("the lesson is past its review date: inject it with a new review_by")
    extra = {"review_by": review_by.isoformat()} if review_by else None
    return _move(lesson=lesson, actor=actor, name="inject", extra=extra, **fields)


@transaction.atomic(durable=True)
def lesson_approve_and_use(*, lesson: Lesson, actor, reason: str = "") -> Lesson:
    """pending → approved → injected in one decision (the desk's "approve and
    use"): both transitions and both audit events, or neither. A person
    approves, as ``lesson_approve`` demands; a draft past its review date is
    refused whole (approve it, then inject it with a new date)."""
    if actor is None:
        raise PermissionRefused("a lesson is approved by a person, not by a command")
    _move(lesson=lesson, actor=actor, name="approve", reason=reason)
    if Lesson.objects.filter(pk=lesson.pk, review_by__lt=timezone.localdate()).exists():
        raise IllegalTransition(
            "the lesson is past its review date: approve it, then inject it with a new review_by"
        )
    return _move(lesson=lesson, actor=actor, name="inject", injected_at=timezone.now())


@transaction.atomic(durable=True)
def lesson_quarantine(*, lesson: Lesson, actor, reason: str = "") -> Lesson:
    """injected → quarantined: out of recall until staff inject or retire it."""
    return _move(lesson=lesson, actor=actor, name="quarantine", reason=redact_text(reason.strip()))


@transaction.atomic(durable=True)
def lesson_retire(*, lesson: Lesson, actor, reason: str = "") -> Lesson:
    """injected | quarantined → retired: kept for the record, never recalled again."""
    return _move(lesson=lesson, actor=actor, name="retire", reason=redact_text(reason.strip()))


def quarantine_harmful_threshold() -> int:
    return int(optional_setting("LESSON_QUARANTINE_HARMFUL", LESSON_QUARANTINE_HARMFUL))


def global_quarantine_courses() -> int:
    return int(optional_setting("LESSON_GLOBAL_QUARANTINE_COURSES", LESSON_GLOBAL_QUARANTINE_COURSES))


def harmful_mark_courses(*, lesson_id) -> int:
    """How many distinct courses the ``harmful`` marks of a lesson came from:
    the course of each mark's signal attempt (a mark is one per signal
    attempt and lesson, ``DeltaBump``)."""
    return (
        DeltaBump.objects.filter(lesson_id=lesson_id, op=DeltaBump.Op.HARMFUL)
        .values("signal_attempt__submission__task__course_id")
        .distinct()
        .count()
    )


def harmful_lessons():
    """Injected lessons whose marks meet the automatic quarantine's numbers
    (harmful ≥ LESSON_QUARANTINE_HARMFUL and harmful > helpful); among global
    ones, those still injected are held for a superuser's decision."""
    return Lesson.objects.filter(
        status=LessonStatus.INJECTED, harmful__gte=quarantine_harmful_threshold(), harmful__gt=F("helpful")
    )


def held_global_lessons():
    """The global lessons waiting for a superuser (the admin queue "Harmful
    global lessons"): marked harmful enough for the automatic quarantine but
    held by ``LESSON_GLOBAL_QUARANTINE_COURSES``, and not kept since their
    last harmful mark (``lesson_keep``)."""
    return harmful_lessons().filter(course__isnull=True, harmful__gt=F("harmful_kept"))


@transaction.atomic(durable=True)
def lesson_keep(*, lesson: Lesson, actor, reason: str = "") -> Lesson:
    """A superuser's decision on a held global lesson: it stays injected and
    leaves the queue until a new harmful mark brings it back. One
    conditional UPDATE (a lesson quarantined or marked meanwhile is a 409),
    audited as ``lesson_kept`` with the counts it was decided on."""
    ensure_can_manage(actor, lesson.course_id)
    current = held_global_lessons().filter(pk=lesson.pk).values("harmful", "helpful").first()
    if current is None:
        raise IllegalTransition(
            "only a global lesson held for a decision (injected, marked harmful enough, not kept since "
            "its last harmful mark) can be kept"
        )
    kept = held_global_lessons().filter(pk=lesson.pk, **current)  # the counts it was decided on
    if kept.update(harmful_kept=current["harmful"]) != 1:
        raise IllegalTransition("the lesson changed meanwhile; reload it and try again")
    audit_record(
        actor=actor,
        event=Event.LESSON_KEPT,
        target=lesson,
        course=None,
        from_state=LessonStatus.INJECTED,
        to_state=LessonStatus.INJECTED,
        reason=redact_text(reason.strip()),
        extra=current,
    )
    lesson.refresh_from_db()
    return lesson


def lesson_quarantine_if_harmful(*, lesson_id, course_id, actor) -> bool:
    """The automatic quarantine of SPEC §6, inside the transaction that
    bumped ``harmful``: one conditional UPDATE, so two concurrent bumps
    quarantine (and audit) once.

    Rule: an injected lesson with harmful ≥ ``LESSON_QUARANTINE_HARMFUL`` (3)
    and harmful > helpful is quarantined. A deployment whose course teams
    share global lessons may raise ``LESSON_GLOBAL_QUARANTINE_COURSES``
    (default 1: the SPEC rule as it is): a global lesson (no course) is then
    quarantined automatically only when its harmful marks come from signal
    attempts of at least that many distinct courses; otherwise it stays
    injected and waits in the admin queue "Harmful global lessons" for a
    superuser. The caller's UPDATE of the
    counter holds the lesson's row lock (PostgreSQL), so a concurrent mark
    from another course counts its courses after this one committed.
    ``course_id`` is the lesson's (None: global), which never changes.
    """
    threshold = quarantine_harmful_threshold()
    candidate = harmful_lessons().filter(pk=lesson_id)
    courses = None
    if course_id is None:
        if not candidate.exists():
            return False
        courses = harmful_mark_courses(lesson_id=lesson_id)
        if courses < global_quarantine_courses():
            return False
    moved = candidate.update(status=LessonStatus.QUARANTINED)
    if moved != 1:
        return False
    lessons_changed(course_id, rows=[lesson_id])
    lesson = Lesson.objects.get(pk=lesson_id)
    reason = f"automatic: harmful {lesson.harmful} ≥ {threshold} and > helpful {lesson.helpful}"
    extra = {"automatic": True, "helpful": lesson.helpful, "harmful": lesson.harmful}
    if courses is not None:
        reason += f", marked harmful from {courses} courses"
        extra["harmful_courses"] = courses
    audit_record(
        actor=actor,
        event=Event.LESSON_QUARANTINED,
        target=lesson,
        course=lesson.course_id,
        from_state=LessonStatus.INJECTED,
        to_state=LessonStatus.QUARANTINED,
        reason=reason,
        extra=extra,
    )
    return True


# Not durable: Django admin's add view already runs its save in a transaction.
@transaction.atomic
def lesson_create(
    *,
    actor,
    course: Course | None,
    title: str,
    body: str,
    tags: list[str],
    symptoms: list[str],
    kind: str = LessonKind.NOTE,
    review_by: date | None = None,
) -> Lesson:
    """Staff's manual entry (SPEC §6 capture b): a pending lesson, redacted,
    that still needs an approval like any draft."""
    course_id = course.pk if course is not None else None
    ensure_can_manage(actor, course_id)
    if kind not in LessonKind.values:
        raise InvalidInput(f"must be one of {', '.join(LessonKind.values)}", field="kind")
    if review_by is not None and review_by < timezone.localdate():
        raise InvalidInput("must not be in the past", field="review_by")
    lesson = lesson_insert(
        course_id=course_id,
        title=title,
        body=body,
        tags=tags,
        symptoms=symptoms,
        kind=kind,
        source=LessonSource.MANUAL,
        review_by=review_by,
        created_by=actor,
    )
    audit_record(
        actor=actor,
        event=Event.LESSON_CREATED,
        target=lesson,
        course=course_id,
        to_state=lesson.status,
        extra={"source": LessonSource.MANUAL, "redactions": lesson.redactions},
    )
    return lesson
