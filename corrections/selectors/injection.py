"""Reads of the tutor context: what the tutor is told (SPEC §5 injection, §10).
Three ``PreparedQuery`` statements serve the four sections, none reading rows
that merely share a word with the request. Details: docs/architecture.md,
Corrections in the tutor context.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import (
    Case,
    Count,
    F,
    IntegerField,
    Max,
    OuterRef,
    Q,
    Subquery,
    Value,
    When,
    Window,
)
from django.db.models.expressions import RawSQL
from django.db.models.functions import Coalesce, Greatest, Least, RowNumber

from corrections.conf import setting
from corrections.models import (
    INJECTED_FACT_STATUSES,
    REACH_ALL,
    CorrectionType,
    Fact,
    FactKey,
    FactToken,
    MemoryItem,
    MemoryTier,
    MemoryToken,
    ProcessRule,
    TaskFactOverlap,
)
from corrections.text import text_keys
from tutor.db.prepared import PreparedQuery


class RowTexts:
    """What the sections render of one row of a snapshot (``corrections.selectors.course_snapshot``,
    ``corrections.selectors.memory_snapshot``), made at most once per snapshot: the
    row's id as text, and per section its preview item and, per item budget,
    its line. A snapshot's rows never change while it is kept, so neither
    do these; they go with it."""

    __slots__ = ("id_text", "items", "lines")

    def __init__(self, row_id):
        self.id_text = str(row_id)
        self.items: dict[str, dict] = {}
        self.lines: dict[tuple[str, int], tuple[str, bool]] = {}


@dataclass(frozen=True)
class Selection:
    """Rows for one context section (``values()`` dicts) and how many matched;
    from a snapshot, also each row's ``RowTexts`` (in the rows' order)."""

    rows: list
    total: int
    texts: tuple[RowTexts, ...] | None = field(default=None, compare=False, repr=False)

    @property
    def omitted(self) -> int:
        return max(self.total - len(self.rows), 0)


NOTHING = Selection(rows=[], total=0)
# No token or key is empty (a token has two characters or more).
NO_TOKEN = ""


def padded(values: list[str]) -> list[str]:
    """``values`` and as many ``NO_TOKEN`` as make its length a power of two:
    an IN list's length is part of the prepared SQL, so messages of every
    length share a handful of compilations instead of one each."""
    if not values:
        return []
    size = 1 << (len(values) - 1).bit_length()
    return [*values, *[NO_TOKEN] * (size - len(values))]


def _count(queryset) -> Subquery:
    """``queryset``'s row count as a scalar subquery (0 when it has none)."""
    counted = queryset.order_by().annotate(group=Value(1)).values("group").annotate(n=Count("*")).values("n")
    return Coalesce(Subquery(counted), 0)


# --- course facts ----------------------------------------------------------------------

# A message with more tokens than this is looked up through the token index:
# its keys (tokens and pairs) would outnumber the index entries they spare.
KEYED_MESSAGE_TOKENS = 12
FACT_COLUMNS = ("id", "topic", "statement", "status", "disputed_with", "staff_note", "pinned", "confirmed_at")


class MessageLookup:
    """How the facts relevant through the message are found."""

    NONE = "none"  # the message has no token: the task alone
    KEYS = "keys"  # its tokens and pairs, by equality (FactKey)
    TOKENS = "tokens"  # its tokens, counted per fact in the token index


def facts_queryset(
    *, course_id, task_id, message_tokens, message_keys, min_tokens, fresh_since, limit, lookup
):
    """Verified and disputed facts of the course whose topic the message or
    the task text overlaps (SPEC §5: at least ``min(min_tokens, token_count)``
    of its tokens), not past the TTL unless pinned, ranked by overlap, then
    by the latest confirmation; each with the number of such facts."""
    # A Value, not a bare int: the ORM leaves out comparisons of a small
    # integer column with an int out of its range (the preparation sentinel).
    n = Value(min_tokens, output_field=IntegerField())
    needed = Least(n, F("token_count"), output_field=IntegerField())
    # Relevant through the task text: reach >= N, one range of one index.
    candidates = TaskFactOverlap.objects.filter(task_id=task_id, reach__gte=n).values("fact_id")
    task_hits = Coalesce(
        Subquery(TaskFactOverlap.objects.filter(task_id=task_id, fact_id=OuterRef("pk")).values("hits")),
        0,
        output_field=IntegerField(),
    )
    if lookup == MessageLookup.NONE:
        overlap = task_hits
    else:
        if lookup == MessageLookup.KEYS:
            # Every fact the message holds two tokens of, or the token of a
            # one-token fact: all that can be relevant at N >= 2.
            by_message = FactKey.objects.filter(course_id=course_id, key__in=message_keys).values("fact_id")
        else:
            by_message = (
                FactToken.objects.filter(course_id=course_id, token__in=message_tokens)
                .values("fact_id")
                .annotate(hits=Count("*"), token_count=Max("token_count"))
                .filter(hits__gte=Least(n, F("token_count"), output_field=IntegerField()))
                .values("fact_id")
            )
        candidates = candidates.union(by_message)
        message_hits = _count(FactToken.objects.filter(fact_id=OuterRef("pk"), token__in=message_tokens))
        overlap = Greatest(message_hits, task_hits, output_field=IntegerField())
    # One IN over the union: both databases look the few candidates up by key
    # (an OR of two INs makes PostgreSQL filter every fact of the course).
    # A candidate is relevant when the message or the task has its ``needed``:
    # only keys found at N > 2 need the check, but it is also what keeps
    # PostgreSQL from reading every fact of a course of a few thousand (to
    # join them by hash) rather than looking the candidates up.
    return (
        Fact.objects.filter(
            Q(pinned=True) | Q(confirmed_at__gte=fresh_since),
            id__in=candidates,
            course_id=course_id,
            status__in=INJECTED_FACT_STATUSES,
        )
        .alias(overlap=overlap)
        .filter(overlap__gte=needed)
        .order_by("-overlap", "-confirmed_at", "id")
        .annotate(matched_total=Window(Count("pk")))
        .values(*FACT_COLUMNS, "matched_total")[:limit]
    )


FACTS = PreparedQuery(
    facts_queryset,
    shape=("limit", "lookup"),
    course_id="uuid",
    task_id="uuid",
    message_tokens="str[]",
    message_keys="str[]",
    min_tokens="int",
    fresh_since="datetime",
)


def facts_relevant(
    *, course_id, task_id, message_tokens: list[str], has_task_tokens: bool, now: datetime, limit: int
) -> Selection:
    """The facts of the context's ``facts`` section (``facts_queryset``);
    nothing, and no query, when neither the message nor the task has a token."""
    if limit <= 0 or not (message_tokens or has_task_tokens):
        return NOTHING
    min_tokens = min(setting("CORRECTIONS_INJECT_MIN_TOKENS"), REACH_ALL)
    if not message_tokens:
        lookup, keys = MessageLookup.NONE, []
    elif min_tokens >= 2 and len(message_tokens) <= KEYED_MESSAGE_TOKENS:
        lookup, keys = MessageLookup.KEYS, text_keys(message_tokens)
    else:
        lookup, keys = MessageLookup.TOKENS, []
    rows = FACTS.rows(
        limit=limit,
        lookup=lookup,
        course_id=course_id,
        task_id=task_id,
        message_tokens=padded(message_tokens),
        message_keys=padded(keys),
        min_tokens=min_tokens,
        fresh_since=now - timedelta(days=setting("CORRECTIONS_FACT_TTL_DAYS")),
    )
    return Selection(rows=rows, total=rows[0]["matched_total"] if rows else 0)


# --- process rules -------------------------------------------------------------------------


def process_rules_queryset(*, course_id, limit):
    """The course's approved process rules, oldest first (a rule approved
    long ago is not less binding), each with their number."""
    return (
        ProcessRule.objects.filter(course_id=course_id)
        .order_by("created_at", "id")
        .annotate(matched_total=Window(Count("pk")))
        .values("id", "statement", "matched_total")[:limit]
    )


PROCESS_RULES = PreparedQuery(process_rules_queryset, shape=("limit",), course_id="uuid")


def process_rules_for_context(*, course_id, limit: int) -> Selection:
    if limit <= 0:
        return NOTHING
    rows = PROCESS_RULES.rows(limit=limit, course_id=course_id)
    return Selection(rows=rows, total=rows[0]["matched_total"] if rows else 0)


# --- the user's memory --------------------------------------------------------------------

PREFERENCES, MEMORIES = 0, 1  # the two sections of the one memory statement
# The session of a request without one: no item belongs to it (user memory only).
NO_SESSION = uuid.UUID(int=0)
MEMORY_COLUMNS = ("id", "tier", "kind", "content", "expires_at", "section")
OTHER_KINDS = tuple(kind for kind in CorrectionType.values if kind != CorrectionType.PREFERENCE)


def _written(value: str) -> RawSQL:
    """A tier written into the SQL as a literal rather than bound. SQLite
    checks whether a partial index applies (memoryitem_user_statement_once:
    WHERE tier = 'user') with the bound value and then prepares the
    statement again whenever the parameter is bound again -- on every run;
    measured on the benchmark, that doubled this statement's cost."""
    if not value.isidentifier():  # our own tier names only: nothing to quote
        raise ValueError(f"not a plain word: {value!r}")
    return RawSQL(f"'{value}'", ())  # noqa: S611 -- a checked constant, never input


# The tiers as the memory statement compares them (``_written``).
USER, SESSION = _written(MemoryTier.USER), _written(MemoryTier.SESSION)


def _newest(items, limit: int):
    """The ids of the ``limit`` newest of ``items``, as a part of a UNION
    (SQLite takes no LIMIT in a compound's part: it goes one level down)."""
    newest = items.order_by("-updated_at", "id").values("id")[:limit]
    return MemoryItem.objects.filter(id__in=newest).values("id").order_by()


def memory_queryset(
    *, user_id, session_id, message_tokens, now, preferences_limit, memories_limit, by_message
):
    """The user's memory for the two sections, ``section`` telling which
    (SPEC §5: a user's memory reaches only that user's context):

    - preferences (user memory): newest first;
    - other memory: this session's unexpired items, then user memory, each
      ranked by how many of the message's tokens its topic shares
      (``by_message``), then newest first.

    Only the items that can rank within the limits are read: this session's
    items, the newest preferences, the newest other user memory and the user
    memory that ranks first by its overlap with the message (found from the
    message's tokens, counted per item). ``rank`` and both totals come with
    each row."""
    own = MemoryItem.objects.filter(user_id=user_id)
    user_memory = own.filter(tier=USER)
    preferences = user_memory.filter(kind=CorrectionType.PREFERENCE)
    others = user_memory.exclude(kind=CorrectionType.PREFERENCE)
    this_session = own.filter(tier=SESSION, session_id=session_id)
    candidates = [
        _newest(preferences, preferences_limit),
        _newest(others, memories_limit),
        this_session.values("id").order_by(),
    ]
    unexpired = Q(expires_at__isnull=True) | Q(expires_at__gt=now)
    in_scope = Q(tier=USER) | Q(tier=SESSION, session_id=session_id) & unexpired
    # The totals are index ranges counted without reading a column: the
    # preferences, all user memory (the other kinds are the difference, by
    # memoryitem_kind_valid) and this session's unexpired other kinds.
    totals = {
        "preferences_total": _count(preferences),
        "user_total": _count(user_memory),
        "session_total": _count(this_session.filter(unexpired, kind__in=OTHER_KINDS)),
    }
    if by_message:
        # From the token rows alone (they carry their item's tier, kind and
        # updated_at): the user memory sharing the most tokens, newest first.
        sharing = (
            MemoryToken.objects.filter(
                user_id=user_id, token__in=message_tokens, tier=MemoryTier.USER, kind__in=OTHER_KINDS
            )
            .values("memory_id")
            .annotate(overlap=Count("*"), newest=Max("updated_at"))
            .order_by("-overlap", "-newest", "memory_id")
            .values("memory_id")[:memories_limit]
        )
        candidates.append(MemoryItem.objects.filter(id__in=sharing).values("id").order_by())
        overlap = _count(MemoryToken.objects.filter(memory_id=OuterRef("pk"), token__in=message_tokens))
    else:
        overlap = Value(0)
    is_preference = Q(tier=USER, kind=CorrectionType.PREFERENCE)
    section = Case(When(kind=CorrectionType.PREFERENCE, then=Value(PREFERENCES)), default=Value(MEMORIES))
    # Preferences rank by recency alone: their overlap is never computed.
    ranking = [
        Case(When(tier=MemoryTier.SESSION, then=Value(0)), default=Value(1)).asc(),
        Case(When(kind=CorrectionType.PREFERENCE, then=Value(0)), default=overlap).desc(),
        F("updated_at").desc(),
        F("id").asc(),
    ]
    return (
        # One IN over the union, every part of it the user's own (a token's
        # user is its item's): both databases look the few candidates up by
        # key. (An OR of INs makes PostgreSQL filter every item of the user,
        # and so does a user_id condition here: it would rather read them all.)
        MemoryItem.objects.filter(id__in=candidates[0].union(*candidates[1:]))
        .filter(is_preference | (~Q(kind=CorrectionType.PREFERENCE) & in_scope))
        .annotate(
            section=section,
            rank=Window(RowNumber(), partition_by=[section], order_by=ranking),
            **totals,
        )
        .filter(rank__lte=max(preferences_limit, memories_limit))
        .values(*MEMORY_COLUMNS, "rank", *totals)
        # Unordered: at most twice the limit rows, put in order by the caller
        # (an ORDER BY on the window would compute it twice).
        .order_by()
    )


MEMORY = PreparedQuery(
    memory_queryset,
    shape=("preferences_limit", "memories_limit", "by_message"),
    user_id="int",
    session_id="uuid",
    message_tokens="str[]",
    now="datetime",
)


def memory_for_context(
    *,
    user_id,
    session_id,
    message_tokens: list[str],
    now: datetime,
    preferences_limit: int,
    memories_limit: int,
) -> tuple[Selection, Selection]:
    """The ``preferences`` and ``memories`` sections' rows, in one statement."""
    if preferences_limit <= 0 and memories_limit <= 0:
        return NOTHING, NOTHING
    rows = MEMORY.rows(
        # A section with no room still takes part in the statement (its rows are dropped here).
        preferences_limit=max(preferences_limit, 1),
        memories_limit=max(memories_limit, 1),
        by_message=bool(message_tokens),
        user_id=user_id,
        session_id=NO_SESSION if session_id is None else session_id,
        message_tokens=padded(message_tokens),
        now=now,
    )
    rows.sort(key=lambda row: (row["section"], row["rank"]))
    first = rows[0] if rows else {"preferences_total": 0, "user_total": 0, "session_total": 0}
    totals = {
        PREFERENCES: first["preferences_total"],
        MEMORIES: first["user_total"] - first["preferences_total"] + first["session_total"],
    }

    def section(number: int, limit: int) -> Selection:
        if limit <= 0:
            return NOTHING
        return Selection(rows=[r for r in rows if r["section"] == number][:limit], total=totals[number])

    return section(PREFERENCES, preferences_limit), section(MEMORIES, memories_limit)
