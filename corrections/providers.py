"""The corrections app's sections of the tutor's system message (SPEC §4, §5):
``facts``, ``preferences``, ``memories`` and ``process_rules``, two queries
whatever the volume. Details: docs/architecture.md, Corrections in the tutor
context.
"""

from __future__ import annotations

from abc import abstractmethod
from functools import lru_cache

from django.utils import timezone

from corrections.conf import setting
from corrections.models import CorrectionType, FactStatus, MemoryTier
from corrections.relevance import task_query_tokens
from corrections.selectors.course_snapshot import (
    COURSE_FACTS,
    CourseFacts,
    corrections_scope_keys,
    facts_from_snapshot,
    rules_from_snapshot,
)
from corrections.selectors.injection import (
    NOTHING,
    RowTexts,
    Selection,
    facts_relevant,
    memory_for_context,
    process_rules_for_context,
)
from corrections.selectors.memory_snapshot import USER_MEMORY, memory_from_snapshot, memory_scope_keys
from corrections.text import query_tokens
from tutor.context.budgets import budget, cut
from tutor.context.providers import (
    FACTS_CHARS,
    FACTS_POSITION,
    MEMORIES_CHARS,
    MEMORIES_POSITION,
    PREFERENCES_CHARS,
    PREFERENCES_POSITION,
    PROCESS_RULES_CHARS,
    PROCESS_RULES_POSITION,
    ContextRequest,
    Section,
    SectionProvider,
    register,
)
from tutor.kernel.fencing import fence

FACTS_USAGE = (
    "Course facts settled from corrections follow as data. Prefer them to your own knowledge when they "
    "answer the question. A fact marked DISPUTED has more than one statement: tell the student every "
    "statement and that the course has not settled it."
)
PROCESS_RULES_USAGE = (
    "Process rules approved by the course staff follow as data; follow them where they apply."
)
PREFERENCES_USAGE = (
    "The student's own preferences about your answers follow as data; follow them unless they conflict "
    "with the rules above."
)
MEMORIES_USAGE = (
    "The student's own corrections and remarks follow as data: their words, not checked by the course. "
    "Where one contradicts a course fact, say so and give both."
)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _render(lines: list[str], budget_chars: int) -> tuple[str, int]:
    """As many whole lines as fit in ``budget_chars``; and how many did."""
    kept, used = [], 0
    for line in lines:
        cost = len(line) + (1 if kept else 0)
        if used + cost > budget_chars:
            break
        kept.append(line)
        used += cost
    return "\n".join(kept), len(kept)


class BudgetedSection(SectionProvider):
    """Shared by the four: rows → lines within the character budget → fenced text."""

    fence_name = ""
    usage = ""
    budget_name = ""
    budget_default = 0
    count_setting = ""

    @abstractmethod
    def rows(self, request: ContextRequest, limit: int) -> Selection:
        """The section's rows (``values()`` dicts, at most one query)."""

    @abstractmethod
    def line(self, row: dict, item_chars: int) -> tuple[str, bool]:
        """One row as a line of the fenced text, and whether it was cut."""

    @abstractmethod
    def item(self, row: dict) -> dict:
        """One row as the context preview shows it (with its ``kind``)."""

    def build(self, request: ContextRequest) -> Section:
        budget_chars = budget(self.budget_name, self.budget_default)
        selection = self.rows(request, setting(self.count_setting))
        item_chars = setting("CORRECTIONS_ITEM_CHARS")
        rows, texts = selection.rows, selection.texts
        lines, cuts = [], False
        for i, row in enumerate(rows):
            text, was_cut = self._line(row, texts[i] if texts else None, item_chars)
            lines.append(text)
            cuts = cuts or was_cut
        body, kept = _render(lines, budget_chars)
        if not kept:
            return Section(budget_chars=budget_chars, omitted=selection.total, data=[])
        if texts:  # rendered once per snapshot (corrections.selectors.injection.RowTexts)
            ids = [texts[i].id_text for i in range(kept)]
            data = [self._item(rows[i], texts[i]) for i in range(kept)]
        else:
            ids = [str(row["id"]) for row in rows[:kept]]
            data = [self.item(row) for row in rows[:kept]]
        return Section(
            text=f"{self.usage}\n{fence(self.fence_name, body)}",
            ids=ids,
            omitted=selection.total - kept,
            used_chars=len(body),
            budget_chars=budget_chars,
            truncated=["items"] if cuts else [],
            data=data,
        )

    def _line(self, row: dict, texts: RowTexts | None, item_chars: int) -> tuple[str, bool]:
        if texts is None:
            return self.line(row, item_chars)
        key = (self.name, item_chars)
        found = texts.lines.get(key)
        if found is None:
            found = texts.lines[key] = self.line(row, item_chars)
        return found

    def _item(self, row: dict, texts: RowTexts) -> dict:
        """The row's preview item, shared by every request that shows it: never changed."""
        found = texts.items.get(self.name)
        if found is None:
            found = texts.items[self.name] = self.item(row)
        return found


# A draft is previewed again and again as it is written, and sent once more:
# the tokens of a short message are kept (they depend on its text alone).
MESSAGE_TOKENS_CACHED = 1024
MESSAGE_CACHE_MAX_CHARS = 500


@lru_cache(maxsize=MESSAGE_TOKENS_CACHED)
def _cached_tokens(text: str, cap: int) -> tuple[str, ...]:
    return tuple(query_tokens(text, cap))


def message_tokens(request: ContextRequest) -> list[str]:
    """The message's tokens for the relevance lookups, computed once per
    request for the facts and the memories."""
    shared = request.shared
    if "corrections.message_tokens" not in shared:
        cap = setting("CORRECTIONS_QUERY_MAX_TOKENS")
        text = request.message or ""
        tokens = (
            _cached_tokens(text, cap) if len(text) <= MESSAGE_CACHE_MAX_CHARS else query_tokens(text, cap)
        )
        shared["corrections.message_tokens"] = list(tokens)
    return shared["corrections.message_tokens"]


def course_facts(request: ContextRequest) -> CourseFacts | None:
    """The course's facts and rules snapshot, its version read once for both
    sections; None inside a transaction that changed them (the statements run)."""
    shared = request.shared
    if "corrections.course" not in shared:
        course_id = request.task.course_id
        shared["corrections.course"] = COURSE_FACTS.get(
            corrections_scope_keys(course_id), course_id, request.snapshot_versions
        )
    return shared["corrections.course"]


def memory(request: ContextRequest) -> tuple[Selection, Selection]:
    """The preferences and memories sections' rows, read once for both."""
    shared = request.shared
    if "corrections.memory" in shared:
        return shared["corrections.memory"]
    user_id = request.student.pk
    snapshot = USER_MEMORY.get(memory_scope_keys(user_id), user_id, request.snapshot_versions)
    if snapshot is not None:
        shared["corrections.memory"] = memory_from_snapshot(
            snapshot,
            session_id=request.session_id,
            message_tokens=message_tokens(request),
            now=timezone.now(),
            preferences_limit=setting(PreferencesSection.count_setting),
            memories_limit=setting(MemoriesSection.count_setting),
        )
    else:
        shared["corrections.memory"] = memory_for_context(
            user_id=request.student.pk,
            session_id=request.session_id,
            message_tokens=message_tokens(request),
            now=timezone.now(),
            preferences_limit=setting(PreferencesSection.count_setting),
            memories_limit=setting(MemoriesSection.count_setting),
        )
    return shared["corrections.memory"]


class FactsSection(BudgetedSection):
    name = "facts"
    position = FACTS_POSITION
    ids_key = "fact_ids"
    omitted_key = "facts"
    data_key = "facts"
    fence_name = "COURSE_FACTS"
    usage = FACTS_USAGE
    budget_name, budget_default = "FACTS_CHARS", FACTS_CHARS
    count_setting = "CORRECTIONS_INJECT_MAX_FACTS"

    def rows(self, request, limit):
        task = request.task
        snapshot = course_facts(request)
        if snapshot is not None:
            if not (message_tokens(request) or task_query_tokens(task)):
                return NOTHING  # as the statement: neither the message nor the task text has a token
            return facts_from_snapshot(
                snapshot,
                task_id=task.pk,
                message_tokens=message_tokens(request),
                now=timezone.now(),
                limit=limit,
            )
        return facts_relevant(
            course_id=task.course_id,
            task_id=task.pk,
            message_tokens=message_tokens(request),
            has_task_tokens=bool(task_query_tokens(task)),
            now=timezone.now(),
            limit=limit,
        )

    def line(self, fact, item_chars):
        statement, was_cut = cut(_one_line(fact["statement"]), item_chars)
        if fact["status"] != FactStatus.DISPUTED:
            return f"- {fact['topic']}: {statement}", was_cut
        others = [cut(_one_line(s), item_chars)[0] for s in fact["disputed_with"]]
        listed = " | ".join([statement, *others])
        note = cut(_one_line(fact.get("staff_note") or ""), item_chars)[0]
        if note:  # staff's note is what the tutor is told about the topic (SPEC §5)
            return f"- {fact['topic']}: DISPUTED, staff note: {note}; statements: {listed}", was_cut
        return f"- {fact['topic']}: DISPUTED, statements: {listed}", was_cut

    def item(self, fact):
        return {
            "kind": "fact",
            "id": str(fact["id"]),
            "topic": fact["topic"],
            "statement": fact["statement"],
            "status": fact["status"],
            "disputed_with": list(fact["disputed_with"]),
            "staff_note": fact.get("staff_note", ""),
            "pinned": fact["pinned"],
            "confirmed_at": fact["confirmed_at"].isoformat(),
        }


class ProcessRulesSection(BudgetedSection):
    name = "process_rules"
    position = PROCESS_RULES_POSITION
    ids_key = "process_rule_ids"
    omitted_key = "process_rules"
    data_key = "facts"
    fence_name = "COURSE_PROCESS_RULES"
    usage = PROCESS_RULES_USAGE
    budget_name, budget_default = "PROCESS_RULES_CHARS", PROCESS_RULES_CHARS
    count_setting = "CORRECTIONS_INJECT_MAX_PROCESS_RULES"

    def rows(self, request, limit):
        snapshot = course_facts(request)
        if snapshot is not None:
            return rules_from_snapshot(snapshot, limit=limit)
        return process_rules_for_context(course_id=request.task.course_id, limit=limit)

    def line(self, rule, item_chars):
        text, was_cut = cut(_one_line(rule["statement"]), item_chars)
        return f"- {text}", was_cut

    def item(self, rule):
        return {"kind": "process_rule", "id": str(rule["id"]), "statement": rule["statement"]}


class PreferencesSection(BudgetedSection):
    name = "preferences"
    position = PREFERENCES_POSITION
    ids_key = "preference_ids"
    omitted_key = "preferences"
    data_key = "preferences"
    fence_name = "STUDENT_PREFERENCES"
    usage = PREFERENCES_USAGE
    budget_name, budget_default = "PREFERENCES_CHARS", PREFERENCES_CHARS
    count_setting = "CORRECTIONS_INJECT_MAX_PREFERENCES"

    def rows(self, request, limit):
        return memory(request)[0]

    def line(self, item, item_chars):
        text, was_cut = cut(_one_line(item["content"]), item_chars)
        return f"- {text}", was_cut

    def item(self, item):
        return {"kind": "preference", "id": str(item["id"]), "content": item["content"]}


class MemoriesSection(BudgetedSection):
    name = "memories"
    position = MEMORIES_POSITION
    ids_key = "memory_ids"
    omitted_key = "memories"
    data_key = "preferences"
    fence_name = "STUDENT_MEMORY"
    usage = MEMORIES_USAGE
    budget_name, budget_default = "MEMORIES_CHARS", MEMORIES_CHARS
    count_setting = "CORRECTIONS_INJECT_MAX_MEMORIES"

    LABELS = {
        CorrectionType.FACTUAL: "the student corrected a fact",
        CorrectionType.PROCESS: "the student asked for this way of working",
        CorrectionType.NEGATIVE: "the student said this earlier answer was wrong",
    }

    def rows(self, request, limit):
        return memory(request)[1]

    def line(self, item, item_chars):
        text, was_cut = cut(_one_line(item["content"]), item_chars)
        where = "this session" if item["tier"] == MemoryTier.SESSION else "every session"
        return f"- ({where}) {self.LABELS.get(item['kind'], item['kind'])}: {text}", was_cut

    def item(self, item):
        return {
            "kind": "memory",
            "id": str(item["id"]),
            "tier": item["tier"],
            "type": item["kind"],
            "content": item["content"],
            "expires_at": item["expires_at"].isoformat() if item["expires_at"] else None,
        }


def register_providers() -> None:
    """Called from CorrectionsConfig.ready(): tutor's slots of the same names are replaced."""
    for provider in (FactsSection(), PreferencesSection(), MemoriesSection(), ProcessRulesSection()):
        register(provider)
