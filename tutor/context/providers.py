"""Section providers of the tutor's system message (SPEC §4; STYLE: paperless'
ordered plugin list): a new section is one provider registered from its
app's ``AppConfig.ready()``, never an edit of the assembler. Details:
docs/architecture.md, Context assembly.
"""

from __future__ import annotations

import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tutor.context.budgets import (
    TASK_CRITERIA_CHARS,
    TASK_GOAL_CHARS,
    TASK_MATERIALS_CHARS,
    TASK_STEPS_CHARS,
    budget,
    cut,
)
from tutor.db.guarded_writes import Count  # a send effect's counter: part of this protocol
from tutor.kernel.fencing import fence
from tutor.kernel.rubrics import CriterionKind
from tutor.models import Task


@dataclass(frozen=True)
class ContextRequest:
    """What every provider may look at. ``feedback`` is the selection of
    SPEC §3 and ``feedback_block`` its rendered, budgeted block (the items a
    student's context really carries, after the field cuts)."""

    student: Any
    task: Task
    message: str | None
    session_id: uuid.UUID | None
    preview: bool
    correlation_id: str
    feedback: Any
    feedback_block: Any
    # Providers of one app may share a read through this dict (one query for
    # two sections); it lives for one assembly.
    shared: dict = field(default_factory=dict, compare=False)
    # The versions of the request's snapshot scopes, read with the task or in
    # one query before the sections are built (``tutor.db.snapshots``).
    snapshot_versions: Any = field(default=None, compare=False)


@dataclass
class Section:
    """One provider's part of the system message. ``text`` is already fenced
    (empty: the section is left out); ``data`` is what the context preview
    shows of it; ``state`` is whatever ``send_effects`` needs later."""

    text: str = ""
    ids: list = field(default_factory=list)
    omitted: int = 0
    used_chars: int = 0
    budget_chars: int = 0
    truncated: list[str] = field(default_factory=list)
    data: Any = None
    state: Any = None

    def meta(self) -> dict:
        return {
            "used_chars": self.used_chars,
            "budget_chars": self.budget_chars,
            "truncated": self.truncated,
            "omitted": self.omitted,
        }


@dataclass(frozen=True)
class SendEffects:
    """A section's effects of a real send (SPEC §4), as data: ``records`` are
    unsaved model instances stored with the reply (the lessons' recall trace,
    its recalled lessons, their hits), in order; ``counts`` are counters the
    send moves (``Count``: a lesson's uses, and its promotion); ``written``
    runs once they are written (in their transaction, or after their one
    write); ``follow_up`` is a step of the owning app that must run after
    them in the reply's transaction, or None. How they are written is the
    tutor turn's choice: with the reply in its one write when no section has
    a follow-up, else after it in a savepoint of its transaction."""

    records: tuple = ()
    counts: tuple[Count, ...] = ()
    written: Callable[[], None] | None = None
    follow_up: Callable[[], None] | None = None


class SectionProvider(ABC):
    """Base of every provider. ``name`` is the section's key in
    ``context_meta.sections``; ``ids_key`` the ``context_meta`` key of the ids
    it included; ``omitted_key`` its key in ``context_meta.omitted``;
    ``data_key`` the key of the context preview its ``data`` joins (a list
    there, extended in provider order), or None."""

    name: str = ""
    position: int = 0
    ids_key: str | None = None
    omitted_key: str | None = None
    data_key: str | None = None

    @abstractmethod
    def build(self, request: ContextRequest) -> Section:
        """This section for ``request``; at most one query (SPEC §10)."""

    def send_effects(self, request: ContextRequest, section: Section) -> SendEffects | None:
        """What a real send of ``section`` leaves behind, as data; the
        default: nothing. Never asked for a preview."""
        return None


_registry: dict[str, SectionProvider] = {}
_ordered: list[tuple[SectionProvider, ...]] = []  # the sorted registry, until it changes


def register(provider: SectionProvider) -> None:
    """Add ``provider``, or replace the one registered under its name."""
    if not provider.name:
        raise ValueError("a section provider needs a name")
    _registry[provider.name] = provider
    _ordered.clear()


def unregister(name: str) -> None:
    _registry.pop(name, None)
    _ordered.clear()


def providers() -> tuple[SectionProvider, ...]:
    """The registered providers in the order their sections appear."""
    if not _ordered:
        _ordered.append(tuple(sorted(_registry.values(), key=lambda p: (p.position, p.name))))
    return _ordered[0]


# --- tutor's own providers ----------------------------------------------------------


class TaskSection(SectionProvider):
    """Course and task: goal, steps, acceptance criteria, materials, each
    within its own budget (SPEC §4). Reads nothing: the task comes loaded."""

    name = "task"
    position = 10
    omitted_key = "task_fields"

    FIELDS = (
        ("goal", "TASK_GOAL_CHARS", TASK_GOAL_CHARS),
        ("steps", "TASK_STEPS_CHARS", TASK_STEPS_CHARS),
        ("acceptance_criteria", "TASK_CRITERIA_CHARS", TASK_CRITERIA_CHARS),
        ("learning_criteria", "TASK_CRITERIA_CHARS", TASK_CRITERIA_CHARS),
        ("materials", "TASK_MATERIALS_CHARS", TASK_MATERIALS_CHARS),
    )

    def build(self, request: ContextRequest) -> Section:
        task = request.task
        criteria = task.current_rubric.criteria if task.current_rubric else []
        raw = {
            "goal": task.goal,
            "steps": "\n".join(f"{i}. {s}" for i, s in enumerate(task.steps or [], start=1)),
            "acceptance_criteria": "\n".join(
                f"- {c['id']}: {c['text']}" for c in criteria if c["kind"] == CriterionKind.ACCEPTANCE
            ),
            "learning_criteria": "\n".join(
                f"- {c['id']}: {c['text']}" for c in criteria if c["kind"] == CriterionKind.LEARNING
            ),
            "materials": task.materials,
        }
        values, truncated = {}, []
        limits = [budget(limit_name, default) for _, limit_name, default in self.FIELDS]
        for (name, _, _), limit in zip(self.FIELDS, limits, strict=True):
            values[name], was_cut = cut(raw[name], limit)
            if was_cut:
                truncated.append(name)
        body = (
            f"Course: {task.course.title}\nTask: {task.title}\nGoal: {values['goal']}\n"
            f"Steps:\n{values['steps']}\nAcceptance criteria:\n{values['acceptance_criteria']}\n"
            f"Learning goals:\n{values['learning_criteria']}\nMaterials:\n{values['materials']}"
        )
        text = fence("COURSE_TASK", body)
        total_budget = sum(limits)
        return Section(
            text=text,
            omitted=len(truncated),
            used_chars=len(text),
            budget_chars=total_budget,
            truncated=truncated,
        )


class EmptySlot(SectionProvider):
    """A section SPEC §4 names whose app has not registered its provider: no
    text, no ids, its budget and meta keys present all the same."""

    def __init__(self, name: str, position: int, ids_key: str, budget_name: str, default: int, data_key=None):
        self.name = name
        self.position = position
        self.ids_key = ids_key
        self.omitted_key = name
        self.data_key = data_key
        self._budget = (budget_name, default)

    def build(self, request: ContextRequest) -> Section:
        return Section(budget_chars=budget(*self._budget), data=[])


# Character budgets of the memory and lesson sections (SPEC §4: every section
# has its own); overridable in settings under the same names.
FACTS_CHARS = 1200
PREFERENCES_CHARS = 800
MEMORIES_CHARS = 800
PROCESS_RULES_CHARS = 800
LESSONS_CHARS = 3200

# Positions: the order of SPEC §4 -- task, feedback, facts, preferences and
# memories, process rules, lessons.
TASK_POSITION, FEEDBACK_POSITION = 10, 20
FACTS_POSITION, PREFERENCES_POSITION, MEMORIES_POSITION = 30, 40, 45
PROCESS_RULES_POSITION, LESSONS_POSITION = 50, 60

SLOTS = (
    EmptySlot("facts", FACTS_POSITION, "fact_ids", "FACTS_CHARS", FACTS_CHARS, "facts"),
    EmptySlot(
        "preferences",
        PREFERENCES_POSITION,
        "preference_ids",
        "PREFERENCES_CHARS",
        PREFERENCES_CHARS,
        "preferences",
    ),
    EmptySlot("memories", MEMORIES_POSITION, "memory_ids", "MEMORIES_CHARS", MEMORIES_CHARS, "preferences"),
    EmptySlot(
        "process_rules",
        PROCESS_RULES_POSITION,
        "process_rule_ids",
        "PROCESS_RULES_CHARS",
        PROCESS_RULES_CHARS,
        "facts",
    ),
    EmptySlot("lessons", LESSONS_POSITION, "lesson_ids", "LESSONS_CHARS", LESSONS_CHARS, "lessons"),
)


def register_tutor_providers() -> None:
    """Called from TutorConfig.ready(): the task section and the empty slots.
    Apps that own a slot register their provider later (INSTALLED_APPS order:
    tutor comes first), replacing the slot."""
    register(TaskSection())
    for slot in SLOTS:
        if slot.name not in _registry:
            register(slot)
