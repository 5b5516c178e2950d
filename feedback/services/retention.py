"""Deleting review history (SPEC §2): terminal attempts are deleted only by
named, audited services -- a retention purge, the benchmark's cleanup, an
operator emptying the database. This module is the one place that does it.

The database refuses a DELETE of a terminal attempt (migration 0004's
trigger) unless a purge permit row is visible to the deleting transaction.
``attempts_purge`` inserts the permit, deletes, and removes the permit again
in one transaction, so the guard is lifted for that transaction only.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection, models, transaction

from feedback.models import AttemptPurgePermit, ReviewAttempt, Submission
from tutor.audit import audit_record
from tutor.models import AuditEvent

# Ids per DELETE statement: under SQLite's limit of bound parameters.
PURGE_CHUNK = 500


@dataclass(frozen=True)
class Purged:
    submissions: int
    attempts: int


def _delete_where(model, column: str, ids: list) -> int:
    """DELETE the rows whose ``column`` is one of ``ids``, as one statement
    per chunk. Not through the ORM's collector: it refuses to delete a
    submission whose ``next`` (PROTECT) goes in the same purge, and an
    attempt that another one of the purge was ``reused_from``. Foreign keys
    are checked at commit, when all of them are gone."""
    table, col = connection.ops.quote_name(model._meta.db_table), connection.ops.quote_name(column)
    deleted = 0
    with connection.cursor() as cursor:
        for start in range(0, len(ids), PURGE_CHUNK):
            chunk = ids[start : start + PURGE_CHUNK]
            values = [Submission._meta.pk.get_db_prep_value(pk, connection) for pk in chunk]
            placeholders = ", ".join(["%s"] * len(values))
            # Identifiers come from model metadata; the values are parameters.
            cursor.execute(f"DELETE FROM {table} WHERE {col} IN ({placeholders})", values)  # noqa: S608
            deleted += cursor.rowcount
    return deleted


def _release_references(model, ids: list) -> None:
    """Rows of other models that point at the purged ones follow their own
    ``on_delete``: CASCADE rows go too (through the ORM, with their own
    dependants), SET_NULL ones let go. The purge's own tables are left to the
    statements below. Read from model metadata, so an app that adds a
    reference (regrade requests, agreement pairs, lessons' sources) needs no
    edit here."""
    for relation in model._meta.related_objects:
        related = relation.related_model
        if related in (Submission, ReviewAttempt) or not relation.field.concrete:
            continue
        for start in range(0, len(ids), PURGE_CHUNK):
            rows = related._base_manager.filter(
                **{f"{relation.field.name}__in": ids[start : start + PURGE_CHUNK]}
            )
            if relation.on_delete is models.CASCADE:
                rows.delete()
            elif relation.on_delete is models.SET_NULL:
                rows.update(**{relation.field.name: None})


def attempts_purge(*, submission_ids: list, reason: str, actor=None, course=None) -> Purged:
    """Delete the given submissions and every review attempt of theirs, and
    record one ``attempts_purged`` audit event (actor None: an operator).

    The caller purges whole histories: a submission left behind that names
    a purged one as ``previous``, or an attempt reused from a purged one,
    fails the purge with IntegrityError, and nothing is deleted. (Going in
    batches, take the newest submissions first.)
    """
    ids = list(submission_ids)
    with transaction.atomic():
        permit = AttemptPurgePermit.objects.create(reason=reason[:200])
        attempt_ids = list(ReviewAttempt.objects.filter(submission_id__in=ids).values_list("pk", flat=True))
        _release_references(ReviewAttempt, attempt_ids)
        _release_references(Submission, ids)
        attempts = _delete_where(ReviewAttempt, "submission_id", ids)
        submissions = _delete_where(Submission, "id", ids)
        # Foreign keys are deferred to the commit; checked now, a row left
        # pointing at a purged one fails the purge here, whole, while the
        # caller's transaction can still tell.
        connection.check_constraints(table_names=[Submission._meta.db_table, ReviewAttempt._meta.db_table])
        permit.delete()
        audit_record(
            actor=actor,
            event=AuditEvent.Event.ATTEMPTS_PURGED,
            course=course,
            reason=reason,
            extra={"submissions": submissions, "attempts": attempts},
        )
    return Purged(submissions=submissions, attempts=attempts)
