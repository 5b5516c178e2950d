"""The audit trail (SPEC §8): one service writes every decision's record.

Rule: a human decision or lifecycle transition writes exactly one
``AuditEvent`` in the same transaction as the change (zulip's
``RealmAuditLog``), so a refused or rolled-back change leaves no record and a
committed one always has its record. The request's correlation id is picked
up here, so a decision can be followed to its log lines and model calls.
"""

from __future__ import annotations

from typing import Any

from django.contrib.contenttypes.models import ContentType
from django.db import models, transaction

from tutor.kernel.correlation import current_or_none
from tutor.models import AuditEvent, Course

OPERATOR = "operator"  # actor label of a management command run from a shell


def _course_id(course: Course | Any | None):
    if course is None or isinstance(course, Course):
        return getattr(course, "pk", None)
    return course


def audit_record(
    *,
    actor,
    event: str,
    target: models.Model | None = None,
    course: Course | Any | None = None,
    from_state: str = "",
    to_state: str = "",
    reason: str = "",
    extra: dict | None = None,
    actor_label: str | None = None,
) -> AuditEvent:
    """Record ``event`` on ``target`` by ``actor`` (a user, or None for an
    operator's command). ``course`` (a Course or its id) scopes the row for
    staff. Must run inside the transaction of the change it records."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("audit_record must run inside the transaction of the change it records")
    if actor_label is None:
        actor_label = actor.get_username() if actor is not None else OPERATOR
    return AuditEvent.objects.create(
        actor=actor,
        actor_label=actor_label[:150],
        event=str(event),
        course_id=_course_id(course),
        target_type=ContentType.objects.get_for_model(target) if target is not None else None,
        target_id=str(target.pk) if target is not None else "",
        target_repr=str(target)[:200] if target is not None else "",
        from_state=str(from_state or "")[:64],
        to_state=str(to_state or "")[:64],
        reason=reason or "",
        correlation_id=current_or_none() or "",
        extra=extra or {},
    )
