"""Hooks of other apps the lessons app listens to (STYLE: feedback never imports lessons)."""

from __future__ import annotations

from django.db.models.signals import post_delete

from feedback.models import AttemptStatus
from lessons.services.capture import lessons_capture_from_attempt


def capture_on_attempt_finished(sender, *, attempt_id, status, **kwargs) -> None:
    """A completed review may show criteria fixed since the previous
    submission: capture them as drafts (SPEC §6 capture a). Runs after the
    attempt's commit; unavailable and invalid attempts never capture."""
    if status != AttemptStatus.COMPLETED:
        return
    lessons_capture_from_attempt(attempt_id=attempt_id)


def lesson_saved_or_deleted(sender, *, instance, created=False, **kwargs) -> None:
    """A lesson saved (edited in the admin, created injected by an import) or
    deleted changes its scope's snapshots (``lessons.selectors.library``); a draft
    created or deleted changes only the snapshot of the lessons outside
    ``injected``. The services' UPDATEs of a lesson's status or last hit say
    so themselves."""
    from lessons.models import LessonStatus
    from lessons.selectors.library import lessons_changed

    if (created or kwargs.get("signal") is post_delete) and instance.status != LessonStatus.INJECTED:
        lessons_changed(instance.course_id, injected=False, rows=[instance.pk])
        return
    lessons_changed(instance.course_id, rows=[instance.pk])
