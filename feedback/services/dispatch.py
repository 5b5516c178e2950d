"""Sending review attempts to the workers (SPEC §2: the queued row is the outbox)."""

from __future__ import annotations

import logging
import uuid

from django.db import transaction

from feedback.models import AttemptStatus, ReviewAttempt
from feedback.signals import attempt_finished

log = logging.getLogger(__name__)


def attempt_dispatch(attempt_id: uuid.UUID | str) -> None:
    """Send the review task. Called from ``on_commit(robust=True)`` and by the
    sweep; a broker outage is logged, and the queued row stays as the outbox."""
    from feedback.tasks import review_attempt

    try:
        review_attempt.delay(str(attempt_id))
    except Exception:
        log.warning("could not dispatch review attempt %s; the sweep will retry", attempt_id, exc_info=True)


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
