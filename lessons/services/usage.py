"""Effects of a real tutor send (SPEC §4, §6): the stored recall trace, hit
counts and promotion to a skill candidate; and the staff decision on a
candidate. Previews never come here."""

from __future__ import annotations

from functools import partial

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from lessons.access import ensure_can_manage
from lessons.models import Lesson, LessonHit, RecalledLesson, RecallTrace, SkillCandidate
from lessons.recall import RecallResult
from lessons.selectors.library import lessons_changed
from tutor.audit import audit_record
from tutor.context.providers import SendEffects
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
    trace and its recalled lessons (unsaved), and -- when a recalled lesson
    is a new use of the session -- the count of those uses as the follow-up
    (``recall_uses_count``). Lessons the session had used when recall read
    them stay used: only the others can be new uses (a session's sends never
    overlap)."""
    trace = recall_trace(
        result, student=student, task=task, session_id=session_id, correlation_id=correlation_id
    )
    recalled = [
        RecalledLesson(trace=trace, lesson_id=lesson_id, rank=rank)
        for rank, lesson_id in enumerate(result.recalled_ids, 1)
    ]
    new = [lesson_id for lesson_id in result.recalled_ids if lesson_id not in result.used_in_session]
    follow_up = None
    if session_id is not None and new:
        follow_up = partial(recall_uses_count, result=result, trace=trace, session_id=session_id, new=new)
    return SendEffects(records=(trace, *recalled), follow_up=follow_up)


def recall_uses_count(*, result: RecallResult, trace: RecallTrace, session_id, new: list) -> None:
    """Count each recalled lesson's use at most once per (lesson, session),
    once ``trace`` is stored: ``hit_count`` + 1 and ``last_hit`` = today in
    one atomic UPDATE. A lesson whose ``hit_count`` then stands at ≥
    LESSON_PROMOTE_HITS and has no skill candidate gets one -- once, whatever
    races (one candidate per lesson, a unique constraint). Runs in the
    reply's transaction (``tutor.chat.services``), in a savepoint of its own."""
    # A hit row per (lesson, session): the ones this trace got are the new
    # uses, counted and checked for promotion without reading them back.
    LessonHit.objects.bulk_create(
        (LessonHit(lesson_id=lesson_id, session_id=session_id, trace=trace) for lesson_id in new),
        ignore_conflicts=True,
    )
    counted = LessonHit.objects.filter(trace=trace).values("lesson_id")
    today = result.context.today
    Lesson.objects.filter(pk__in=counted).update(hit_count=F("hit_count") + 1, last_hit=today)
    first_today = [s.row for s in result.recalled if s.row.id in new and s.row.last_hit != today]
    if first_today:
        # A lesson's decay part counts from its last hit (SPEC §6): its row in
        # the snapshots changes once a day, not on every hit, and each process
        # applies that row alone -- every course's snapshot for a global
        # lesson. Only injected lessons are hit.
        courses = {row.course_id for row in first_today}
        lessons_changed(*courses, other=False, rows=[row.id for row in first_today])
    promoted = Lesson.objects.filter(
        pk__in=counted, hit_count__gte=promote_hits(), skill_candidate__isnull=True
    ).values_list("pk", "hit_count")
    SkillCandidate.objects.bulk_create(
        (SkillCandidate(lesson_id=pk, hit_count=hits) for pk, hits in promoted), ignore_conflicts=True
    )


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
