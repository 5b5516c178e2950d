"""System facts: creation, support and status changes (SPEC §5, §8).

Rules: every status change is a conditional UPDATE from the state it leaves
and writes a ``fact_changed`` audit row in the same transaction. A student's
fact is ``proposed`` until a person decides it (turn 3; seed 002 必须验证):
staff through its case (``corrections.services.cases``), or the course's
opt-in corroboration rule. Supporters are distinct users: the same user
saying it again neither counts nor renews the TTL.
"""

from __future__ import annotations

from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from corrections.models import (
    INJECTED_FACT_STATUSES,
    UNDECIDED_CASE_STATUSES,
    CaseKind,
    CorrectionCase,
    Fact,
    FactStatus,
    FactSupporter,
)
from corrections.selectors.course_snapshot import corrections_changed
from corrections.services.relevance import facts_index
from corrections.text import topic_key
from tutor import access
from tutor.audit import audit_record
from tutor.kernel.errors import Conflict, PermissionRefused
from tutor.models import AuditEvent


def fact_insert(
    *,
    course,
    tokens: list[str],
    statement: str,
    statement_key: str,
    statement_unit: str,
    status: str,
    actor,
    now: datetime,
    proposed_by=None,
    case=None,
    decided_by=None,
    reason: str = "",
    supersedes: Fact | None = None,
    staff_wording: bool = False,
) -> Fact:
    """A new current fact with its topic tokens and its place in the
    relevance index (``facts_index``), audited as created (``staff_wording``:
    a staff member wrote its statement)."""
    fact = Fact.objects.create(
        course=course,
        topic=" ".join(tokens),
        topic_tokens=list(tokens),
        topic_key=topic_key(tokens),
        token_count=len(tokens),
        statement=statement,
        statement_key=statement_key,
        statement_unit=statement_unit,
        status=status,
        valid_from=now,
        confirmed_at=now,
        proposed_by=proposed_by,
        case=case,
        decided_by=decided_by,
        decision_reason=reason,
        supersedes=supersedes,
    )
    facts_index(facts=[fact])
    audit_record(
        actor=actor,
        event=AuditEvent.Event.FACT_CHANGED,
        target=fact,
        course=course,
        from_state="",
        to_state=status,
        reason=reason,
        extra={
            "statement": statement[:500],
            "case": str(case.pk) if case else None,
            "supersedes": str(supersedes.pk) if supersedes else None,
            "staff_wording": staff_wording,
        },
    )
    return fact


def fact_transition(
    *, fact: Fact, from_states, to_state: str, actor, reason: str = "", extra=None, **fields
) -> bool:
    """Move ``fact`` to ``to_state`` if it is still in one of ``from_states``;
    audited. False when another decision got there first."""
    current = fact.status
    changed = Fact.objects.filter(pk=fact.pk, status__in=list(from_states)).update(status=to_state, **fields)
    if changed != 1:
        return False
    corrections_changed(fact.course_id, facts=[fact.pk])
    fact.refresh_from_db()
    audit_record(
        actor=actor,
        event=AuditEvent.Event.FACT_CHANGED,
        target=fact,
        course=fact.course_id,
        from_state=current,
        to_state=to_state,
        reason=reason,
        extra=extra or {},
    )
    return True


def fact_support(*, fact: Fact, user, correction, now: datetime) -> bool:
    """Add ``user`` as a supporter; True when they were not one yet. Support
    never verifies a fact by itself (corroboration is ``case_corroborate``)."""
    try:
        with transaction.atomic():
            FactSupporter.objects.create(fact=fact, user=user, correction=correction)
    except IntegrityError:
        return False
    Fact.objects.filter(pk=fact.pk).update(supporter_count=F("supporter_count") + 1, confirmed_at=now)
    fact.refresh_from_db(fields=["supporter_count", "confirmed_at", "status"])
    if fact.status in INJECTED_FACT_STATUSES:  # a proposed fact's confirmation changes no context
        corrections_changed(fact.course_id, facts=[fact.pk])
    return True


@transaction.atomic(durable=True)
def fact_set_pinned(*, fact: Fact, staff, pinned: bool, reason: str = "") -> Fact:
    """Pin (exempt from the TTL) or unpin a fact; course staff only, audited."""
    if not access.is_course_staff(staff, fact.course_id):
        raise PermissionRefused("only staff of this fact's course may pin it")
    if fact.status == FactStatus.SUPERSEDED:
        raise Conflict("a superseded fact is history; it cannot be pinned")
    Fact.objects.filter(pk=fact.pk).update(pinned=pinned, confirmed_at=timezone.now())
    corrections_changed(fact.course_id, facts=[fact.pk])
    fact.refresh_from_db()
    audit_record(
        actor=staff,
        event=AuditEvent.Event.FACT_CHANGED,
        target=fact,
        course=fact.course_id,
        from_state=fact.status,
        to_state=fact.status,
        reason=reason or ("pinned" if pinned else "unpinned"),
        extra={"pinned": pinned},
    )
    return fact


def fact_decide_proposed(*, fact: Fact, staff, reason: str, to_state: str, **fields) -> Fact:
    """Move a proposed fact to ``to_state`` on a staff decision (verified:
    confirmed now; superseded: ``valid_to`` now). Runs inside the decision's
    transaction (``corrections.services.cases``)."""
    if not access.is_course_staff(staff, fact.course_id):
        raise PermissionRefused("only staff of this fact's course may decide it")
    now = timezone.now()
    stamp = {"confirmed_at": now} if to_state == FactStatus.VERIFIED else {"valid_to": now}
    moved = fact_transition(
        fact=fact,
        from_states=[FactStatus.PROPOSED],
        to_state=to_state,
        actor=staff,
        reason=reason,
        decided_by=staff,
        decision_reason=reason,
        **stamp,
        **fields,
    )
    if not moved:
        raise Conflict("this fact is no longer proposed; reload the queue")
    return fact


def _without_open_case(fact: Fact) -> None:
    """A proposed fact with an undecided case is decided in the case, where
    staff see every statement on its topic (one road from proposed to verified)."""
    if CorrectionCase.objects.filter(
        course_id=fact.course_id,
        kind=CaseKind.FACT,
        topic_key=fact.topic_key,
        status__in=UNDECIDED_CASE_STATUSES,
    ).exists():
        raise Conflict("this fact has an open review case on its topic; decide it there")


@transaction.atomic(durable=True)
def fact_verify(*, fact: Fact, staff, reason: str) -> Fact:
    """Course staff confirm a proposed fact that has no open case (proposed →
    verified, SPEC §5, §8): the tutor injects it from the next turn on."""
    _without_open_case(fact)
    return fact_decide_proposed(fact=fact, staff=staff, reason=reason, to_state=FactStatus.VERIFIED)


@transaction.atomic(durable=True)
def fact_reject(*, fact: Fact, staff, reason: str) -> Fact:
    """Course staff turn down a proposed fact that has no open case: it
    becomes history (``superseded``, ``valid_to`` now) and is never injected."""
    _without_open_case(fact)
    return fact_decide_proposed(fact=fact, staff=staff, reason=reason, to_state=FactStatus.SUPERSEDED)
