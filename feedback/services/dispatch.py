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


def attempt_dispatch(attempt_id: uuid.UUID | str) -> bool:
    """Send the review task. Called from ``on_commit(robust=True)`` and by the
    sweep, with ``dispatched_at`` already set to the time of sending.

    A broker outage is logged, and the queued row stays as the outbox: its
    ``dispatched_at`` is moved one visibility timeout back, which is how the
    sweep tells "the broker holds no message for it" (re-send at the next
    sweep) from "published, maybe waiting in a backed-up queue" (re-send only
    once Redis would have redelivered it anyway, SPEC §2)."""
    from feedback.tasks import review_attempt

    try:
        review_attempt.delay(str(attempt_id))
    except Exception:
        log.warning("could not dispatch review attempt %s; the sweep will retry", attempt_id, exc_info=True)
        ReviewAttempt.objects.filter(pk=attempt_id, status=AttemptStatus.QUEUED).update(
            dispatched_at=timezone.now() - timedelta(seconds=settings.CELERY_VISIBILITY_TIMEOUT)
        )
        return False
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
