"""What the corrections app does when the tutor app says something happened."""

from __future__ import annotations

import logging

from django.db import transaction

from tutor.signals import user_message_handled

log = logging.getLogger(__name__)


def dispatch_detection(message_id: str, correlation_id: str) -> None:
    from corrections.tasks import detect_correction

    try:
        detect_correction.delay(message_id, correlation_id)
    except Exception:
        # The message is stored; losing its detection to a broker outage costs
        # a correction, never the student's exchange.
        log.warning("could not enqueue correction detection for message %s", message_id, exc_info=True)


def enqueue_detection(sender, message, session, reply, **kwargs) -> None:
    """SPEC §4: detection of every stored user message is enqueued on commit,
    after the tutor's reply or its 503 -- never before the model call."""
    message_id, correlation_id = str(message.pk), message.correlation_id or ""
    transaction.on_commit(lambda: dispatch_detection(message_id, correlation_id), robust=True)


def connect_receivers() -> None:
    user_message_handled.connect(enqueue_detection, dispatch_uid="corrections.enqueue_detection")
