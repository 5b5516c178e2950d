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
from feedback.results import awaiting_staff_marks, model_failed_marks
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
        awaiting_staff=awaiting_staff_marks(result),
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
    result: dict | None = None,
) -> bool:
    """End an attempt ``unavailable`` or ``invalid`` -- never a student FAIL.
    ``result`` is the partial record an unavailable review keeps (its
    machine checks' verdicts, ``overall`` null; SPEC §2)."""
    assert status in (AttemptStatus.UNAVAILABLE, AttemptStatus.INVALID)
    assert result is None or (status == AttemptStatus.UNAVAILABLE and result["overall"] is None)
    return _finish(
        attempt_id,
        claim,
        status=status,
        error_code=error_code,
        error_detail=detail[:2000],
        generation_attempts=generation_attempts,
        result=result,
    )


def attempts_sweep(*, now=None) -> dict[str, int]:
    """Keep every attempt moving to exactly one terminal state (SPEC §2).

    - ``queued`` and dispatched longer than ``CELERY_VISIBILITY_TIMEOUT``
      ago: the broker cannot still hold its task -- dispatch it again. A
      failed publish moved ``dispatched_at`` back by that timeout
      (``attempt_dispatch``), so such an attempt goes at the next sweep; one
      whose publish never happened (the process died after the commit) goes
      within two sweep intervals (``unpublished_mark``); a published one
      merely waiting in a backed-up queue is left alone.
      Attempts never dispatched (``dispatched_at`` null) are not this
      sweep's to send.
    - ``running`` with a claim older than the hard time limit: its worker died.
      The first time it goes back to ``queued``; the second time it ends
      ``unavailable`` with ``WORKER_LOST``.

    Both scans are served by the partial indexes ``attempt_queued_dispatch_idx``
    and ``attempt_running_claim_idx``.
    """
    now = now or timezone.now()
    counts = {"redispatched": 0, "requeued": 0, "worker_lost": 0}
    broker_forgot = now - timedelta(seconds=settings.CELERY_VISIBILITY_TIMEOUT)
    # Oldest first, in the index's own order: the model's default ordering
    # (attempt_seq) would make the database walk another index instead.
    for attempt_id in (
        ReviewAttempt.objects.filter(status=AttemptStatus.QUEUED, dispatched_at__lt=broker_forgot)
        .order_by("dispatched_at")
        .values_list("id", flat=True)[:1000]
    ):
        # Claim the re-send: two sweeps at once send it once.
        if ReviewAttempt.objects.filter(
            pk=attempt_id, status=AttemptStatus.QUEUED, dispatched_at__lt=broker_forgot
        ).update(dispatched_at=now):
            attempt_dispatch(attempt_id, now=now)
            counts["redispatched"] += 1

    lost_before = now - timedelta(seconds=settings.REVIEW_HARD_TIME_LIMIT)
    for attempt_id, claim, lost_count in (
        ReviewAttempt.objects.filter(status=AttemptStatus.RUNNING, claimed_at__lt=lost_before)
        .order_by("claimed_at")
        .values_list("id", "claim", "lost_count")[:1000]
    ):
        running = ReviewAttempt.objects.filter(pk=attempt_id, status=AttemptStatus.RUNNING, claim=claim)
        if lost_count == 0:
            if running.update(
                status=AttemptStatus.QUEUED,
                claim=None,
                claimed_at=None,
                lost_count=F("lost_count") + 1,
                dispatched_at=now,
            ):
                attempt_dispatch(attempt_id, now=now)
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
