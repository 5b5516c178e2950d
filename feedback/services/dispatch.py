"""Sending review attempts to the workers (SPEC §2: the queued row is the outbox)."""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from feedback.models import AttemptStatus, ReviewAttempt
from feedback.signals import attempt_finished

log = logging.getLogger(__name__)


def unpublished_mark(now):
    """``dispatched_at`` of an attempt whose task is not published yet: as if
    published one visibility timeout ago, less a grace of two sweep
    intervals. If the process dies between the commit and the publish, the
    sweep sends it within that grace -- not a whole visibility timeout later
    (SPEC §2: terminal within the hard limit plus two sweep intervals)."""
    return now - timedelta(seconds=settings.CELERY_VISIBILITY_TIMEOUT - 2 * settings.REVIEW_SWEEP_INTERVAL)


def attempt_dispatch(attempt_id: uuid.UUID | str, *, now=None) -> bool:
    """Send the review task. Called from ``on_commit(robust=True)`` and by the
    sweep.

    ``dispatched_at`` says what the broker may still hold (the sweep re-sends
    only what it cannot, SPEC §2): a published task sets it to now -- the
    message may wait in a backed-up queue until Redis would redeliver it; a
    broker outage is logged and moves it one visibility timeout back, so the
    next sweep sends it; the queued row stays the outbox either way."""
    from feedback.tasks import review_attempt

    queued = ReviewAttempt.objects.filter(pk=attempt_id, status=AttemptStatus.QUEUED)
    now = now or timezone.now()
    try:
        review_attempt.delay(str(attempt_id))
    except Exception:
        log.warning("could not dispatch review attempt %s; the sweep will retry", attempt_id, exc_info=True)
        queued.update(dispatched_at=now - timedelta(seconds=settings.CELERY_VISIBILITY_TIMEOUT))
        return False
    queued.update(dispatched_at=now)
    return True


def dispatch_on_commit(attempt: ReviewAttempt) -> None:
    """After commit: a queued attempt goes to the workers; one that is
    already terminal (completed from the cache) is announced."""
    attempt_id = attempt.pk
    if attempt.status == AttemptStatus.QUEUED:
        transaction.on_commit(lambda: attempt_dispatch(attempt_id), robust=True)
    else:
        announce_on_commit(attempt_id, attempt.status)


def announce_on_commit(attempt_id, status: str) -> None:
    """Send ``attempt_finished`` once the terminal state is committed (at once
    outside a transaction). A failing listener is logged; it never undoes
    the attempt."""

    def announce() -> None:
        for receiver, result in attempt_finished.send_robust(
            sender=ReviewAttempt, attempt_id=attempt_id, status=str(status)
        ):
            if isinstance(result, Exception):
                log.error("attempt_finished receiver %r failed", receiver, exc_info=result)

    transaction.on_commit(announce, robust=True)
