"""A worker's side of a review attempt (SPEC §2): the claim, the terminal
write, and the sweep that keeps every attempt moving to exactly one terminal
state."""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from feedback.models import AttemptStatus, ErrorCode, ReviewAttempt
from feedback.results import model_failed_marks
from feedback.services.dispatch import announce_on_commit, attempt_dispatch

log = logging.getLogger(__name__)


def attempt_claim(*, attempt_id) -> tuple[ReviewAttempt, uuid.UUID] | None:
    """Claim a queued attempt for this worker; None when another delivery,
    worker or the sweep got there first (a duplicate delivery is a no-op)."""
    token = uuid.uuid4()
    claimed = ReviewAttempt.objects.filter(pk=attempt_id, status=AttemptStatus.QUEUED).update(
        status=AttemptStatus.RUNNING,
        claim=token,
        claimed_at=timezone.now(),
        claim_count=F("claim_count") + 1,
    )
    if claimed != 1:
        return None
    attempt = ReviewAttempt.objects.select_related(
        "submission", "submission__task", "submission__task__course", "rubric"
    ).get(pk=attempt_id)
    return attempt, token


def _finish(attempt_id, claim: uuid.UUID, **fields) -> bool:
    """Write a terminal state only if this worker still holds the claim."""
    done = ReviewAttempt.objects.filter(pk=attempt_id, status=AttemptStatus.RUNNING, claim=claim).update(
        finished_at=timezone.now(), **fields
    )
    if done != 1:
        log.info("attempt %s: claim lost, result discarded", attempt_id)
        return False
    announce_on_commit(attempt_id, fields["status"])
    return True


def attempt_complete(*, attempt_id, claim: uuid.UUID, result: dict, generation_attempts: int) -> bool:
    return _finish(
        attempt_id,
        claim,
        status=AttemptStatus.COMPLETED,
        result=result,
        model_failed=model_failed_marks(result),
        generation_attempts=generation_attempts,
    )


def attempt_failed(
    *,
    attempt_id,
    claim: uuid.UUID,
    status: str,
    error_code: str,
    detail: str = "",
    generation_attempts: int = 0,
) -> bool:
    """End an attempt ``unavailable`` or ``invalid`` -- never a student FAIL."""
    assert status in (AttemptStatus.UNAVAILABLE, AttemptStatus.INVALID)
    return _finish(
        attempt_id,
        claim,
        status=status,
        error_code=error_code,
        error_detail=detail[:2000],
        generation_attempts=generation_attempts,
    )


def attempts_sweep(*, now=None) -> dict[str, int]:
    """Keep every attempt moving to exactly one terminal state (SPEC §2).

    - ``queued`` longer than ``REVIEW_QUEUED_REDISPATCH_AFTER`` since its last
      dispatch: the broker may have been down -- dispatch again;
    - ``running`` with a claim older than the hard time limit: its worker died.
      The first time it goes back to ``queued``; the second time it ends
      ``unavailable`` with ``WORKER_LOST``.
    """
    now = now or timezone.now()
    counts = {"redispatched": 0, "requeued": 0, "worker_lost": 0}
    stale_dispatch = now - timedelta(seconds=settings.REVIEW_QUEUED_REDISPATCH_AFTER)
    for attempt_id in ReviewAttempt.objects.filter(
        status=AttemptStatus.QUEUED, dispatched_at__lt=stale_dispatch
    ).values_list("id", flat=True)[:1000]:
        if ReviewAttempt.objects.filter(
            pk=attempt_id, status=AttemptStatus.QUEUED, dispatched_at__lt=stale_dispatch
        ).update(dispatched_at=now):
            attempt_dispatch(attempt_id)
            counts["redispatched"] += 1

    lost_before = now - timedelta(seconds=settings.REVIEW_HARD_TIME_LIMIT)
    for attempt_id, claim, lost_count in ReviewAttempt.objects.filter(
        status=AttemptStatus.RUNNING, claimed_at__lt=lost_before
    ).values_list("id", "claim", "lost_count")[:1000]:
        running = ReviewAttempt.objects.filter(pk=attempt_id, status=AttemptStatus.RUNNING, claim=claim)
        if lost_count == 0:
            if running.update(
                status=AttemptStatus.QUEUED,
                claim=None,
                claimed_at=None,
                lost_count=F("lost_count") + 1,
                dispatched_at=now,
            ):
                attempt_dispatch(attempt_id)
                counts["requeued"] += 1
        elif running.update(
            status=AttemptStatus.UNAVAILABLE,
            error_code=ErrorCode.WORKER_LOST,
            error_detail="the worker reviewing this attempt stopped twice",
            lost_count=F("lost_count") + 1,
            finished_at=now,
        ):
            counts["worker_lost"] += 1
            announce_on_commit(attempt_id, AttemptStatus.UNAVAILABLE)
    return counts
