"""Where a detected correction is written: the routing table of SPEC §5
(thresholds are the ``CORRECTIONS_*`` settings). Details: docs/architecture.md,
Correction routing and review cases.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.utils import timezone

from corrections.conf import setting
from corrections.detection import Detection
from corrections.models import (
    CaseKind,
    Correction,
    CorrectionType,
    Fact,
    FactStatus,
    MemoryTier,
    ProcessRule,
    Tier,
)
from corrections.selectors import fact_on_topic
from corrections.services.cases import case_corroborate, case_propose, lock_course
from corrections.services.facts import fact_insert, fact_support
from corrections.services.memory import memory_remember


@dataclass
class Routed:
    tiers: list[str] = field(default_factory=list)
    fact: object = None
    case: object = None
    proposal: object = None
    memory: object = None


def session_scoped(detection: Detection) -> bool:
    """Does this correction live in session memory (and so repeat per session)?"""
    if detection.type == CorrectionType.NEGATIVE:
        return True
    return detection.type == CorrectionType.FACTUAL and detection.confidence < setting(
        "CORRECTIONS_USER_THRESHOLD"
    )


def _memory_content(detection: Detection) -> str:
    if detection.type == CorrectionType.NEGATIVE:
        return detection.original_statement or detection.corrected_statement
    return detection.corrected_statement


def _remember(routed: Routed, correction: Correction, detection: Detection, tier: str) -> None:
    if tier == MemoryTier.SESSION and correction.session_id is None:
        return
    routed.memory = memory_remember(
        user=correction.user,
        course=correction.course,
        tier=tier,
        kind=detection.type,
        content=_memory_content(detection) or correction.content,
        tokens=list(detection.topic),
        statement_key=detection.statement_key,
        session=correction.session if tier == MemoryTier.SESSION else None,
    )
    routed.tiers.append(tier)


def route(*, correction: Correction, detection: Detection) -> Routed:
    """Write ``correction`` where the table says. Runs inside its transaction."""
    routed = Routed()
    kind, confidence = detection.type, detection.confidence
    if kind == CorrectionType.FACTUAL:
        if confidence < setting("CORRECTIONS_USER_THRESHOLD"):
            _remember(routed, correction, detection, MemoryTier.SESSION)
        elif confidence < setting("CORRECTIONS_SYSTEM_THRESHOLD") or not detection.topic:
            _remember(routed, correction, detection, MemoryTier.USER)
        else:
            _route_system(routed, correction, detection)
    elif kind == CorrectionType.PREFERENCE:
        _remember(routed, correction, detection, MemoryTier.USER)
    elif kind == CorrectionType.PROCESS:
        _remember(routed, correction, detection, MemoryTier.USER)
        if confidence >= setting("CORRECTIONS_PROCESS_CASE_THRESHOLD"):
            _route_process_case(routed, correction, detection)
    elif kind == CorrectionType.NEGATIVE:
        _remember(routed, correction, detection, MemoryTier.SESSION)
    return routed


def _same_statement(fact, detection: Detection) -> bool:
    if fact.statement_key != detection.statement_key:
        return False
    unit = detection.quantity.unit if detection.quantity else ""
    return not unit or not fact.statement_unit or unit == fact.statement_unit


def _route_system(routed: Routed, correction: Correction, detection: Detection) -> None:
    """A course fact passes a person (turn 3): a new statement is a proposed
    fact with a case for its topic, the same statement one more supporter, a
    different one a proposal in the topic's case. Until a decision the
    author's user memory carries it; no classmate sees a proposed fact."""
    lock_course(correction.course_id)
    now = timezone.now()
    tokens = list(detection.topic)
    unit = detection.quantity.unit if detection.quantity else ""
    fact = fact_on_topic(course_id=correction.course_id, tokens=tokens)
    if fact is None:
        fact = fact_insert(
            course=correction.course,
            tokens=tokens,
            statement=detection.corrected_statement,
            statement_key=detection.statement_key,
            statement_unit=unit,
            status=FactStatus.PROPOSED,
            actor=correction.user,
            now=now,
            proposed_by=correction.user,
            reason=f"correction {correction.pk}, confidence {detection.confidence:.2f}",
        )
    elif _same_statement(fact, detection) and fact.status != FactStatus.PROPOSED:
        # The course's decided fact, said again: a confirmation, nothing to decide.
        fact_support(fact=fact, user=correction.user, correction=correction, now=now)
        routed.fact = fact
        routed.tiers.append(Tier.SYSTEM)
        return
    same = _same_statement(fact, detection)
    if same:
        fact_support(fact=fact, user=correction.user, correction=correction, now=now)
    # A conflict never overwrites the fact (seed 002 §4.4), and a proposal
    # waits for staff: both join the one undecided case of the topic.
    routed.case, routed.proposal = case_propose(
        course=correction.course,
        kind=CaseKind.FACT,
        tokens=list(fact.topic_tokens),
        key=fact.topic_key,
        active_fact=fact,
        statement=fact.statement if same else detection.corrected_statement,
        statement_key=fact.statement_key if same else detection.statement_key,
        statement_unit=fact.statement_unit if same else unit,
        user=correction.user,
        correction=correction,
    )
    routed.fact = fact
    if fact.status == FactStatus.PROPOSED:
        routed.tiers.append(Tier.SYSTEM)
        if fact.case_id is None:
            Fact.objects.filter(pk=fact.pk).update(case=routed.case)
        if same and case_corroborate(case=routed.case, fact=fact, user=correction.user):
            return  # the course's corroboration rule verified it: the class sees it now
    _remember(routed, correction, detection, MemoryTier.USER)
    routed.tiers.append(Tier.CASE)


def _route_process_case(routed: Routed, correction: Correction, detection: Detection) -> None:
    """Process corrections are keyed by their statement: one case each."""
    lock_course(correction.course_id)
    rules = ProcessRule.objects.filter(course_id=correction.course_id, statement_key=detection.statement_key)
    if rules.exists():
        return  # already a rule of the course
    tokens = list(detection.topic)
    routed.case, routed.proposal = case_propose(
        course=correction.course,
        kind=CaseKind.PROCESS,
        tokens=tokens,
        key=f"process:{detection.statement_key}",
        active_fact=None,
        statement=detection.corrected_statement,
        statement_key=detection.statement_key,
        statement_unit="",
        user=correction.user,
        correction=correction,
    )
    routed.tiers.append(Tier.CASE)
