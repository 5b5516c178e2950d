"""Sending review attempts to the workers (SPEC §2: the queued row is the outbox)."""

from __future__ import annotations

import logging
import uuid

from django.db import transaction

from feedback.models import AttemptStatus, ReviewAttempt

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
    if attempt.status == AttemptStatus.QUEUED:
        attempt_id = attempt.pk
        transaction.on_commit(lambda: attempt_dispatch(attempt_id), robust=True)
