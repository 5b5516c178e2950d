"""Grades back to the LMS (AGS; SPEC §12), through an outbox of score rows:
only the latest submission's decided attempt counts, each score is posted
exactly once, never inside a student's request. Details:
docs/architecture.md, LTI rules.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from feedback.models import AttemptStatus, ReviewAttempt
from feedback.selectors import FeedbackState, select_feedback
from tutor.audit import audit_record
from tutor.kernel.rubrics import CriterionKind, Verdict
from tutor.lti import after_response, platform
from tutor.lti.models import LinkMember, PendingScores, ScorePost, ScoreStatus
from tutor.lti.selectors import grade_targets
from tutor.lti.services.launch import login_nonces_purge
from tutor.models import AuditEvent, Task

log = logging.getLogger(__name__)

ACTIVITY_COMPLETED = "Completed"
FULLY_GRADED = "FullyGraded"
PENDING_MANUAL = "PendingManual"
AUDIT_ACTOR = "lti-passback"
# A claim older than the task's hard limit plus this margin belongs to a dead worker.
CLAIM_MARGIN_SECONDS = 30


PROVISIONAL_COMMENT = (
    "Provisional: staff review of {pending} of {maximum} criteria is pending; this grade may go up."
)
TIMESTAMP_STEP = timedelta(milliseconds=1)  # platforms keep at least milliseconds of a timestamp


@dataclass(frozen=True)
class Score:
    given: int
    maximum: int
    grading_progress: str
    pending: int = 0  # acceptance criteria still NEED_REVIEW
    comment: str = ""


def score_from_result(result: dict, policy: str = PendingScores.PENDING_MANUAL) -> Score | None:
    """The score of a review result under the pending-scores ``policy`` (see
    the module's rules), or None: nothing to post."""
    acceptance = [c for c in result.get("criteria", []) if c.get("kind") == CriterionKind.ACCEPTANCE]
    if not acceptance:
        return None
    statuses = [c.get("status") for c in acceptance]
    pending = statuses.count(Verdict.NEED_REVIEW)
    given, maximum = statuses.count(Verdict.PASS), len(acceptance)
    if not pending:
        return Score(given=given, maximum=maximum, grading_progress=FULLY_GRADED)
    if policy == PendingScores.HOLD:
        return None
    if policy == PendingScores.FULLY_GRADED_PROVISIONAL:
        comment = PROVISIONAL_COMMENT.format(pending=pending, maximum=maximum)
        return Score(given, maximum, FULLY_GRADED, pending=pending, comment=comment)
    return Score(given, maximum, PENDING_MANUAL, pending=pending)


def pending_policy(registration) -> str:
    return registration.pending_scores or settings.LTI_PENDING_SCORES


def next_timestamp(*, link_id, identity_id, now):
    """A timestamp later than every score row of (line item, user): AGS
    platforms keep the newest, and refuse one not newer than theirs."""
    latest = (
        ScorePost.objects.filter(link_id=link_id, identity_id=identity_id)
        .order_by("-scored_at")
        .values_list("scored_at", flat=True)
        .first()
    )
    return now if latest is None or latest < now else latest + TIMESTAMP_STEP


def retry_delay(tries: int) -> float:
    """Seconds before try ``tries + 1``: doubling from LTI_SCORE_BACKOFF, capped."""
    return min(settings.LTI_SCORE_BACKOFF * 2 ** max(tries - 1, 0), settings.LTI_SCORE_BACKOFF_MAX)


def score_dispatch(score_id) -> None:
    """Send the post task; a broker outage leaves the queued row to the sweep.
    In the embedded mode (eager tasks) inside a request, the post waits
    until the response is sent."""
    from tutor.lti.tasks import post_score

    def send() -> None:
        try:
            post_score.delay(str(score_id))
        except Exception:
            log.warning("could not dispatch LTI score %s; the sweep will retry", score_id, exc_info=True)

    if settings.CELERY_TASK_ALWAYS_EAGER and after_response.defer(send):
        return
    send()


def _dispatch_later(score_id, delay: float) -> None:
    from tutor.lti.tasks import post_score

    try:
        post_score.apply_async((str(score_id),), countdown=delay)
    except Exception:
        log.warning("could not schedule LTI score %s; the sweep will retry", score_id, exc_info=True)


def scores_queue(*, attempt_id) -> list[ScorePost]:
    """Queue the score of a finished attempt for every line item its student
    launched the task from (the ``attempt_finished`` listener)."""
    attempt = (
        ReviewAttempt.objects.filter(pk=attempt_id)
        .select_related("submission")
        .only("id", "status", "attempt_seq", "created_at", "submission__student_id", "submission__task_id")
        .first()
    )
    if attempt is None or attempt.status != AttemptStatus.COMPLETED:
        return []
    submission = attempt.submission
    targets = grade_targets(student_id=submission.student_id, task_id=submission.task_id)
    if not targets:
        return []
    task = Task.objects.select_related("current_rubric").get(pk=submission.task_id)
    selection = select_feedback(submission.student_id, task)
    if selection.attempt_id != attempt.pk or selection.state not in (
        FeedbackState.PASSED,
        FeedbackState.CURRENT,
    ):
        return []
    now = timezone.now()
    created: list[ScorePost] = []
    with transaction.atomic():
        for target in targets:
            score = score_from_result(selection.result, pending_policy(target.link.registration))
            if score is None:
                log.info("attempt %s: nothing to post to link %s", attempt.pk, target.link_id)
                continue
            # One (line item, user) at a time: their timestamps must strictly increase.
            LinkMember.objects.select_for_update().filter(pk=target.pk).first()
            same_user = ScorePost.objects.filter(link=target.link, identity=target.identity)
            newer = (
                same_user.filter(attempt_seq__gt=attempt.attempt_seq)
                .exclude(status=ScoreStatus.FAILED)
                .exists()
            )
            try:
                with transaction.atomic():
                    row = ScorePost.objects.create(
                        link=target.link,
                        identity=target.identity,
                        attempt=attempt,
                        attempt_seq=attempt.attempt_seq,
                        scored_at=next_timestamp(
                            link_id=target.link_id, identity_id=target.identity_id, now=now
                        ),
                        score_given=score.given,
                        score_maximum=score.maximum,
                        activity_progress=ACTIVITY_COMPLETED,
                        grading_progress=score.grading_progress,
                        comment=score.comment,
                        status=ScoreStatus.SUPERSEDED if newer else ScoreStatus.QUEUED,
                        next_try_at=now,
                        dispatched_at=now,
                    )
            except IntegrityError:
                continue  # a duplicate delivery of the same attempt queued it already
            if newer:
                continue
            same_user.filter(status=ScoreStatus.QUEUED, attempt_seq__lt=attempt.attempt_seq).update(
                status=ScoreStatus.SUPERSEDED
            )
            created.append(row)
            transaction.on_commit(lambda pk=row.pk: score_dispatch(pk), robust=True)
    return created


def score_claim(*, score_id) -> tuple[ScorePost, uuid.UUID] | None:
    """Claim a queued row for this worker; None when another delivery or the
    sweep got there first."""
    token = uuid.uuid4()
    claimed = ScorePost.objects.filter(pk=score_id, status=ScoreStatus.QUEUED).update(
        status=ScoreStatus.POSTING, claim=token, claimed_at=timezone.now(), tries=F("tries") + 1
    )
    if claimed != 1:
        return None
    row = ScorePost.objects.select_related("link", "link__registration", "link__task", "identity").get(
        pk=score_id
    )
    return row, token


def _audit_try(row: ScorePost, answer: platform.PlatformAnswer, event: str, to_state: str, **more) -> None:
    audit_record(
        actor=None,
        actor_label=AUDIT_ACTOR,
        event=event,
        target=row,
        course=row.link.task.course_id,
        from_state=ScoreStatus.POSTING,
        to_state=to_state,
        extra={
            "attempt_seq": row.attempt_seq,
            "score_given": row.score_given,
            "score_maximum": row.score_maximum,
            "grading_progress": row.grading_progress,
            "line_item": row.link.lineitem_url,
            "user_id": row.identity.subject,
            "try": row.tries,
            "timestamp": row.scored_at.isoformat(),
            "http_status": answer.http_status,
            "answer": answer.text,
            **more,
        },
    )


def score_posted(
    *, row: ScorePost, claim: uuid.UUID, answer: platform.PlatformAnswer, by_refusal: bool = False
) -> bool:
    """The platform holds the score: it accepted it, or (``by_refusal``) it
    refused a retry because an earlier try of this document arrived."""
    with transaction.atomic():
        done = ScorePost.objects.filter(pk=row.pk, status=ScoreStatus.POSTING, claim=claim).update(
            status=ScoreStatus.POSTED,
            posted_at=timezone.now(),
            last_http_status=answer.http_status,
            last_answer=answer.text,
            confirmed_by_refusal=by_refusal,
        )
        if done != 1:
            log.warning("LTI score %s: claim lost after a successful post", row.pk)
            return False
        more = {"confirmed_by": "the platform's refusal of a retry"} if by_refusal else {}
        _audit_try(row, answer, AuditEvent.Event.LTI_SCORE_POSTED, ScoreStatus.POSTED, **more)
    return True


def _newest_known(row: ScorePost) -> bool:
    """No other score of (line item, user) is newer and on its way or posted."""
    return not (
        ScorePost.objects.filter(
            link_id=row.link_id, identity_id=row.identity_id, scored_at__gt=row.scored_at
        )
        .filter(status__in=[ScoreStatus.QUEUED, ScoreStatus.POSTING, ScoreStatus.POSTED])
        .exists()
    )


def _platform_holds_it(row: ScorePost, answer: platform.PlatformAnswer) -> str | None:
    """``posted`` when a refused retry means an earlier try arrived,
    ``superseded`` when the platform holds a newer score of ours, else None."""
    if answer.ok or row.tries < 2:
        return None  # a first try cannot have arrived before
    stored = platform.already_stored(answer)
    if stored == "same" or (stored == "newer" and _newest_known(row)):
        return ScoreStatus.POSTED
    if stored == "newer":
        return ScoreStatus.SUPERSEDED
    return None


def score_failed(
    *, row: ScorePost, claim: uuid.UUID, answer: platform.PlatformAnswer, superseded: bool = False
) -> str | None:
    """Record a failed try: back to ``queued`` after a backoff when a later
    try may succeed and tries remain, ``superseded`` when the platform holds
    a newer score of ours, else ``failed``. Returns the new status."""
    retry = answer.retry and row.tries < settings.LTI_SCORE_MAX_TRIES and not superseded
    delay = retry_delay(row.tries)
    now = timezone.now()
    eager = settings.CELERY_TASK_ALWAYS_EAGER
    changes = {"last_http_status": answer.http_status, "last_answer": answer.text, "claim": None}
    if retry:
        # Eager mode has no delayed messages: the sweep sends the retry when it is due.
        changes.update(
            status=ScoreStatus.QUEUED,
            next_try_at=now + timedelta(seconds=delay),
            dispatched_at=None if eager else now + timedelta(seconds=delay),
        )
    else:
        changes.update(status=ScoreStatus.SUPERSEDED if superseded else ScoreStatus.FAILED)
    with transaction.atomic():
        done = ScorePost.objects.filter(pk=row.pk, status=ScoreStatus.POSTING, claim=claim).update(**changes)
        if done != 1:
            return None
        _audit_try(row, answer, AuditEvent.Event.LTI_SCORE_FAILED, changes["status"])
        if retry and not eager:
            transaction.on_commit(lambda: _dispatch_later(row.pk, delay), robust=True)
    return changes["status"]


def score_send(*, score_id) -> str | None:
    """Claim, post and record one score row (the task's body). None when the
    row was not claimable (already posted, posting, or superseded)."""
    claimed = score_claim(score_id=score_id)
    if claimed is None:
        return None
    row, claim = claimed
    document = platform.score_document(
        user_id=row.identity.subject,
        given=row.score_given,
        maximum=row.score_maximum,
        activity=row.activity_progress,
        grading=row.grading_progress,
        timestamp=row.scored_at,
        comment=row.comment,
    )
    try:
        answer = platform.post_score(
            registration=row.link.registration, lineitem_url=row.link.lineitem_url, document=document
        )
    except Exception as exc:  # a bug must not leave the row claimed until the sweep
        log.exception("LTI score %s: post failed unexpectedly", row.pk)
        answer = platform.PlatformAnswer(ok=False, retry=True, http_status=None, text=type(exc).__name__)
    if answer.ok:
        return ScoreStatus.POSTED if score_posted(row=row, claim=claim, answer=answer) else None
    held = _platform_holds_it(row, answer)
    if held == ScoreStatus.POSTED:
        return (
            ScoreStatus.POSTED if score_posted(row=row, claim=claim, answer=answer, by_refusal=True) else None
        )
    return score_failed(row=row, claim=claim, answer=answer, superseded=held == ScoreStatus.SUPERSEDED)


def score_requeue(*, score: ScorePost, actor) -> bool:
    """Staff send a failed score again (admin action), with fresh tries and a
    fresh timestamp: a deliberate re-send is a new score document (AGS). Not
    when a newer score of the same line item and user is on its way or
    posted -- it would overwrite that one."""
    now = timezone.now()
    with transaction.atomic():
        LinkMember.objects.select_for_update().filter(
            link_id=score.link_id, identity_id=score.identity_id
        ).first()
        newer = ScorePost.objects.filter(
            link_id=score.link_id,
            identity_id=score.identity_id,
            attempt_seq__gt=score.attempt_seq,
            status__in=[ScoreStatus.QUEUED, ScoreStatus.POSTING, ScoreStatus.POSTED],
        ).exists()
        if newer:
            return False
        fresh = next_timestamp(link_id=score.link_id, identity_id=score.identity_id, now=now)
        done = ScorePost.objects.filter(pk=score.pk, status=ScoreStatus.FAILED).update(
            status=ScoreStatus.QUEUED, tries=0, next_try_at=now, dispatched_at=now, scored_at=fresh
        )
        if done != 1:
            return False
        audit_record(
            actor=actor,
            event=AuditEvent.Event.LTI_SCORE_REQUEUED,
            target=score,
            course=score.link.task.course_id,
            from_state=ScoreStatus.FAILED,
            to_state=ScoreStatus.QUEUED,
            extra={"timestamp": fresh.isoformat(), "previous_timestamp": score.scored_at.isoformat()},
        )
        transaction.on_commit(lambda: score_dispatch(score.pk), robust=True)
    return True


def scores_sweep(*, now=None) -> dict[str, int]:
    """Keep every score row moving (run by beat, by ``lti_sweep_scores`` and
    by the embedded server):

    - ``queued`` and due, with no dispatch since ``LTI_SCORE_REDISPATCH_AFTER``
      (or none at all in eager mode): dispatch it;
    - ``posting`` with a claim older than the task's hard limit: its worker
      died -- back to ``queued`` while tries remain, else ``failed``.

    Expired login nonces are deleted on the way.
    """
    now = now or timezone.now()
    counts = {"dispatched": 0, "requeued": 0, "failed": 0}
    stale = now - timedelta(seconds=settings.LTI_SCORE_REDISPATCH_AFTER)
    undispatched = Q(dispatched_at__isnull=True) | Q(dispatched_at__lt=stale)
    for score_id in ScorePost.objects.filter(
        undispatched, status=ScoreStatus.QUEUED, next_try_at__lte=now
    ).values_list("id", flat=True)[:1000]:
        if ScorePost.objects.filter(undispatched, pk=score_id, status=ScoreStatus.QUEUED).update(
            dispatched_at=now
        ):
            score_dispatch(score_id)
            counts["dispatched"] += 1

    lost_before = now - timedelta(seconds=settings.LTI_SCORE_HARD_TIME_LIMIT + CLAIM_MARGIN_SECONDS)
    for score_id, claim, tries in ScorePost.objects.filter(
        status=ScoreStatus.POSTING, claimed_at__lt=lost_before
    ).values_list("id", "claim", "tries")[:1000]:
        running = ScorePost.objects.filter(pk=score_id, status=ScoreStatus.POSTING, claim=claim)
        if tries < settings.LTI_SCORE_MAX_TRIES:
            if running.update(status=ScoreStatus.QUEUED, claim=None, next_try_at=now, dispatched_at=now):
                score_dispatch(score_id)
                counts["requeued"] += 1
        else:
            with transaction.atomic():
                if running.update(
                    status=ScoreStatus.FAILED, claim=None, last_answer="the posting worker stopped"
                ):
                    row = ScorePost.objects.select_related("link", "link__task", "identity").get(pk=score_id)
                    answer = platform.PlatformAnswer(
                        ok=False, retry=False, http_status=None, text=row.last_answer
                    )
                    _audit_try(row, answer, AuditEvent.Event.LTI_SCORE_FAILED, ScoreStatus.FAILED)
                    counts["failed"] += 1
    login_nonces_purge(now=now)
    return counts
