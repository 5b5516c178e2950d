"""Corrections, memory tiers, system facts and review cases (SPEC §5, §8; seed 002).

Three tiers (seed 002 §2.1): session memory (this conversation only), user
memory (every conversation of that user) and system facts (every student of
the course). A correction is recorded once with where it went; memory items
and facts are what the tutor is later told. A conflicting factual correction
never touches an active fact: it becomes a proposal in a review case, and
course staff decide. The models live by idea in ``common``, ``facts``,
``cases`` and ``memory``; every name is re-exported here.
"""

from corrections.models.cases import (
    UNDECIDED_CASE_STATUSES,
    CaseKind,
    CaseStatus,
    CorrectionCase,
    ProcessRule,
    Proposal,
    ProposalSupporter,
)
from corrections.models.common import Classifier, CorrectionType, Source, Tier, TopicMixin
from corrections.models.facts import (
    CURRENT_FACT_STATUSES,
    INJECTED_FACT_STATUSES,
    REACH_ALL,
    Fact,
    FactKey,
    FactStatus,
    FactSupporter,
    FactToken,
    TaskFactOverlap,
    TaskToken,
)
from corrections.models.memory import Correction, MemoryItem, MemoryTier, MemoryToken, PendingDetection

__all__ = [
    "CorrectionType",
    "Tier",
    "Source",
    "Classifier",
    "TopicMixin",
    "FactStatus",
    "CURRENT_FACT_STATUSES",
    "INJECTED_FACT_STATUSES",
    "Fact",
    "FactToken",
    "FactKey",
    "TaskToken",
    "REACH_ALL",
    "TaskFactOverlap",
    "FactSupporter",
    "CaseStatus",
    "UNDECIDED_CASE_STATUSES",
    "CaseKind",
    "CorrectionCase",
    "Proposal",
    "ProposalSupporter",
    "ProcessRule",
    "MemoryTier",
    "MemoryItem",
    "MemoryToken",
    "Correction",
    "PendingDetection",
]
