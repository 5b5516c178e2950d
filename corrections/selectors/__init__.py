"""Reads of the corrections app (SPEC §5, §7): routing and the HTTP API.

The tutor context's reads, on every tutor request, are in
``corrections.selectors.injection``.
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
    FactStatus,
    MemoryItem,
    PendingDetection,
    ProcessRule,
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


# --- what the student sees of the loop (issue 36 item 5) -----------------------------------


class Outcome:
    """What became of a user message read as a correction, in the words the
    student client shows (``correction_outcomes``)."""

    PENDING = "pending"  # detection has not run yet (a worker will)
    SAVED = "saved"  # in the student's own memory (``tier``: session or user)
    SENT_TO_STAFF = "sent_to_staff"  # a proposed fact or a review case awaits course staff
    STAFF_DECIDED = "staff_decided"  # its case was accepted, rejected or disputed
    COURSE_FACT = "course_fact"  # the statement is a verified course fact
    FORGOTTEN = "forgotten"  # its memory item is gone (forgotten, or expired) and nothing else holds it
    NOT_STORED = "not_stored"  # recorded, written nowhere (a session-tier correction without a session)


OUTCOME_STATUSES = [value for name, value in vars(Outcome).items() if name.isupper()]


def _widest_tier(tiers: list[str]) -> str | None:
    """The widest memory tier written; a review case is no tier (``status`` says it)."""
    return next((tier for tier in ("system", "user", "session") if tier in tiers), None)


def _outcome(row: dict) -> dict:
    """One correction row as its outcome: read from what was written -- the
    tiers, the fact's and the case's status now -- never from the type alone,
    so a course that verifies facts by corroboration, or staff's later
    decision, shows as it is."""
    tiers = list(row["tiers"] or [])
    case_status, fact_status = row["case__status"], row["fact__status"]
    if case_status in UNDECIDED_CASE_STATUSES:
        status = Outcome.SENT_TO_STAFF
    elif "system" in tiers and fact_status in (FactStatus.VERIFIED, FactStatus.DISPUTED):
        status = Outcome.COURSE_FACT  # its proposal accepted (by staff or corroboration) as written
    elif case_status is not None:
        status = Outcome.STAFF_DECIDED
    elif "system" in tiers and fact_status == FactStatus.PROPOSED:
        status = Outcome.SENT_TO_STAFF
    elif "system" in tiers:
        status = Outcome.STAFF_DECIDED  # superseded, or the fact was deleted by staff
    elif not tiers:
        status = Outcome.NOT_STORED
    elif row["memory_id"] is None:
        status = Outcome.FORGOTTEN
    else:
        status = Outcome.SAVED
    return {
        "status": status,
        "type": row["type"],
        "tier": _widest_tier(tiers),
        "tiers": tiers,
        "statement": row["corrected_statement"] or row["original_statement"],
    }


PENDING_OUTCOME = {"status": Outcome.PENDING, "type": None, "tier": None, "tiers": [], "statement": ""}


def correction_outcomes(*, user_id, message_ids) -> dict:
    """The outcome of each of ``user_id``'s messages among ``message_ids``
    whose detection is still pending (its outbox row is there: the common
    case just after a send, with a worker) or that was read as a correction
    (``_outcome``); messages that are neither are absent. Two queries at
    most, one when every message is still pending."""
    if not message_ids:
        return {}
    waiting = PendingDetection.objects.filter(message_id__in=message_ids).values_list("message_id", flat=True)
    found = {message_id: dict(PENDING_OUTCOME) for message_id in waiting}
    rest = [message_id for message_id in message_ids if message_id not in found]
    if rest:
        rows = Correction.objects.filter(user_id=user_id, message_id__in=rest).values(
            "message_id", "type", "tiers", "memory_id", "corrected_statement", "original_statement",
            "case__status", "fact__status",
        )  # fmt: skip
        found.update((row["message_id"], _outcome(row)) for row in rows)
    return found


def _uuids(values) -> list[uuid.UUID]:
    found = []
    for value in values or ():
        try:
            found.append(uuid.UUID(str(value)))
        except ValueError:
            continue  # a meta stored by an earlier release, or another app's kind of id
    return found


def context_texts(*, user_id, course_id, fact_ids=(), memory_ids=(), process_rule_ids=()) -> dict[str, str]:
    """The texts behind the ids a tutor request's ``context_meta`` names, for
    the student whose request it was (issue 36 item 5): their own memory
    items only (preferences and memories; a forgotten one is absent), and
    the course's facts and process rules -- which were in that student's
    context, so nothing of another student's memory is ever read. Keyed by
    the id as the meta holds it (a string)."""
    texts: dict[str, str] = {}
    memory = _uuids(memory_ids)
    if memory:
        rows = MemoryItem.objects.filter(user_id=user_id, id__in=memory).values_list("id", "content")
        texts.update((str(pk), text) for pk, text in rows)
    facts = _uuids(fact_ids)
    if facts:
        rows = Fact.objects.filter(course_id=course_id, id__in=facts).values_list("id", "statement")
        texts.update((str(pk), text) for pk, text in rows)
    rules = _uuids(process_rule_ids)
    if rules:
        rows = ProcessRule.objects.filter(course_id=course_id, id__in=rules).values_list("id", "statement")
        texts.update((str(pk), text) for pk, text in rows)
    return texts
