"""Hooks of other apps the lessons app listens to (STYLE: feedback never imports lessons)."""

from __future__ import annotations

from feedback.models import AttemptStatus
from lessons.services.capture import lessons_capture_from_attempt


def capture_on_attempt_finished(sender, *, attempt_id, status, **kwargs) -> None:
    """A completed review may show criteria fixed since the previous
    submission: capture them as drafts (SPEC §6 capture a). Runs after the
    attempt's commit; unavailable and invalid attempts never capture."""
    if status != AttemptStatus.COMPLETED:
        return
    lessons_capture_from_attempt(attempt_id=attempt_id)


def lesson_saved_or_deleted(sender, *, instance, **kwargs) -> None:
    """A lesson saved (created, edited in the admin) or deleted changes its
    scope's snapshots (``lessons.library``); the services' UPDATEs of a
    lesson's status or last hit say so themselves."""
    from lessons.library import lessons_changed

    lessons_changed(instance.course_id)
