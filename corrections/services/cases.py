"""Review cases: proposals, claims and decisions (SPEC §5, §8; seed 002 §4.4).

Rules:
- One undecided case per (course, kind, topic) collects every conflicting
  correction, grouped by statement; each statement counts distinct supporters.
- A claim is a lease of ``CORRECTIONS_CASE_LEASE_SECONDS`` (8 h). Claiming
  or deciding a case someone else holds under a live lease is refused (409);
  so is deciding a decided case. Both are one conditional UPDATE, so two
  staff members deciding at once cannot both win.
- accept: the chosen proposal (by default the one with most supporters)
  becomes the verified fact; the active one is superseded (``valid_to``).
  reject: the fact stays. dispute: the fact is marked disputed and the tutor
  is told every statement. A process case accepted becomes a course rule.
- Every claim and decision writes its audit row (``case_claimed`` …) in the
  same transaction, and so does every fact status change it causes.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from corrections.conf import setting
from corrections.course_snapshot import corrections_changed
from corrections.models import (
    CURRENT_FACT_STATUSES,
    CaseKind,
    CaseStatus,
    CorrectionCase,
    Fact,
    FactStatus,
    FactSupporter,
    ProcessRule,
    Proposal,
    ProposalSupporter,
)
from corrections.selectors import undecided_case
from corrections.services.facts import fact_insert, fact_transition
from tutor import access
from tutor.audit import audit_record
from tutor.kernel.errors import Conflict, InvalidInput, PermissionRefused
from tutor.models import AuditEvent, Course

DISPUTED_STATEMENT_CHARS = 500


def lock_course(course_id) -> None:
    """Serialise the fact and case writes of one course: two corrections on a
    topic at once must not both find "no fact yet" (SQLite's IMMEDIATE
    transactions serialise writers anyway; select_for_update is a no-op there)."""
    Course.objects.select_for_update().filter(pk=course_id).values_list("pk", flat=True).first()


# --- proposals -------------------------------------------------------------------------


def case_propose(
    *,
    course,
    kind: str,
    tokens: list[str],
    key: str,
    active_fact: Fact | None,
    statement: str,
    statement_key: str,
    statement_unit: str,
    user,
    correction,
) -> tuple[CorrectionCase, Proposal]:
    """Add ``user``'s statement to the undecided case on this topic (opened
    when there is none). Runs inside the correction's transaction."""
    case = undecided_case(course_id=course.pk, kind=kind, topic_key=key)
    if case is None:
        try:
            with transaction.atomic():
                case = CorrectionCase.objects.create(
                    course=course,
                    kind=kind,
                    topic=" ".join(tokens),
                    topic_tokens=list(tokens),
                    topic_key=key,
                    token_count=len(tokens),
                    active_fact=active_fact,
                )
        except IntegrityError:  # opened meanwhile by another writer
            case = undecided_case(course_id=course.pk, kind=kind, topic_key=key)
    proposal = Proposal.objects.filter(case=case, statement_key=statement_key).first()
    if proposal is None:
        try:
            with transaction.atomic():
                proposal = Proposal.objects.create(
                    case=case, statement=statement, statement_key=statement_key, statement_unit=statement_unit
                )
        except IntegrityError:
            proposal = Proposal.objects.get(case=case, statement_key=statement_key)
    try:
        with transaction.atomic():
            ProposalSupporter.objects.create(proposal=proposal, user=user, correction=correction)
    except IntegrityError:
        pass  # this user already supports this statement: it counts once
    else:
        Proposal.objects.filter(pk=proposal.pk).update(supporter_count=F("supporter_count") + 1)
    return case, proposal


# --- claims and decisions ------------------------------------------------------------------


def _open_to(staff, now: datetime) -> Q:
    """Cases ``staff`` may claim or decide: open, held by them, or held under
    a lease that has run out."""
    return Q(status=CaseStatus.OPEN) | Q(status=CaseStatus.CLAIMED) & (
        Q(claimed_by=staff) | Q(claimed_until__lt=now)
    )


def _refusal(case_id, staff, now: datetime) -> Conflict:
    case = CorrectionCase.objects.select_related("claimed_by", "decided_by").get(pk=case_id)
    if case.status not in (CaseStatus.OPEN, CaseStatus.CLAIMED):
        who = case.decided_by.get_username() if case.decided_by else "someone"
        return Conflict(f"this case was already decided: {case.status} by {who}")
    holder = case.claimed_by.get_username() if case.claimed_by else "someone"
    return Conflict(f"this case is claimed by {holder} until {case.claimed_until:%Y-%m-%d %H:%M} UTC")


def _check_staff(case: CorrectionCase, staff) -> None:
    if not access.is_course_staff(staff, case.course_id):
        raise PermissionRefused("only staff of this case's course may decide it")


@transaction.atomic(durable=True)
def case_claim(*, case: CorrectionCase, staff) -> CorrectionCase:
    """Hold ``case`` for ``CORRECTIONS_CASE_LEASE_SECONDS`` (renewed when
    claimed again by its holder)."""
    _check_staff(case, staff)
    now = timezone.now()
    before = CorrectionCase.objects.filter(pk=case.pk).values_list("status", flat=True).first()
    until = now + timedelta(seconds=setting("CORRECTIONS_CASE_LEASE_SECONDS"))
    claimed = (
        CorrectionCase.objects.filter(pk=case.pk)
        .filter(_open_to(staff, now))
        .update(status=CaseStatus.CLAIMED, claimed_by=staff, claimed_until=until)
    )
    if claimed != 1:
        raise _refusal(case.pk, staff, now)
    case.refresh_from_db()
    audit_record(
        actor=staff,
        event=AuditEvent.Event.CASE_CLAIMED,
        target=case,
        course=case.course_id,
        from_state=before or "",
        to_state=CaseStatus.CLAIMED,
        extra={"claimed_until": until.isoformat()},
    )
    return case


def _decide(*, case: CorrectionCase, staff, to_state: str, reason: str, event: str, extra: dict) -> str:
    """The conditional UPDATE every decision starts with; returns the state it left."""
    reason = (reason or "").strip()
    if not reason:
        raise InvalidInput("a decision needs a reason", field="reason")
    _check_staff(case, staff)
    lock_course(case.course_id)
    now = timezone.now()
    before = CorrectionCase.objects.filter(pk=case.pk).values_list("status", flat=True).first()
    decided = (
        CorrectionCase.objects.filter(pk=case.pk)
        .filter(_open_to(staff, now))
        .update(status=to_state, decided_by=staff, decided_at=now, reason=reason)
    )
    if decided != 1:
        raise _refusal(case.pk, staff, now)
    case.refresh_from_db()
    audit_record(
        actor=staff,
        event=event,
        target=case,
        course=case.course_id,
        from_state=before or "",
        to_state=to_state,
        reason=reason,
        extra=extra,
    )
    return before or ""


def _chosen(case: CorrectionCase, proposal_id) -> Proposal:
    proposals = list(case.proposals.order_by("-supporter_count", "created_at", "id"))
    if proposal_id is None:
        if not proposals:
            raise Conflict("this case has no proposal to accept")
        return proposals[0]
    for proposal in proposals:
        if str(proposal.pk) == str(proposal_id):
            return proposal
    raise InvalidInput("not a proposal of this case", field="proposal")


@transaction.atomic(durable=True)
def case_accept(*, case: CorrectionCase, staff, reason: str, proposal_id=None) -> CorrectionCase:
    """Accept a proposal: a fact case's statement becomes the verified fact
    (the active one superseded); a process case's becomes a course rule."""
    proposal = _chosen(case, proposal_id)
    _decide(
        case=case,
        staff=staff,
        to_state=CaseStatus.ACCEPTED,
        reason=reason,
        event=AuditEvent.Event.CASE_ACCEPTED,
        extra={"proposal": str(proposal.pk), "statement": proposal.statement[:500]},
    )
    if case.kind == CaseKind.PROCESS:
        same = ProcessRule.objects.filter(course_id=case.course_id, statement_key=proposal.statement_key)
        if not same.exists():
            ProcessRule.objects.create(
                course_id=case.course_id,
                statement=proposal.statement,
                statement_key=proposal.statement_key,
                case=case,
                approved_by=staff,
                reason=case.reason,
            )
        return case
    now = timezone.now()
    old = None
    if case.active_fact_id is not None:
        old = Fact.objects.filter(pk=case.active_fact_id, status__in=CURRENT_FACT_STATUSES).first()
    if old is not None:
        fact_transition(
            fact=old,
            from_states=CURRENT_FACT_STATUSES,
            to_state=FactStatus.SUPERSEDED,
            actor=staff,
            reason=case.reason,
            extra={"case": str(case.pk), "superseded_by_statement": proposal.statement[:500]},
            valid_to=now,
        )
    supporters = list(ProposalSupporter.objects.filter(proposal=proposal).order_by("created_at", "id"))
    new = fact_insert(
        course=case.course,
        tokens=case.topic_tokens,
        statement=proposal.statement,
        statement_key=proposal.statement_key,
        statement_unit=proposal.statement_unit,
        status=FactStatus.VERIFIED,
        actor=staff,
        now=now,
        proposed_by=supporters[0].user if supporters else None,
        case=case,
        decided_by=staff,
        reason=case.reason,
        supersedes=old,
    )
    FactSupporter.objects.bulk_create(
        FactSupporter(fact=new, user_id=s.user_id, correction_id=s.correction_id) for s in supporters
    )
    Fact.objects.filter(pk=new.pk).update(supporter_count=len(supporters))
    CorrectionCase.objects.filter(pk=case.pk).update(result_fact=new)
    case.refresh_from_db()
    return case


@transaction.atomic(durable=True)
def case_reject(*, case: CorrectionCase, staff, reason: str) -> CorrectionCase:
    """Keep the active fact (or, for a process case, no rule); the staff
    decision counts as a confirmation of the fact."""
    _decide(
        case=case,
        staff=staff,
        to_state=CaseStatus.REJECTED,
        reason=reason,
        event=AuditEvent.Event.CASE_REJECTED,
        extra={},
    )
    if case.active_fact_id is not None:
        Fact.objects.filter(pk=case.active_fact_id, status__in=CURRENT_FACT_STATUSES).update(
            confirmed_at=timezone.now()
        )
        corrections_changed(case.course_id)
    return case


@transaction.atomic(durable=True)
def case_dispute(*, case: CorrectionCase, staff, reason: str) -> CorrectionCase:
    """Mark the topic disputed: the active fact is injected with every
    proposed statement, and the tutor is told they are disputed."""
    if case.kind == CaseKind.PROCESS:
        raise Conflict("a process correction is accepted or rejected; it cannot be disputed")
    statements = [p.statement[:DISPUTED_STATEMENT_CHARS] for p in case.proposals.order_by("created_at", "id")]
    _decide(
        case=case,
        staff=staff,
        to_state=CaseStatus.DISPUTED,
        reason=reason,
        event=AuditEvent.Event.CASE_DISPUTED,
        extra={"statements": statements},
    )
    fact = Fact.objects.filter(pk=case.active_fact_id, status__in=CURRENT_FACT_STATUSES).first()
    if fact is not None:
        fact_transition(
            fact=fact,
            from_states=CURRENT_FACT_STATUSES,
            to_state=FactStatus.DISPUTED,
            actor=staff,
            reason=case.reason,
            extra={"case": str(case.pk), "disputed_with": statements},
            disputed_with=statements,
            confirmed_at=timezone.now(),
            case=case,
        )
    return case
