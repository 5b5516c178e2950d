"""Reads of the corrections app (SPEC §5, §7, §10).

The context selectors are one statement each, whatever the number of facts
or memory items: relevance is counted in SQL over the token tables
(``FactToken``, ``MemoryToken``), the budget's count is a LIMIT, and the
number left out is a window COUNT over the same rows -- so a provider costs
one query with 1 fact or with 10,000.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import (
    Case,
    CharField,
    Count,
    DateTimeField,
    F,
    IntegerField,
    Prefetch,
    Q,
    QuerySet,
    Value,
    When,
    Window,
)
from django.db.models.functions import Greatest, Least

from corrections.conf import setting
from corrections.models import (
    CURRENT_FACT_STATUSES,
    INJECTED_FACT_STATUSES,
    UNDECIDED_CASE_STATUSES,
    Correction,
    CorrectionCase,
    CorrectionType,
    Fact,
    FactToken,
    MemoryItem,
    MemoryTier,
    ProcessRule,
    Proposal,
    ProposalSupporter,
)
from corrections.text import jaccard
from tutor import access
from tutor.models import TutorMessage


@dataclass(frozen=True)
class Selection:
    """Rows for one context section and how many more matched."""

    rows: list
    total: int

    @property
    def omitted(self) -> int:
        return max(self.total - len(self.rows), 0)


def _selection(qs: QuerySet, limit: int) -> Selection:
    if limit <= 0:
        return Selection(rows=[], total=0)
    rows = list(qs.annotate(matched_total=Window(Count("pk")))[:limit])
    return Selection(rows=rows, total=rows[0].matched_total if rows else 0)


def _needed(tokens_field: str = "token_count"):
    """Topic tokens a text must contain (SPEC §5): INJECT_MIN_TOKENS, or all
    of them when the topic has fewer."""
    minimum = Value(setting("CORRECTIONS_INJECT_MIN_TOKENS"))
    return Least(minimum, F(tokens_field), output_field=IntegerField())


# --- the tutor context -------------------------------------------------------------


def facts_relevant(
    *, course_id, message_tokens: list[str], task_tokens: list[str], now: datetime, limit: int
) -> Selection:
    """Verified and disputed facts of the course whose topic the message or
    the task text overlaps (at least ``_needed`` of its tokens), not past the
    TTL unless pinned, ranked by overlap, then by the latest confirmation."""
    tokens = list(dict.fromkeys(message_tokens + task_tokens))
    if not tokens:
        return Selection(rows=[], total=0)
    fresh_since = now - timedelta(days=setting("CORRECTIONS_FACT_TTL_DAYS"))
    # Candidates come from the token index (facttoken_course_token_idx): with
    # thousands of facts in a course, starting from the course's facts would
    # join every one of them with its tokens to find the few that match.
    candidates = FactToken.objects.filter(course_id=course_id, token__in=tokens).values("fact_id")
    qs = (
        Fact.objects.filter(
            id__in=candidates,
            course_id=course_id,
            status__in=INJECTED_FACT_STATUSES,
            tokens__token__in=tokens,
        )
        .filter(Q(pinned=True) | Q(confirmed_at__gte=fresh_since))
        .annotate(
            message_hits=Count("tokens", filter=Q(tokens__token__in=message_tokens or [""])),
            task_hits=Count("tokens", filter=Q(tokens__token__in=task_tokens or [""])),
            needed=_needed(),
        )
        .filter(Q(message_hits__gte=F("needed")) | Q(task_hits__gte=F("needed")))
        .annotate(overlap=Greatest(F("message_hits"), F("task_hits")))
        .order_by("-overlap", "-confirmed_at", "id")
    )
    return _selection(qs, limit)


def process_rules_for_context(*, course_id, limit: int) -> Selection:
    """The course's approved process rules, oldest first (a rule approved
    long ago is not less binding)."""
    return _selection(ProcessRule.objects.filter(course_id=course_id).order_by("created_at", "id"), limit)


def preferences_for_context(*, user, limit: int) -> Selection:
    """The user's own preferences, newest first."""
    qs = MemoryItem.objects.filter(user=user, tier=MemoryTier.USER, kind=CorrectionType.PREFERENCE)
    return _selection(qs.order_by("-updated_at", "id"), limit)


def memories_for_context(
    *, user, session_id, query_tokens: list[str], now: datetime, limit: int
) -> Selection:
    """The user's memory items other than preferences: session memory of this
    session only (unexpired), then user memory ranked by topic overlap with
    the request, newest first."""
    in_session = Q(tier=MemoryTier.SESSION, session_id=session_id) & (
        Q(expires_at__isnull=True) | Q(expires_at__gt=now)
    )
    scope = Q(tier=MemoryTier.USER) | in_session if session_id else Q(tier=MemoryTier.USER)
    qs = (
        MemoryItem.objects.filter(user=user)
        .exclude(kind=CorrectionType.PREFERENCE)
        .filter(scope)
        .annotate(
            session_first=Case(When(tier=MemoryTier.SESSION, then=Value(0)), default=Value(1)),
            overlap=Count("tokens", filter=Q(tokens__token__in=query_tokens or [""])),
        )
        .order_by("session_first", "-overlap", "-updated_at", "id")
    )
    return _selection(qs, limit)


# --- routing -----------------------------------------------------------------------------


def fact_on_topic(*, course_id, tokens: list[str]) -> Fact | None:
    """The course's current fact on this topic (token Jaccard ≥
    ``CORRECTIONS_TOPIC_MATCH``), best match first. SQL keeps only facts that
    could reach the threshold -- |A∩B| ≥ t·|A| and |B| ≤ |A|/t -- and the
    exact Jaccard is taken here."""
    if not tokens:
        return None
    match = setting("CORRECTIONS_TOPIC_MATCH")
    size = len(set(tokens))
    candidates = (
        Fact.objects.filter(course_id=course_id, status__in=CURRENT_FACT_STATUSES, tokens__token__in=tokens)
        .annotate(shared=Count("tokens"))
        .filter(shared__gte=math.ceil(match * size - 1e-9), token_count__lte=math.floor(size / match + 1e-9))
        .order_by("-shared", "created_at")[:20]
    )
    scored = [(jaccard(tokens, fact.topic_tokens), fact) for fact in candidates]
    scored = [(score, fact) for score, fact in scored if score >= match]
    return max(scored, key=lambda pair: pair[0])[1] if scored else None


def undecided_case(*, course_id, kind: str, topic_key: str) -> CorrectionCase | None:
    return CorrectionCase.objects.filter(
        course_id=course_id, kind=kind, topic_key=topic_key, status__in=UNDECIDED_CASE_STATUSES
    ).first()


def recent_assistant_message(*, session_id, before_position: int) -> str | None:
    """The assistant's message a user message answers (the newest before it)."""
    return (
        TutorMessage.objects.filter(
            session_id=session_id, role=TutorMessage.Role.ASSISTANT, position__lt=before_position
        )
        .order_by("-position")
        .values_list("content", flat=True)
        .first()
    )


# --- HTTP ----------------------------------------------------------------------------------

MEMORY_COLUMNS = ("item_id", "item_tier", "item_kind", "item_content", "item_created_at", "item_expires_at")


def memory_list(user, *, now: datetime) -> QuerySet:
    """Every memory item that concerns ``user`` (SPEC §5): their session and
    user items (expired ones left out) and, as tier ``system``, the facts
    they stated -- one UNION, pageable."""
    own = (
        MemoryItem.objects.filter(user=user)
        .filter(Q(expires_at__isnull=True) | Q(expires_at__gt=now))
        .annotate(
            item_id=F("id"),
            item_tier=F("tier"),
            item_kind=F("kind"),
            item_content=F("content"),
            item_created_at=F("created_at"),
            item_expires_at=F("expires_at"),
        )
        .values(*MEMORY_COLUMNS)
        .order_by()
    )
    facts = (
        Fact.objects.filter(supporters__user=user)
        .annotate(
            item_id=F("id"),
            item_tier=Value("system", CharField()),
            item_kind=Value("fact", CharField()),
            item_content=F("statement"),
            item_created_at=F("created_at"),
            item_expires_at=Value(None, DateTimeField()),
        )
        .values(*MEMORY_COLUMNS)
        .order_by()
    )
    return own.union(facts, all=True).order_by("-item_created_at", "item_id")


def own_memory_item(user, item_id: uuid.UUID) -> MemoryItem | None:
    return MemoryItem.objects.filter(pk=item_id, user=user).first()


def supports_fact(user, fact_id: uuid.UUID) -> bool:
    return Fact.objects.filter(pk=fact_id, supporters__user=user).exists()


def visible_corrections(user) -> QuerySet[Correction]:
    """The caller's own corrections, and those of the courses they are staff of."""
    qs = Correction.objects.select_related("user")
    if user.is_superuser:
        return qs
    return qs.filter(Q(user=user) | Q(course_id__in=access.staff_course_ids(user)))


def visible_cases(user) -> QuerySet[CorrectionCase]:
    """Review cases of the courses ``user`` is staff of, with what the case
    shape shows (active fact, proposals, supporters, their words) in a fixed
    number of queries."""
    qs = CorrectionCase.objects.select_related("active_fact", "claimed_by", "decided_by").prefetch_related(
        Prefetch(
            "proposals",
            queryset=Proposal.objects.order_by("created_at", "id").prefetch_related(
                Prefetch(
                    "supporters",
                    queryset=ProposalSupporter.objects.select_related("user", "correction").order_by(
                        "created_at", "id"
                    ),
                )
            ),
        )
    )
    if user.is_superuser:
        return qs
    return qs.filter(course_id__in=access.staff_course_ids(user))
