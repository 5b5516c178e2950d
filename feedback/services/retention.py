"""Deleting review history (SPEC §2): terminal attempts are deleted only by
named, audited services -- a retention purge (``manage.py
purge_submissions``), the benchmark's cleanup, an operator emptying the
database. This module is the one place that does it.

The database refuses a DELETE of a terminal attempt (migration 0004's
trigger) unless a purge permit row is visible to the deleting transaction.
``attempts_purge`` inserts the permit, deletes, and removes the permit again
in one transaction, so the guard is lifted for that transaction only.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db import connection, models, transaction
from django.db.models import ForeignObjectRel

from feedback.models import AttemptPurgePermit, AttemptStatus, ReviewAttempt, Submission
from tutor.audit import audit_record
from tutor.models import AuditEvent

_OPEN = (AttemptStatus.QUEUED, AttemptStatus.RUNNING)
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
    dependants), SET_NULL ones let go; PROTECT ones fail the purge. The purge's own tables are left to the
    statements below. Read from model metadata, so an app that adds a
    reference (regrade requests, agreement pairs, lessons' sources) needs no
    edit here."""
    # Hidden ones too: a foreign key with related_name="+" (a lesson's source,
    # a helpful/harmful bump's signal attempt) is not among ``related_objects``.
    for relation in model._meta.get_fields(include_hidden=True):
        if not isinstance(relation, ForeignObjectRel) or relation.many_to_many:
            continue
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
    record one ``attempts_purged`` audit event (actor None: an operator)
    with the counts and the ids of the students whose submissions went.

    The caller purges whole histories: a submission left behind that names
    a purged one as ``previous``, or an attempt reused from a purged one,
    fails the purge with IntegrityError, and nothing is deleted. (Going in
    batches, take the newest submissions first.)
    """
    ids = list(submission_ids)
    with transaction.atomic():
        permit = AttemptPurgePermit.objects.create(reason=reason[:200])
        attempt_ids = list(ReviewAttempt.objects.filter(submission_id__in=ids).values_list("pk", flat=True))
        students = set()
        for start in range(0, len(ids), PURGE_CHUNK):
            chunk = Submission.objects.filter(pk__in=ids[start : start + PURGE_CHUNK])
            students.update(chunk.values_list("student_id", flat=True))
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
            extra={"submissions": submissions, "attempts": attempts, "students": sorted(students)},
        )
    return Purged(submissions=submissions, attempts=attempts)


@dataclass(frozen=True)
class History:
    """One student's submissions of one task, oldest to newest."""

    student_id: int
    task_id: object
    submissions: int


# Histories per purge transaction at most: their students and tasks go in IN lists.
HISTORIES_MAX_BATCH = 1000


def _histories(submissions, before) -> list[History]:
    rows = (
        submissions.values("student_id", "task_id")
        .annotate(
            last=models.Max("created_at"),
            n=models.Count("id", distinct=True),
            open=models.Count("attempts", filter=models.Q(attempts__status__in=_OPEN)),
        )
        .filter(last__lt=before, open=0)
        .order_by("last", "student_id", "task_id")
    )
    return [History(row["student_id"], row["task_id"], row["n"]) for row in rows]


def histories_past_retention(*, course, before) -> list[History]:
    """The (student, task) histories of ``course`` whose newest submission was
    made before ``before`` and none of whose attempts is still queued or
    running (SPEC §2: a retention purge deletes whole histories, so no
    submission left behind names a purged one as ``previous``, and no
    attempt left was reused from a purged one -- reuse stays within a
    history). Oldest last submission first."""
    return _histories(Submission.objects.filter(task__course=course), before)


@dataclass(frozen=True)
class HistoriesPurged:
    histories: int
    submissions: int
    attempts: int


def histories_purge(*, course, histories: list[History], before, reason: str) -> HistoriesPurged:
    """Purge whole histories of ``course`` listed by ``histories_past_retention``
    (at most ``HISTORIES_MAX_BATCH``) in one audited ``attempts_purge``.

    The rule is checked again inside the purge's transaction: a history whose
    student submitted since it was listed, or that has an attempt queued or
    running now, is left out. (On PostgreSQL, a submission committed between
    that check and the purge's commit names a purged one as ``previous``: one
    of the two transactions then fails on that foreign key -- no row is lost,
    and a failed purge deletes nothing.)"""
    if len(histories) > HISTORIES_MAX_BATCH:
        raise ValueError(f"at most {HISTORIES_MAX_BATCH} histories per purge")
    listed = {(h.student_id, h.task_id) for h in histories}
    if not listed:
        return HistoriesPurged(0, 0, 0)
    with transaction.atomic():
        candidates = Submission.objects.filter(
            task__course=course,
            student_id__in={student for student, _ in listed},
            task_id__in={task for _, task in listed},
        )
        still = {(h.student_id, h.task_id) for h in _histories(candidates, before)} & listed
        ids = [
            pk
            for pk, student, task in candidates.values_list("pk", "student_id", "task_id")
            if (student, task) in still
        ]
        if not ids:
            return HistoriesPurged(0, 0, 0)
        purged = attempts_purge(submission_ids=ids, reason=reason, course=course)
    return HistoriesPurged(len(still), purged.submissions, purged.attempts)
