"""Review cases: proposals, claims and decisions (SPEC §5, §8; seed 002 §4.4).
One undecided case per (course, kind, topic); claims are leases; every claim
and decision is one conditional UPDATE with its audit row. Details:
docs/architecture.md, Correction routing and review cases.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from corrections.conf import setting
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
from corrections.selectors.course_snapshot import corrections_changed
from corrections.services.facts import fact_decide_proposed, fact_insert, fact_transition
from corrections.statements import quantities
from corrections.text import Analysed, text_key
from tutor import access
from tutor.audit import audit_record
from tutor.kernel.errors import Conflict, InvalidInput, PermissionRefused
from tutor.kernel.redaction import redact
from tutor.models import AuditEvent, Course

DISPUTED_STATEMENT_CHARS = 500
STAFF_TEXT_MAX_CHARS = 1000  # staff's wording of a fact, or a dispute note (a statement's size)


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


def case_corroborate(*, case: CorrectionCase, fact: Fact, user) -> bool:
    """The course's opt-in corroboration (SPEC §5): a proposed fact that
    ``CORRECTIONS_AUTO_VERIFY_SUPPORTERS`` (N >= 2) distinct students stated,
    in a case with no conflicting proposal, becomes verified and its case
    accepted, both audited with the student whose support completed it.
    Off (0) by default: staff decide. Runs inside the correction's transaction."""
    needed = setting("CORRECTIONS_AUTO_VERIFY_SUPPORTERS")
    if needed < 2 or fact.status != FactStatus.PROPOSED or fact.supporter_count < needed:
        return False
    if case.proposals.exclude(statement_key=fact.statement_key).exists():
        return False  # students disagree: a person decides
    reason = f"{fact.supporter_count} distinct students agreed (CORRECTIONS_AUTO_VERIFY_SUPPORTERS={needed})"
    now = timezone.now()
    closed = CorrectionCase.objects.filter(
        pk=case.pk, status__in=[CaseStatus.OPEN, CaseStatus.CLAIMED]
    ).update(status=CaseStatus.ACCEPTED, decided_at=now, reason=reason, result_fact=fact)
    if closed != 1:
        return False
    fact_transition(
        fact=fact,
        from_states=[FactStatus.PROPOSED],
        to_state=FactStatus.VERIFIED,
        actor=user,
        reason=reason,
        extra={"case": str(case.pk), "corroborated": True},
        confirmed_at=now,
        decision_reason=reason,
    )
    case.refresh_from_db()
    audit_record(
        actor=user,
        event=AuditEvent.Event.CASE_ACCEPTED,
        target=case,
        course=case.course_id,
        from_state=CaseStatus.OPEN,
        to_state=CaseStatus.ACCEPTED,
        reason=reason,
        extra={"corroborated": True, "supporters": fact.supporter_count},
    )
    return True


def staff_text(text: str | None, *, field: str) -> str:
    """Staff's own words for the tutor (a fact's wording, a dispute note),
    redacted like every text that reaches a model; too long → 400."""
    text = " ".join((text or "").split())
    if len(text) > STAFF_TEXT_MAX_CHARS:
        raise InvalidInput(f"at most {STAFF_TEXT_MAX_CHARS} characters", field=field)
    return redact(text).text if text else ""


def statement_key_of(text: str) -> tuple[str, str]:
    """(statement key, unit) of staff's wording, by the detector's rule for
    "the same statement": its number, or its normalised text."""
    found = quantities(Analysed(text))
    if found:
        quantity = found[0][0]
        return f"n:{quantity.number_text}", quantity.unit
    return f"t:{text_key(text)}", ""


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
def case_accept(
    *, case: CorrectionCase, staff, reason: str, proposal_id=None, statement: str | None = None
) -> CorrectionCase:
    """Accept a proposal, as written or in staff's ``statement``: a fact
    case's becomes the verified fact (the active one superseded, or verified
    in place when it is the proposal as written); a process case's becomes a
    course rule."""
    wording = staff_text(statement, field="statement")
    proposal = _chosen(case, proposal_id)
    _decide(
        case=case,
        staff=staff,
        to_state=CaseStatus.ACCEPTED,
        reason=reason,
        event=AuditEvent.Event.CASE_ACCEPTED,
        extra={
            "proposal": str(proposal.pk),
            "statement": proposal.statement[:500],
            "staff_statement": wording[:500] or None,
        },
    )
    if case.kind == CaseKind.PROCESS:
        key = statement_key_of(wording)[0] if wording else proposal.statement_key
        same = ProcessRule.objects.filter(course_id=case.course_id, statement_key=key)
        if not same.exists():
            ProcessRule.objects.create(
                course_id=case.course_id,
                statement=wording or proposal.statement,
                statement_key=key,
                case=case,
                approved_by=staff,
                reason=case.reason,
            )
        return case
    now = timezone.now()
    old = None
    if case.active_fact_id is not None:
        old = Fact.objects.filter(pk=case.active_fact_id, status__in=CURRENT_FACT_STATUSES).first()
    as_written = not wording and old is not None and old.statement_key == proposal.statement_key
    if as_written and old.status == FactStatus.PROPOSED:
        # The student's proposal as written: the same fact, now verified by a person.
        fact_decide_proposed(
            fact=old, staff=staff, reason=case.reason, to_state=FactStatus.VERIFIED, case=case
        )
        CorrectionCase.objects.filter(pk=case.pk).update(result_fact=old)
        case.refresh_from_db()
        return case
    if old is not None:
        fact_transition(
            fact=old,
            from_states=CURRENT_FACT_STATUSES,
            to_state=FactStatus.SUPERSEDED,
            actor=staff,
            reason=case.reason,
            extra={"case": str(case.pk), "superseded_by_statement": (wording or proposal.statement)[:500]},
            valid_to=now,
        )
    supporters = list(ProposalSupporter.objects.filter(proposal=proposal).order_by("created_at", "id"))
    if wording:
        key, unit = statement_key_of(wording)
        author = staff  # staff's own words: the staff member is the fact's author
    else:
        key, unit = proposal.statement_key, proposal.statement_unit
        author = supporters[0].user if supporters else None
    new = fact_insert(
        course=case.course,
        tokens=case.topic_tokens,
        statement=wording or proposal.statement,
        statement_key=key,
        statement_unit=unit,
        status=FactStatus.VERIFIED,
        actor=staff,
        now=now,
        proposed_by=author,
        case=case,
        decided_by=staff,
        reason=case.reason,
        supersedes=old,
        staff_wording=bool(wording),
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
    """Turn the proposals down. A verified active fact stays (the decision
    counts as its confirmation); a proposed one is turned down with them."""
    _decide(
        case=case,
        staff=staff,
        to_state=CaseStatus.REJECTED,
        reason=reason,
        event=AuditEvent.Event.CASE_REJECTED,
        extra={},
    )
    if case.active_fact_id is None:
        return case
    fact = Fact.objects.filter(pk=case.active_fact_id, status__in=CURRENT_FACT_STATUSES).first()
    if fact is not None and fact.status == FactStatus.PROPOSED:
        fact_decide_proposed(
            fact=fact, staff=staff, reason=case.reason, to_state=FactStatus.SUPERSEDED, case=case
        )
    elif fact is not None:
        Fact.objects.filter(pk=fact.pk).update(confirmed_at=timezone.now())
        corrections_changed(case.course_id, facts=[fact.pk])
    return case


@transaction.atomic(durable=True)
def case_dispute(*, case: CorrectionCase, staff, reason: str, note: str | None = None) -> CorrectionCase:
    """Mark the topic disputed: the active fact is injected with the other
    proposed statements, marked disputed, and with staff's ``note`` -- what
    the tutor is told about the topic (SPEC §5)."""
    if case.kind == CaseKind.PROCESS:
        raise Conflict("a process correction is accepted or rejected; it cannot be disputed")
    note = staff_text(note, field="note")
    fact = Fact.objects.filter(pk=case.active_fact_id, status__in=CURRENT_FACT_STATUSES).first()
    own_key = fact.statement_key if fact is not None else None
    statements = [
        p.statement[:DISPUTED_STATEMENT_CHARS]
        for p in case.proposals.order_by("created_at", "id")
        if p.statement_key != own_key
    ]
    _decide(
        case=case,
        staff=staff,
        to_state=CaseStatus.DISPUTED,
        reason=reason,
        event=AuditEvent.Event.CASE_DISPUTED,
        extra={"statements": statements, "note": note or None},
    )
    if fact is not None:
        fact_transition(
            fact=fact,
            from_states=CURRENT_FACT_STATUSES,
            to_state=FactStatus.DISPUTED,
            actor=staff,
            reason=case.reason,
            extra={"case": str(case.pk), "disputed_with": statements, "note": note or None},
            disputed_with=statements,
            staff_note=note,
            confirmed_at=timezone.now(),
            case=case,
            decided_by=staff,
            decision_reason=case.reason,
        )
    return case
