"""A course's injected facts and process rules as a snapshot kept per process
(SPEC §5, §10; ``tutor.db.snapshots``), selected per request by the
statements' own rules (``corrections.selectors.injection``). Details:
docs/architecture.md, Snapshots.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from corrections.conf import setting
from corrections.models import INJECTED_FACT_STATUSES, REACH_ALL, Fact, ProcessRule, TaskFactOverlap
from corrections.selectors.injection import (
    FACT_COLUMNS,
    KEYED_MESSAGE_TOKENS,
    NO_TOKEN,
    NOTHING,
    RowTexts,
    Selection,
)
from corrections.text import text_keys, token_keys
from tutor.db.snapshots import SnapshotStore, scope_changed, scope_key

CORRECTIONS_SCOPE = "corrections"
# Tasks (and values of N) whose contribution one snapshot remembers.
TASK_MEMO_SIZE = 512


def corrections_scope_keys(course_id) -> tuple[str]:
    return (scope_key(CORRECTIONS_SCOPE, course_id),)


def corrections_changed(*course_ids, facts=None) -> None:
    """Facts, task overlaps or process rules of these courses change in this
    transaction. ``facts``: the ids of the only facts whose row or overlaps
    changed (process rules are read again with them); None: not said, and
    every process loads the course's snapshot again."""
    scope_changed(*(scope_key(CORRECTIONS_SCOPE, course_id) for course_id in course_ids), rows=facts)


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: one object per fact
class _Fact:
    row: dict  # FACT_COLUMNS
    tokens: frozenset[str]
    token_count: int
    # The fact's place among the course's latest confirmed first, ties by id:
    # the statement's order after the overlap (``_order``).
    order: tuple
    texts: RowTexts  # what the sections render of it, made once
    keys: tuple[str, ...] = ()  # its relevance keys (``corrections.text.token_keys``)


@dataclass(frozen=True)
class _TaskFacts:
    hits: dict[_Fact, int]  # fact → hits of the task text, for every fact it overlaps
    relevant: tuple[_Fact, ...]  # those it holds ``needed`` tokens of


@dataclass
class CourseFacts:
    facts: tuple[_Fact, ...]
    by_id: dict  # fact id → ``_Fact``
    by_token: dict[str, tuple[_Fact, ...]]
    by_key: dict[str, tuple[_Fact, ...]]  # its relevance keys (``corrections.text.token_keys``)
    # task id → (fact, hits of the task text) of the facts it overlaps
    overlaps: dict[object, tuple[tuple[_Fact, int], ...]]
    tasks_of: dict  # fact id → the ids of the tasks it overlaps
    rules: tuple[dict, ...]  # id, statement; oldest first
    rule_texts: tuple[RowTexts, ...]  # of ``rules``
    _tasks: dict = field(default_factory=dict)

    def task_facts(self, task_id, n: int) -> _TaskFacts:
        """What the task text contributes at N = ``n``, worked out once per task."""
        found = self._tasks.get((task_id, n))
        if found is None:
            pairs = self.overlaps.get(task_id, ())
            found = _TaskFacts(
                hits=dict(pairs),
                relevant=tuple(fact for fact, hits in pairs if hits >= min(n, fact.token_count)),
            )
            if len(self._tasks) >= TASK_MEMO_SIZE:
                self._tasks.clear()
            self._tasks[(task_id, n)] = found
        return found


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MICROSECOND = timedelta(microseconds=1)


def _order(row: dict) -> tuple:
    """Latest confirmed first, then by id: a key that needs no other fact's."""
    return (-((row["confirmed_at"] - _EPOCH) // _MICROSECOND), row["id"])


def _facts(rows) -> dict:
    """id → ``_Fact`` of fact rows read with their topic tokens."""
    facts = {}
    for row in rows:
        topic_tokens = row.pop("topic_tokens") or []
        facts[row["id"]] = _Fact(
            row=row,
            tokens=frozenset(topic_tokens),
            token_count=row.pop("token_count"),
            order=_order(row),
            texts=RowTexts(row["id"]),
            keys=tuple(token_keys(topic_tokens)),
        )
    return facts


def _injected_facts(course_id):
    return Fact.objects.filter(course_id=course_id, status__in=INJECTED_FACT_STATUSES).values(
        *FACT_COLUMNS, "topic_tokens", "token_count"
    )


def _overlaps(course_id):
    # Joined, not an IN list: one parameter per fact would outgrow SQLite's limit.
    return TaskFactOverlap.objects.filter(
        task__course_id=course_id, fact__course_id=course_id, fact__status__in=INJECTED_FACT_STATUSES
    ).values_list("task_id", "fact_id", "hits")


def _rules(course_id) -> tuple[tuple[dict, ...], tuple[RowTexts, ...]]:
    rules = tuple(
        ProcessRule.objects.filter(course_id=course_id).order_by("created_at", "id").values("id", "statement")
    )
    return rules, tuple(RowTexts(rule["id"]) for rule in rules)


def course_facts_load(course_id) -> CourseFacts:
    """Three queries: the injected facts, the tasks' overlaps with them, the process rules."""
    facts = _facts(_injected_facts(course_id))
    by_token: dict[str, list[_Fact]] = {}
    by_key: dict[str, list[_Fact]] = {}
    for fact in facts.values():
        for token in fact.tokens:
            by_token.setdefault(token, []).append(fact)
        for key in fact.keys:
            by_key.setdefault(key, []).append(fact)
    overlaps: dict[object, list[tuple[_Fact, int]]] = {}
    tasks_of: dict[object, list] = {}
    for task_id, fact_id, hits in _overlaps(course_id).iterator(chunk_size=5000):
        if fact_id in facts:  # a fact that changed status between the two reads is left out
            overlaps.setdefault(task_id, []).append((facts[fact_id], hits))
            tasks_of.setdefault(fact_id, []).append(task_id)
    rules, rule_texts = _rules(course_id)
    return CourseFacts(
        facts=tuple(facts.values()),
        by_id=facts,
        by_token={token: tuple(found) for token, found in by_token.items()},
        by_key={key: tuple(found) for key, found in by_key.items()},
        overlaps={task_id: tuple(found) for task_id, found in overlaps.items()},
        tasks_of={fact_id: tuple(tasks) for fact_id, tasks in tasks_of.items()},
        rules=rules,
        rule_texts=rule_texts,
    )


def course_facts_apply(snapshot: CourseFacts, course_id, ids: frozenset[str]) -> CourseFacts:
    """Three queries: the facts of ``ids`` still injected, their overlaps, the
    process rules; only the index entries of their old and new tokens are
    rebuilt (SPEC §10)."""
    wanted = {uuid.UUID(fact_id) for fact_id in ids}
    fresh = _facts(_injected_facts(course_id).filter(pk__in=sorted(wanted)))
    gone = {snapshot.by_id[fact_id] for fact_id in wanted if fact_id in snapshot.by_id}  # by identity
    changed = [*gone, *fresh.values()]

    def rebuilt(index: dict, keys_of) -> dict:
        result = dict(index)
        for key in {key for fact in changed for key in keys_of(fact)}:
            kept = [fact for fact in index.get(key, ()) if fact not in gone]
            kept.extend(fact for fact in fresh.values() if key in keys_of(fact))
            if kept:
                result[key] = tuple(kept)
            else:
                result.pop(key, None)
        return result

    overlaps, tasks_of = dict(snapshot.overlaps), dict(snapshot.tasks_of)
    for task_id in {task_id for fact in gone for task_id in tasks_of.pop(fact.row["id"], ())}:
        kept = tuple(pair for pair in overlaps[task_id] if pair[0] not in gone)
        if kept:
            overlaps[task_id] = kept
        else:
            del overlaps[task_id]
    stored = _overlaps(course_id).filter(fact_id__in=sorted(wanted))
    for task_id, fact_id, hits in stored:
        if fact_id in fresh:
            overlaps[task_id] = (*overlaps.get(task_id, ()), (fresh[fact_id], hits))
            tasks_of[fact_id] = (*tasks_of.get(fact_id, ()), task_id)
    rules, rule_texts = _rules(course_id)
    by_id = dict(snapshot.by_id)
    for fact in gone:
        del by_id[fact.row["id"]]
    by_id.update(fresh)
    return CourseFacts(
        facts=tuple(by_id.values()),
        by_id=by_id,
        by_token=rebuilt(snapshot.by_token, lambda fact: fact.tokens),
        by_key=rebuilt(snapshot.by_key, lambda fact: fact.keys),
        overlaps=overlaps,
        tasks_of=tasks_of,
        rules=rules,
        rule_texts=rule_texts,
    )


COURSE_FACTS = SnapshotStore("corrections", course_facts_load, apply=course_facts_apply, freeze=True)


def facts_from_snapshot(
    snapshot: CourseFacts, *, task_id, message_tokens: list[str], now: datetime, limit: int
) -> Selection:
    """The facts section's rows, as ``corrections.selectors.injection.facts_relevant`` selects them."""
    if limit <= 0:
        return NOTHING
    n = min(setting("CORRECTIONS_INJECT_MIN_TOKENS"), REACH_ALL)
    fresh_since = now - timedelta(days=setting("CORRECTIONS_FACT_TTL_DAYS"))
    words = set(message_tokens) - {NO_TOKEN}
    found: set[_Fact] = set()
    if n >= 2 and len(words) <= KEYED_MESSAGE_TOKENS:
        # As the statement's key lookup: the facts holding one of the message's
        # tokens and pairs are all that can be relevant through it at N >= 2.
        by_key = snapshot.by_key
        for key in text_keys(sorted(words)):
            facts = by_key.get(key)
            if facts:
                found.update(facts)
    else:
        for token in words:
            found.update(snapshot.by_token.get(token, ()))
    task = snapshot.task_facts(task_id, n)
    task_hits = task.hits
    # Each candidate with its overlap: the larger of the message's and the task text's.
    overlap = {fact: task_hits[fact] for fact in task.relevant}
    for fact in found:
        hits = len(fact.tokens & words)
        if fact in overlap or hits >= max(min(n, fact.token_count), 1):
            overlap[fact] = max(hits, task_hits.get(fact, 0))
    # Overlap, then latest confirmed and id (the fact's order: unique, so no tie goes further).
    relevant = sorted(
        (-hits, fact.order, fact)
        for fact, hits in overlap.items()
        if fact.row["pinned"] or fact.row["confirmed_at"] >= fresh_since
    )
    total = len(relevant)
    chosen = [fact for _, _, fact in relevant[:limit]]
    rows = [
        {**fact.row, "disputed_with": list(fact.row["disputed_with"]), "matched_total": total}
        for fact in chosen
    ]
    return Selection(rows=rows, total=total, texts=tuple(fact.texts for fact in chosen))


def rules_from_snapshot(snapshot: CourseFacts, *, limit: int) -> Selection:
    """The process rules section's rows, as ``process_rules_for_context`` selects them."""
    if limit <= 0:
        return NOTHING
    total = len(snapshot.rules)
    return Selection(
        rows=[{**rule, "matched_total": total} for rule in snapshot.rules[:limit]],
        total=total,
        texts=snapshot.rule_texts[:limit],
    )
