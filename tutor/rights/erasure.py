"""Erasing a student from every loop (SPEC §13).

``student_erase`` is one audited request: every registered part
(``tutor.rights.registry``) deletes or pseudonymises its rows in one
transaction -- the erasure happens whole or not at all -- then the person's
login sessions, API token and user row go, last. The audit event
``student_erased`` (counts per table, the pseudonym, the correlation id) is
written in that transaction. After the commit the residue check scans every
table of the project (``tutor.rights.residue``); a hit is reported to the
caller and recorded as ``erasure_residue`` (where, never what).

With ``course`` only that course's data goes and the person stays.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.admin.models import LogEntry
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.db import transaction
from django.db.models import Q
from rest_framework.authtoken.models import Token

from tutor.audit import audit_record
from tutor.kernel.correlation import (
    current_or_none,
    get_correlation_id,
    reset_correlation_id,
    set_correlation_id,
)
from tutor.kernel.errors import InvalidInput, PermissionRefused
from tutor.models import AuditEvent, Course
from tutor.rights.registry import Ledger, parts
from tutor.rights.residue import Hit, residue_scan
from tutor.rights.subjects import (
    is_pseudonym,
    pseudonym_name,
    pseudonym_user,
    scan_needles,
    scrub_text,
    subject_for,
)

# Sessions read per batch while looking for the person's logins.
SESSION_BATCH = 1000


@dataclass
class ErasureReport:
    pseudonym: str
    course: str | None
    dry_run: bool
    counts: dict[str, dict[str, int]]
    correlation_id: str
    residue: list[Hit] = field(default_factory=list)


def _check(user, course: Course | None, actor) -> None:
    if is_pseudonym(user):
        raise InvalidInput(f"{user.get_username()} is already an erased person's stand-in", field="user")
    if user.is_superuser and course is None:
        raise PermissionRefused("a superuser is not erased: remove the superuser flag first")
    if actor is not None and actor.pk == user.pk:
        raise PermissionRefused("you cannot erase yourself")


def student_erase(
    *, user, course: Course | None = None, actor=None, dry_run: bool = False, canaries: tuple[str, ...] = ()
) -> ErasureReport:
    """Erase ``user`` (of ``course`` only, when given); ``actor`` None: an
    operator's command. ``canaries`` are extra texts the residue check looks
    for (tests write them into every input first). One correlation id runs
    through the erasure and its audit events: the request's, or a new one."""
    _check(user, course, actor)
    token = set_correlation_id(current_or_none())
    try:
        return _erase(user, course, actor, dry_run, canaries)
    finally:
        reset_correlation_id(token)


def _erase(user, course, actor, dry_run: bool, canaries: tuple[str, ...]) -> ErasureReport:
    needles = dict.fromkeys([user.get_username()], "username")
    for value in scan_needles(user):
        needles.setdefault(value, "e-mail" if value == user.email else "LTI sub")
    user_id = user.pk
    course_ids = None if course is None else (course.pk,)
    ledger = Ledger()
    with transaction.atomic(durable=True):
        # A dry run writes nothing, not even the stand-in.
        stand_in = get_user_model()(username=pseudonym_name(user)) if dry_run else pseudonym_user(user)
        subject = subject_for(user, course_ids=course_ids, pseudonym=stand_in)
        for part in parts():
            part.erase(subject, ledger, dry_run=dry_run)
        if subject.whole:
            _erase_account(subject, ledger, dry_run=dry_run)
        if dry_run:
            transaction.set_rollback(True)
        else:
            audit_record(
                actor=actor,
                event=AuditEvent.Event.STUDENT_ERASED,
                target=stand_in,
                course=course,
                to_state="erased",
                extra={
                    "pseudonym": stand_in.get_username(),
                    "course": course.slug if course is not None else None,
                    "whole": subject.whole,
                    "counts": ledger.counts(),
                },
            )
    report = ErasureReport(
        pseudonym=stand_in.get_username(),
        course=course.slug if course is not None else None,
        dry_run=dry_run,
        counts=ledger.counts(),
        correlation_id=get_correlation_id(),
    )
    if dry_run:
        return report
    report.residue = residue_scan(user_id=user_id, names=needles, canaries=canaries, course_ids=course_ids)
    if report.residue:
        with transaction.atomic():
            audit_record(
                actor=actor,
                event=AuditEvent.Event.ERASURE_RESIDUE,
                target=stand_in,
                course=course,
                extra={"hits": [{"table": h.table, "column": h.column, "row": h.pk} for h in report.residue]},
            )
    return report


def _erase_account(subject, ledger: Ledger, *, dry_run: bool) -> None:
    """The person's logins, token, admin log mentions and user row: last."""
    user = subject.user
    ledger.delete(Token.objects.filter(user=user), dry_run=dry_run)
    # Django keeps no index of sessions by user: each is decoded (an erasure is rare).
    sessions = []
    for session in Session.objects.iterator(chunk_size=SESSION_BATCH):
        if str(session.get_decoded().get("_auth_user_id")) == str(user.pk):
            sessions.append(session.pk)
    ledger.delete(Session.objects.filter(pk__in=sessions), dry_run=dry_run)
    named = Q()
    for identifier in subject.identifiers:
        named |= Q(object_repr__icontains=identifier) | Q(change_message__icontains=identifier)
    mentions = LogEntry.objects.exclude(user=user).filter(named) if named else LogEntry.objects.none()
    changed = 0
    for entry in mentions.iterator(chunk_size=SESSION_BATCH):
        shown = scrub_text(entry.object_repr, subject)
        message = scrub_text(entry.change_message, subject)
        if (shown, message) != (entry.object_repr, entry.change_message):
            changed += 1
            if not dry_run:
                LogEntry.objects.filter(pk=entry.pk).update(object_repr=shown, change_message=message)
    ledger.pseudonymise(LogEntry, changed)
    ledger.delete(get_user_model().objects.filter(pk=user.pk), dry_run=dry_run)
