"""Publishing detection tasks, with an outbox for broker outages (SPEC §5).

Detection of every stored user message is enqueued after its commit. When
the broker cannot take the task at that moment, the message gets an
``UndispatchedDetection`` row instead of being lost; the sweep publishes
those again once an interval (``CORRECTIONS_DETECTION_SWEEP_INTERVAL``) has
passed since their last failure. The detection task is safe to run twice
(one correction per message), so a publish that reached the broker although
it reported a failure costs nothing but a repeat.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta

from django.db.models import F
from django.utils import timezone

from corrections.conf import setting
from corrections.models import UndispatchedDetection

log = logging.getLogger(__name__)


def _publish(message_id: str, correlation_id: str) -> bool:
    from corrections.tasks import detect_correction

    try:
        detect_correction.delay(message_id, correlation_id)
    except Exception:
        log.warning("could not enqueue correction detection for message %s", message_id, exc_info=True)
        return False
    return True


def detection_dispatch(*, message_id: str, correlation_id: str = "", now: datetime | None = None) -> bool:
    """Publish the detection of one stored user message (after its commit);
    on a failed publish, keep it in the outbox. True when published. Never
    raises: the student's exchange is done whatever the broker does."""
    if _publish(message_id, correlation_id):
        return True
    try:
        UndispatchedDetection.objects.update_or_create(
            message_id=message_id,
            defaults={"correlation_id": correlation_id[:64], "failed_at": now or timezone.now()},
        )
    except Exception:
        # The database is down too: this one detection is lost, the exchange is not.
        log.error("could not keep the detection of message %s for the sweep", message_id, exc_info=True)
    return False


def detections_sweep(*, now: datetime | None = None) -> dict:
    """Publish again the outbox rows whose last failure is older than
    ``CORRECTIONS_DETECTION_SWEEP_INTERVAL``, oldest first, at most
    ``CORRECTIONS_DETECTION_SWEEP_BATCH``. Each row is claimed by a
    conditional UPDATE of its ``failed_at`` (two sweeps never publish one
    row twice); published → deleted, failed again → kept, one more failure,
    and the sweep stops there (the broker is down: the rest wait their turn)."""
    now = now or timezone.now()
    due = now - timedelta(seconds=setting("CORRECTIONS_DETECTION_SWEEP_INTERVAL"))
    rows = list(
        UndispatchedDetection.objects.filter(failed_at__lte=due)
        .order_by("failed_at")
        .values_list("message_id", "correlation_id", "failed_at")[
            : setting("CORRECTIONS_DETECTION_SWEEP_BATCH")
        ]
    )
    published = failed = 0
    for message_id, correlation_id, failed_at in rows:
        claimed = UndispatchedDetection.objects.filter(message_id=message_id, failed_at=failed_at)
        if claimed.update(failed_at=now) != 1:
            continue  # another sweep has it
        mine = UndispatchedDetection.objects.filter(message_id=message_id, failed_at=now)
        if _publish(str(message_id), correlation_id):
            mine.delete()
            published += 1
        else:
            mine.update(failures=F("failures") + 1)
            failed += 1
            # The broker is still down: the other rows would each wait out the
            # same connection timeout for nothing. They keep their place.
            break
    return {"published": published, "failed": failed}
