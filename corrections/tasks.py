"""Celery tasks of the corrections app: thin wrappers that take an id (STYLE)."""

from celery import shared_task


@shared_task(name="corrections.tasks.detect_correction", acks_late=True, ignore_result=True)
def detect_correction(message_id: str, correlation_id: str = "") -> str | None:
    """Detect and record the correction in a stored user message, if any.
    Safe to run twice: a duplicate delivery writes nothing (SPEC §5)."""
    from corrections.services.dispatch import detection_done
    from corrections.services.intake import correction_detect_message
    from tutor.kernel.correlation import reset_correlation_id, set_correlation_id

    token = set_correlation_id(correlation_id or None)
    try:
        correction = correction_detect_message(message_id=message_id, correlation_id=correlation_id)
        # Only once it has run: a task that fails leaves the message to the sweep.
        detection_done(message_id=message_id)
    finally:
        reset_correlation_id(token)
    return str(correction.pk) if correction is not None else None


@shared_task(name="corrections.tasks.purge_expired_memory", ignore_result=True)
def purge_expired_memory() -> int:
    from corrections.services.memory import memory_purge_expired

    return memory_purge_expired()


@shared_task(name="corrections.tasks.sweep_detections", ignore_result=True)
def sweep_detections() -> dict:
    """Publish again the detections still pending in the outbox when they are due."""
    from corrections.services.dispatch import detections_sweep

    return detections_sweep()
