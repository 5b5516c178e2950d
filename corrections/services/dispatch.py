"""Publishing detection tasks through an outbox (SPEC §5: detection runs on
every user message): a candidate message gets a ``PendingDetection`` row in
the write that stores it, its task is published after the commit, and the
sweep publishes again what was lost. Details: docs/architecture.md,
Correction detection.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.conf import settings
from django.db.models import F
from django.utils import timezone

from corrections.conf import setting
from corrections.models import PendingDetection

log = logging.getLogger(__name__)


def _interval() -> timedelta:
    return timedelta(seconds=setting("CORRECTIONS_DETECTION_SWEEP_INTERVAL"))


def _visibility() -> timedelta:
    return timedelta(seconds=settings.CELERY_VISIBILITY_TIMEOUT)


# The answer of ``detection_needed``, kept on the message instance between
# its outbox row and its on-commit hook (the publish).
_NEEDED_ATTRIBUTE = "_correction_candidate"


def detection_needed(message) -> bool:
    """Whether a stored user message goes to detection: its text can be a
    correction (the rules' first step, ``corrections.gate``; module docstring).
    Computed once per message instance."""
    needed = getattr(message, _NEEDED_ATTRIBUTE, None)
    if needed is None:
        from corrections.classifier import gate

        needed = gate(message.content or "")
        setattr(message, _NEEDED_ATTRIBUTE, needed)
    return needed


def detection_row(*, message, now: datetime | None = None) -> PendingDetection:
    """The outbox row (unsaved) of a user message being stored: written with
    it (``corrections.receivers.detection_outbox_record``)."""
    return PendingDetection(
        message=message,
        correlation_id=(message.correlation_id or "")[:64],
        due_at=(now or timezone.now()) + _visibility(),
    )


def _publish(message_id: str, correlation_id: str) -> bool:
    from corrections.tasks import detect_correction

    try:
        detect_correction.delay(message_id, correlation_id)
    except Exception:
        log.warning("could not enqueue correction detection for message %s", message_id, exc_info=True)
        return False
    return True


def _refused(message_id, now: datetime, *, claimed: bool = False) -> None:
    """A refused publish: due one interval later. A send the sweep claimed is
    given back -- a broker outage never uses up a message's sends."""
    changes = {"due_at": now + _interval(), "failures": F("failures") + 1}
    if claimed:
        changes["sends"] = F("sends") - 1
    PendingDetection.objects.filter(message_id=message_id).update(**changes)


def detection_dispatch(*, message_id: str, correlation_id: str = "", now: datetime | None = None) -> bool:
    """Publish the detection of one stored user message (after its commit).
    True when published; a refused publish makes its outbox row due one sweep
    interval later. Never raises: the student's exchange is done whatever the
    broker does."""
    if _publish(message_id, correlation_id):
        return True
    try:
        _refused(message_id, now or timezone.now())
    except Exception:
        # The database is down too: the row is due anyway, one visibility timeout on.
        log.error("could not mark the detection of message %s as refused", message_id, exc_info=True)
    return False


def detections_send_again(*, message_ids) -> int:
    """An operator's retry: the rows are due now, with all their sends back."""
    return PendingDetection.objects.filter(message_id__in=list(message_ids)).update(
        due_at=timezone.now(), sends=0
    )


def detection_done(*, message_id) -> None:
    """The detection of ``message_id`` has run: its outbox row goes. The plain
    ORM (``delete()`` is a transaction of its own): a worker path, where the
    BEGIN and COMMIT it costs were never measured to matter (STYLE)."""
    PendingDetection.objects.filter(message_id=message_id).delete()


def detections_sweep(*, now: datetime | None = None) -> dict:
    """Publish again the outbox rows that are due, oldest first, at most
    ``CORRECTIONS_DETECTION_SWEEP_BATCH``, each at most
    ``CORRECTIONS_DETECTION_MAX_SENDS`` times. Each row is claimed by a
    conditional UPDATE of its ``due_at`` (two sweeps never publish one row
    twice), which also makes it due one visibility timeout later; a refused
    publish makes it due one interval later instead, and the sweep stops there
    (the broker is down: the rest wait their turn)."""
    now = now or timezone.now()
    rows = list(
        PendingDetection.objects.filter(due_at__lte=now, sends__lt=setting("CORRECTIONS_DETECTION_MAX_SENDS"))
        .order_by("due_at")
        .values_list("message_id", "correlation_id", "due_at", "sends")[
            : setting("CORRECTIONS_DETECTION_SWEEP_BATCH")
        ]
    )
    published = failed = 0
    most = setting("CORRECTIONS_DETECTION_MAX_SENDS")
    for message_id, correlation_id, due_at, sends in rows:
        claimed = PendingDetection.objects.filter(message_id=message_id, due_at=due_at)
        if claimed.update(due_at=now + _visibility(), sends=F("sends") + 1) != 1:
            continue  # another sweep has it
        if _publish(str(message_id), correlation_id):
            published += 1
            if sends + 1 >= most:
                log.error(
                    "detection of message %s sent for the last time (%d sends); if it does not complete, "
                    "it waits for an operator (admin: Pending detections)",
                    message_id,
                    sends + 1,
                )
        else:
            _refused(message_id, now, claimed=True)
            failed += 1
            # The broker is still down: the other rows would each wait out the
            # same connection timeout for nothing. They keep their place.
            break
    return {"published": published, "failed": failed}
