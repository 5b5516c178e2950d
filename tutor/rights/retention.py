"""Retention per kind of data (SPEC §13): what is past its time goes.

For each kind (``RetentionKind``) the period is the setting
``RETENTION_<KIND>_DAYS``, or a course's own (``RetentionOverride``); 0 keeps
the data. The app that owns the rows applies it (``RightsPart.retention``),
in batches of ``RETENTION_BATCH`` rows, each its own short transaction --
never a lock over a whole table -- with a progress line per batch. One
``retention_applied`` audit event per run records the counts.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from tutor.audit import audit_record
from tutor.models import AuditEvent, RetentionKind, RetentionOverride
from tutor.rights.registry import RetentionScope, parts

DEFAULT = "default"  # the counts of the courses that follow the settings


def default_days(kind: str) -> int:
    return int(getattr(settings, f"RETENTION_{kind.upper()}_DAYS", 0) or 0)


def _appliers() -> dict[str, Callable[..., int]]:
    found: dict[str, Callable[..., int]] = {}
    for part in parts():
        found.update(part.retention())
    return found


def retention_apply(
    *,
    now=None,
    dry_run: bool = False,
    batch: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> dict[str, dict[str, int]]:
    """Apply every kind's retention; counts per kind and course slug (or
    ``default``). A dry run counts what would go and writes nothing."""
    now = now or timezone.now()
    batch = batch or settings.RETENTION_BATCH
    say = progress or (lambda line: None)
    appliers = _appliers()
    overrides: dict[str, dict] = {}
    for course_id, slug, kind, days in RetentionOverride.objects.values_list(
        "course_id", "course__slug", "kind", "days"
    ):
        overrides.setdefault(kind, {})[course_id] = (slug, days)
    counts: dict[str, dict[str, int]] = {}
    for kind in RetentionKind.values:
        apply = appliers.get(kind)
        if apply is None:
            continue
        own = overrides.get(kind, {})
        groups = [(DEFAULT, RetentionScope(None, tuple(own)), default_days(kind))]
        groups += [(slug, RetentionScope((course_id,)), days) for course_id, (slug, days) in own.items()]
        for label, scope, days in groups:
            if days <= 0:
                continue
            before = now - timedelta(days=days)
            done = _run(apply, scope, before, batch, dry_run, lambda n, k=kind, g=label: say(f"{k} {g}: {n}"))
            if done:
                counts.setdefault(kind, {})[label] = done
    if not dry_run:
        with transaction.atomic():
            audit_record(
                actor=None,
                event=AuditEvent.Event.RETENTION_APPLIED,
                extra={"counts": counts, "days": {k: default_days(k) for k in RetentionKind.values}},
            )
    return counts


def _run(apply, scope, before, batch: int, dry_run: bool, say) -> int:
    if dry_run:
        return apply(scope=scope, before=before, limit=None, dry_run=True)
    total = 0
    while True:
        done = apply(scope=scope, before=before, limit=batch, dry_run=False)
        total += done
        if done:
            say(total)
        if done < batch:
            return total
