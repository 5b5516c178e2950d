"""Reads of the corrections app (SPEC §5, §7): routing and the HTTP API.

The tutor context's reads, on every tutor request, are in
``corrections.injection``.
"""

from __future__ import annotations

import math
import uuid
from datetime import datetime

from django.db.models import (
    CharField,
    Count,
    DateTimeField,
    F,
    Prefetch,
    Q,
    QuerySet,
    Value,
)

from corrections.conf import setting
from corrections.models import (
    CURRENT_FACT_STATUSES,
    UNDECIDED_CASE_STATUSES,
    Correction,
    CorrectionCase,
    Fact,
    MemoryItem,
    Proposal,
    ProposalSupporter,
)
from corrections.text import jaccard
from tutor import access
from tutor.db.prepared import PreparedQuery
from tutor.models import TutorMessage

# --- detection ---------------------------------------------------------------------------


def user_message_text_queryset(*, message_id):
    return TutorMessage.objects.filter(pk=message_id, role=TutorMessage.Role.USER).values("content")[:1]


# Read for every user message (SPEC §5): compiled once per process, like the tutor's own reads.
USER_MESSAGE_TEXT = PreparedQuery(user_message_text_queryset, message_id="uuid")


def user_message_text(message_id) -> str | None:
    """The text of a stored user message, or None (no such message, or not the user's)."""
    row = USER_MESSAGE_TEXT.first(message_id=message_id)
    return row["content"] if row else None


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
