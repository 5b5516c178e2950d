"""What the corrections app does when the tutor app says something happened."""

from __future__ import annotations

from django.db import transaction
from django.db.models.signals import post_save

from tutor.models import Task
from tutor.signals import user_message_handled


def enqueue_detection(sender, message, session, reply, **kwargs) -> None:
    """SPEC §4: detection of every stored user message is enqueued on commit,
    after the tutor's reply or its 503 -- never before the model call."""
    from corrections.services.dispatch import detection_dispatch

    message_id, correlation_id = str(message.pk), message.correlation_id or ""
    # A failed publish leaves the message in the outbox for the sweep.
    transaction.on_commit(
        lambda: detection_dispatch(message_id=message_id, correlation_id=correlation_id), robust=True
    )


# What the relevance index of a task depends on: its course and the fields of
# its text (corrections.relevance.task_text).
TASK_INDEXED_FIELDS = frozenset({"course", "course_id", "title", "goal", "steps", "materials"})


def index_task(sender, instance, created, raw, update_fields=None, **kwargs) -> None:
    """SPEC §5: a task's text takes part in fact relevance, so a saved task
    (a course import, the admin) has its overlap with the course's facts
    written again, in the same transaction, when its text's tokens changed.
    A fixture load (``raw``) is left to ``manage.py corrections_reindex``."""
    from corrections.services.relevance import task_index

    if raw or (update_fields is not None and not TASK_INDEXED_FIELDS & set(update_fields)):
        return
    task_index(task=instance, created=created)


def connect_receivers() -> None:
    user_message_handled.connect(enqueue_detection, dispatch_uid="corrections.enqueue_detection")
    post_save.connect(index_task, sender=Task, dispatch_uid="corrections.index_task")
