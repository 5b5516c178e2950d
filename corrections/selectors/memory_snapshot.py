"""A user's memory as a snapshot kept per process (SPEC §5, §10;
``tutor.db.snapshots``), selected per request by the memory statement's rules.
Details: docs/architecture.md, Snapshots.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from datetime import datetime

from corrections.models import CorrectionType, MemoryItem, MemoryTier, MemoryToken
from corrections.selectors.injection import (
    MEMORIES,
    NO_SESSION,
    NO_TOKEN,
    NOTHING,
    PREFERENCES,
    RowTexts,
    Selection,
)
from tutor.db.prepared import PreparedQuery
from tutor.db.snapshots import SnapshotStore, scope_changed, user_scope_key

MEMORY_SCOPE = "memory"
ITEM_COLUMNS = ("id", "tier", "kind", "content", "expires_at", "session_id", "updated_at")


def memory_scope_keys(user_id) -> tuple[str]:
    return (user_scope_key(MEMORY_SCOPE, user_id),)


def memory_changed(*user_ids) -> None:
    """Memory items of these users change in this transaction."""
    scope_changed(*(memory_scope_keys(user_id)[0] for user_id in user_ids))


@dataclass(frozen=True, eq=False)  # one object per item, hashed by identity
class _Item:
    row: dict  # ITEM_COLUMNS
    tokens: frozenset[str]
    # The item's place among all the user's items newest first, ties by id:
    # the statement's order after its overlap, compared as one integer.
    order: int
    columns: dict  # the row's columns a section reads (``_row``)
    texts: RowTexts  # what the sections render of it, made once
    in_session: bool  # a session item (ranked before user memory)


def _newest_first(items: list[_Item]) -> tuple[_Item, ...]:
    return tuple(sorted(items, key=lambda item: item.order))


@dataclass(frozen=True)
class UserMemory:
    preferences: tuple[_Item, ...]  # user memory of kind preference, newest first
    others: tuple[_Item, ...]  # user memory of the other kinds, newest first
    by_token: dict[str, tuple[_Item, ...]]  # of ``others``
    sessions: dict[object, tuple[_Item, ...]]  # session id → its items of the other kinds


# A student's first request loads their memory: the two reads compiled once
# per process (SPEC §10), not built again for each student.
_ITEMS = PreparedQuery(
    lambda user_id: MemoryItem.objects.filter(user_id=user_id).values(*ITEM_COLUMNS), user_id="int"
)
_TOKENS = PreparedQuery(
    lambda user_id: MemoryToken.objects.filter(user_id=user_id).values("memory_id", "token"), user_id="int"
)


def user_memory_load(user_id) -> UserMemory:
    """Two queries: the user's items and their tokens."""
    items = {row["id"]: row for row in _ITEMS.rows(user_id=user_id)}
    tokens: dict[object, set[str]] = {}
    for memory_id, token in _TOKENS.tuples(user_id=user_id):
        tokens.setdefault(memory_id, set()).add(token)
    preferences, others, sessions = [], [], {}
    by_token: dict[str, list[_Item]] = {}
    newest = sorted(items.values(), key=lambda row: row["id"])
    newest.sort(key=lambda row: row["updated_at"], reverse=True)
    for order, row in enumerate(newest):
        item = _Item(
            row=row,
            tokens=frozenset(tokens.get(row["id"], ())),
            order=order,
            columns={name: row[name] for name in SECTION_COLUMNS},
            texts=RowTexts(row["id"]),
            in_session=row["tier"] == MemoryTier.SESSION,
        )
        if row["tier"] == MemoryTier.USER:
            if row["kind"] == CorrectionType.PREFERENCE:
                preferences.append(item)
                continue
            others.append(item)
            for token in item.tokens:
                by_token.setdefault(token, []).append(item)
        elif row["kind"] != CorrectionType.PREFERENCE:
            sessions.setdefault(row["session_id"], []).append(item)
    return UserMemory(
        preferences=_newest_first(preferences),
        others=_newest_first(others),
        by_token={token: tuple(found) for token, found in by_token.items()},
        sessions={session_id: tuple(found) for session_id, found in sessions.items()},
    )


# One snapshot per student active in this process: more of them than courses.
# A student beyond them has their memory loaded again (2 queries, not 1).
MEMORY_SNAPSHOT_USERS = 2048
USER_MEMORY = SnapshotStore("memory", user_memory_load, max_entries=MEMORY_SNAPSHOT_USERS)


SECTION_COLUMNS = ("id", "tier", "kind", "content", "expires_at")


def _row(item: _Item, section: int, rank: int, totals: dict) -> dict:
    return {**item.columns, "section": section, "rank": rank, **totals}


def memory_from_snapshot(
    snapshot: UserMemory,
    *,
    session_id,
    message_tokens: list[str],
    now: datetime,
    preferences_limit: int,
    memories_limit: int,
) -> tuple[Selection, Selection]:
    """The two sections' rows, as ``corrections.selectors.injection.memory_for_context`` selects them."""
    if preferences_limit <= 0 and memories_limit <= 0:
        return NOTHING, NOTHING
    words = set(message_tokens) - {NO_TOKEN}
    session = [] if session_id in (None, NO_SESSION) else snapshot.sessions.get(session_id, ())
    this_session = [
        item for item in session if item.row["expires_at"] is None or item.row["expires_at"] > now
    ]
    limit = max(memories_limit, 1)
    # Each candidate's overlap with the message, counted from the token index:
    # an item is listed under each of its tokens once.
    overlap: dict[_Item, int] = dict.fromkeys(snapshot.others[:limit], 0)
    overlap.update(dict.fromkeys(this_session, 0))
    for token in words:
        for item in snapshot.by_token.get(token, ()):
            overlap[item] = overlap.get(item, 0) + 1
    for item in this_session:  # not in the index
        overlap[item] = len(item.tokens & words)
    # This session's items first, then by overlap, then newest first (ties by
    # id: the order is unique, so no tie goes further).
    ranked = [
        item
        for *_, item in heapq.nsmallest(
            max(memories_limit, 0),
            ((not item.in_session, -hits, item.order, item) for item, hits in overlap.items()),
        )
    ]
    totals = {
        "preferences_total": len(snapshot.preferences),
        "user_total": len(snapshot.preferences) + len(snapshot.others),
        "session_total": len(this_session),
    }

    def section(number: int, items, limit: int, total: int) -> Selection:
        if limit <= 0:
            return NOTHING
        chosen = items[:limit]
        rows = [_row(item, number, rank, totals) for rank, item in enumerate(chosen, 1)]
        return Selection(rows=rows, total=total, texts=tuple(item.texts for item in chosen))

    return (
        section(PREFERENCES, snapshot.preferences, preferences_limit, totals["preferences_total"]),
        section(MEMORIES, ranked, memories_limit, len(snapshot.others) + len(this_session)),
    )
