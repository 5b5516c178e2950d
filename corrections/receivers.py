"""What the corrections app does when the tutor app says something happened."""

from __future__ import annotations

from django.db import transaction
from django.db.models.signals import post_delete, post_save

from tutor.models import Task, TutorMessage
from tutor.signals import user_message_handled, user_message_records


def detection_outbox_record(sender, message, **kwargs) -> list:
    """SPEC §5: a user message's detection goes in the outbox in the write
    that stores the message (``tutor.signals.user_message_records``), so no
    crash between the commit and the worker loses it -- when the message can
    be a correction at all (``corrections.services.dispatch.detection_needed``)."""
    from corrections.services.dispatch import detection_needed, detection_row

    if message.role != TutorMessage.Role.USER or not detection_needed(message):
        return []
    return [detection_row(message=message)]


def enqueue_detection(sender, message, session, reply, **kwargs) -> None:
    """SPEC §4: detection of every stored user message that can be a
    correction is enqueued on commit, after the tutor's reply or its 503 --
    never before the model call."""
    from corrections.services.dispatch import detection_dispatch, detection_needed

    if not detection_needed(message):
        return
    message_id, correlation_id = str(message.pk), message.correlation_id or ""
    # Until the task has run, the message stays in the outbox for the sweep.
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


def course_rows_saved_or_deleted(sender, *, instance, created=False, **kwargs) -> None:
    """A fact or process rule saved (edited in the admin, approved) or deleted
    changes its course's snapshot (``corrections.selectors.course_snapshot``), which
    holds verified and disputed facts only: a proposed fact created or
    deleted changes none. The services' UPDATEs of a fact say so themselves."""
    from corrections.models import INJECTED_FACT_STATUSES, Fact
    from corrections.selectors.course_snapshot import corrections_changed

    fact = isinstance(instance, Fact)
    if (
        fact
        and (created or kwargs.get("signal") is post_delete)
        and instance.status not in INJECTED_FACT_STATUSES
    ):
        return
    # A process rule: the rules are read again with any change of the scope.
    corrections_changed(instance.course_id, facts=[instance.pk] if fact else [])


def memory_item_deleted(sender, *, instance, **kwargs) -> None:
    """An item deleted through the ORM (the admin, a session or user deleted)
    changes its user's memory snapshot -- except an expired session item (the
    purge): the snapshot leaves those out already. Items are written by
    ``corrections.services.memory`` alone (the admin shows them read-only),
    which says so itself once their tokens are written."""
    from django.utils import timezone

    from corrections.models import MemoryTier
    from corrections.selectors.memory_snapshot import memory_changed

    expired = instance.expires_at is not None and instance.expires_at <= timezone.now()
    if expired and instance.tier == MemoryTier.SESSION:
        return
    memory_changed(instance.user_id)


def connect_receivers() -> None:
    from corrections.models import Fact, MemoryItem, ProcessRule

    user_message_records.connect(detection_outbox_record, dispatch_uid="corrections.detection_outbox_record")
    user_message_handled.connect(enqueue_detection, dispatch_uid="corrections.enqueue_detection")
    post_save.connect(index_task, sender=Task, dispatch_uid="corrections.index_task")
    post_delete.connect(memory_item_deleted, sender=MemoryItem, dispatch_uid="corrections.memory.deleted")
    for model in (Fact, ProcessRule):
        uid = f"corrections.snapshot.{model._meta.model_name}"
        post_save.connect(course_rows_saved_or_deleted, sender=model, dispatch_uid=f"{uid}.saved")
        post_delete.connect(course_rows_saved_or_deleted, sender=model, dispatch_uid=f"{uid}.deleted")
