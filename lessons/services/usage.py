"""Effects of a real tutor send (SPEC §4, §6): the stored recall trace, hit
counts and promotion to a skill candidate; and the staff decision on a
candidate. Previews never come here."""

from __future__ import annotations

from functools import partial

from django.db import transaction
from django.utils import timezone

from lessons.access import ensure_can_manage
from lessons.models import Lesson, LessonHit, RecalledLesson, RecallTrace, SkillCandidate
from lessons.recall import RecallResult
from lessons.selectors.library import lessons_changed
from tutor.audit import audit_record
from tutor.context.providers import Count, SendEffects
from tutor.kernel.conf import optional_setting
from tutor.kernel.errors import Conflict
from tutor.models import AuditEvent

# Seed 003 step 3: a lesson recalled three times goes to a skill review.
LESSON_PROMOTE_HITS = 3


def promote_hits() -> int:
    return int(optional_setting("LESSON_PROMOTE_HITS", LESSON_PROMOTE_HITS))


def recall_trace(result: RecallResult, *, student, task, session_id, correlation_id: str) -> RecallTrace:
    """The trace of one real request (unsaved)."""
    return RecallTrace(
        correlation_id=correlation_id,
        course_id=task.course_id,
        student=student,
        task=task,
        session_id=session_id,
        context=result.context.as_dict(),
        params=result.params.as_dict(),
        lines=result.lines,
        counts=result.counts,
        omitted=result.omitted,
        used_tokens=result.used_tokens,
        budget_tokens=result.params.budget_tokens,
    )


def recall_effects(*, result: RecallResult, student, task, session_id, correlation_id: str) -> SendEffects:
    """A real send's recall, as the tutor turn stores it with the reply: the
    trace and its recalled lessons (unsaved) and, for each recalled lesson
    that is a new use of the session, its hit row and its count (``uses``).
    Lessons the session had used when recall read them stay used: only the
    others can be new uses (a session's sends never overlap)."""
    trace = recall_trace(
        result, student=student, task=task, session_id=session_id, correlation_id=correlation_id
    )
    recalled = [
        RecalledLesson(trace=trace, lesson_id=lesson_id, rank=rank)
        for rank, lesson_id in enumerate(result.recalled_ids, 1)
    ]
    new = [lesson_id for lesson_id in result.recalled_ids if lesson_id not in result.used_in_session]
    if session_id is None or not new:
        return SendEffects(records=(trace, *recalled))
    hits = [LessonHit(lesson_id=lesson_id, session_id=session_id, trace=trace) for lesson_id in new]
    counted = uses(new, result.context.today)
    return SendEffects(
        records=(trace, *recalled, *hits), counts=(counted,), written=_first_hits_today(result, new)
    )


def uses(lesson_ids: list, today) -> Count:
    """Each new use counted -- at most once per (lesson, session): the hit
    rows are written with it -- as ``hit_count`` + 1 and ``last_hit`` = today
    in one UPDATE; a lesson whose ``hit_count`` then stands at ≥
    LESSON_PROMOTE_HITS and has no skill candidate gets one, once, whatever
    races (one candidate per lesson, a unique constraint). Written by the
    tutor turn with the reply (``tutor.db.guarded_writes.Count``)."""
    return Count(
        model=Lesson,
        pks=tuple(lesson_ids),
        counter="hit_count",
        also={"last_hit": today},
        at=promote_hits(),
        then={lesson_id: SkillCandidate(lesson_id=lesson_id, hit_count=0) for lesson_id in lesson_ids},
        then_field="hit_count",
    )


def _first_hits_today(result: RecallResult, new: list):
    """A lesson's decay part counts from its last hit (SPEC §6): its row in
    the snapshots changes once a day, not on every hit, and each process
    applies that row alone -- every course's snapshot for a global lesson.
    Only injected lessons are hit. None when no lesson is hit first today."""
    today = result.context.today
    first = [s.row for s in result.recalled if s.row.id in new and s.row.last_hit != today]
    if not first:
        return None
    courses = {row.course_id for row in first}
    return partial(lessons_changed, *courses, other=False, rows=[row.id for row in first])


@transaction.atomic(durable=True)
def skill_candidate_decide(
    *, candidate: SkillCandidate, actor, accept: bool, note: str = ""
) -> SkillCandidate:
    """Staff settle a skill candidate (open → accepted | dismissed), audited."""
    ensure_can_manage(actor, candidate.lesson.course_id)
    status = SkillCandidate.Status.ACCEPTED if accept else SkillCandidate.Status.DISMISSED
    moved = SkillCandidate.objects.filter(pk=candidate.pk, status=SkillCandidate.Status.OPEN).update(
        status=status, decided_by=actor, decided_at=timezone.now(), note=note
    )
    if moved != 1:
        raise Conflict("this skill candidate has already been decided")
    audit_record(
        actor=actor,
        event=AuditEvent.Event.SKILL_ACCEPTED if accept else AuditEvent.Event.SKILL_DISMISSED,
        target=candidate,
        course=candidate.lesson.course_id,
        from_state=SkillCandidate.Status.OPEN,
        to_state=status,
        reason=note,
        extra={"lesson": str(candidate.lesson_id)},
    )
    candidate.refresh_from_db()
    return candidate
