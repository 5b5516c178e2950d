"""Recall as seed 003 runs it (SPEC §6): filter → score → three brakes, each
decision a trace line. Pure functions over loaded rows: a process's snapshots
of the scope (``lessons.library``) or the rows of the recall statement
(``lessons.selectors.lessons_recall``).

1. Filter: a lesson must be ``injected`` and not past ``review_by``. A
   filtered lesson is never scored: its line has no score.
2. Score = W_TAG·|tags∩ctx.tags|/|ctx.tags| + W_SYMPTOM·|symptoms∩ctx.symptoms|/|ctx.symptoms|
   + W_DECAY·exp(−age_days/DECAY_DAYS); an empty context list contributes 0;
   age in whole days since ``last_hit``, else since injection. The seed's
   prose says "30-day half-life", but its code and its printed trace
   (0.81, 0.64, 0.63, 0.50, 0.47) use exp(−age/30): the trace is the reference.
3. Rank by score descending, ties by id ascending; then for each, in this
   order: below the floor → ``floor``; ``top_k`` already recalled → ``top_k``;
   ``used + tokens > budget`` → ``budget`` (the scan goes on: a later, smaller
   lesson may still fit); else ``recalled``.

A lesson whose tag and symptom parts alone stay below ``floor − W_DECAY``
cannot reach the floor whatever its age (the decay part is at most
``W_DECAY``): it is cut by the floor -- or filtered -- and is counted under
its decision instead of listed, like every line beyond ``max_lines``.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, field, replace
from datetime import date

from django.db import models

from tutor.conf import optional_setting

# Seed 003 step 2 (SPEC §6). Overridable by settings of the same names.
LESSON_RECALL_W_TAG = 0.5  # tags are pinned by a human reviewer: the most trusted signal
LESSON_RECALL_W_SYMPTOM = 0.3  # error words: noisier, a hint
LESSON_RECALL_W_DECAY = 0.2
LESSON_DECAY_DAYS = 30
LESSON_RECALL_FLOOR = 0.4
LESSON_RECALL_TOP_K = 3
LESSON_RECALL_BUDGET_TOKENS = 800
# SPEC §6: a stored trace keeps the first 200 lines and counts the rest per decision.
LESSON_TRACE_MAX_LINES = 200


class Decision(models.TextChoices):
    FILTERED_STATUS = "filtered_status"
    FILTERED_EXPIRED = "filtered_expired"
    FLOOR = "floor"
    TOP_K = "top_k"
    BUDGET = "budget"
    RECALLED = "recalled"


FILTER_DECISIONS = (Decision.FILTERED_STATUS, Decision.FILTERED_EXPIRED)
SCORED_DECISIONS = (Decision.FLOOR, Decision.TOP_K, Decision.BUDGET, Decision.RECALLED)
# Every decision, in order: ``Decision.values`` rebuilds its list on each read.
DECISIONS = tuple(Decision.values)


@dataclass(frozen=True)
class RecallParams:
    w_tag: float
    w_symptom: float
    w_decay: float
    decay_days: float
    floor: float
    top_k: int
    budget_tokens: int
    max_lines: int

    @classmethod
    def from_settings(cls) -> RecallParams:
        get = optional_setting
        return cls(
            w_tag=float(get("LESSON_RECALL_W_TAG", LESSON_RECALL_W_TAG)),
            w_symptom=float(get("LESSON_RECALL_W_SYMPTOM", LESSON_RECALL_W_SYMPTOM)),
            w_decay=float(get("LESSON_RECALL_W_DECAY", LESSON_RECALL_W_DECAY)),
            decay_days=float(get("LESSON_DECAY_DAYS", LESSON_DECAY_DAYS)),
            floor=float(get("LESSON_RECALL_FLOOR", LESSON_RECALL_FLOOR)),
            top_k=int(get("LESSON_RECALL_TOP_K", LESSON_RECALL_TOP_K)),
            budget_tokens=int(get("LESSON_RECALL_BUDGET_TOKENS", LESSON_RECALL_BUDGET_TOKENS)),
            max_lines=int(get("LESSON_TRACE_MAX_LINES", LESSON_TRACE_MAX_LINES)),
        )

    @property
    def reach(self) -> float:
        """What the tag and symptom parts must reach for a lesson to be able to
        reach the floor (its decay part is at most ``w_decay``)."""
        return self.floor - self.w_decay

    def as_dict(self) -> dict:
        return {
            "weights": {"tag": self.w_tag, "symptom": self.w_symptom, "decay": self.w_decay},
            "decay_days": self.decay_days,
            "floor": self.floor,
            "top_k": self.top_k,
            "budget_tokens": self.budget_tokens,
        }


@dataclass(frozen=True)
class RecallContext:
    """Normalized, de-duplicated tags and symptoms of one request, and its day."""

    tags: tuple[str, ...]
    symptoms: tuple[str, ...]
    today: date

    def as_dict(self) -> dict:
        return {"tags": list(self.tags), "symptoms": list(self.symptoms), "today": self.today.isoformat()}


@dataclass(frozen=True)
class LessonRow:
    """What recall reads of a lesson; ``tags``/``symptoms`` normalized."""

    id: object
    title: str
    body: str
    tags: frozenset[str]
    symptoms: frozenset[str]
    status: str
    review_by: date
    tokens: int
    last_hit: date | None
    injected_on: date | None
    course_id: object = None  # None: a global lesson


@dataclass(frozen=True)
class Totals:
    """How many lessons of the scope reach each filter stage, listed or not."""

    active: int = 0  # injected and not past review_by
    expired: int = 0  # injected but past review_by
    other_status: int = 0  # not injected


@dataclass
class Scored:
    row: LessonRow
    score: float
    components: dict[str, float]
    decision: str = ""


@dataclass
class RecallResult:
    context: RecallContext
    params: RecallParams
    recalled: list[Scored] = field(default_factory=list)
    lines: list[dict] = field(default_factory=list)
    used_tokens: int = 0
    # Decisions of the lessons that could reach the floor (listed or not).
    reached: dict[str, int] = field(default_factory=dict)
    # Every lesson's decision and, per decision, those not listed: known with the totals.
    counts: dict[str, int] | None = None
    omitted: dict[str, int] | None = None
    # Ids of the lessons read that the request's tutor session had already used (a real send).
    used_in_session: frozenset = frozenset()

    def with_totals(self, totals: Totals) -> RecallResult:
        """Counts for the whole scope: a lesson not among those that could
        reach the floor was cut by the floor, or filtered at its stage."""
        reached = self.reached
        counts = dict(reached)
        counts[Decision.FLOOR] += max(totals.active - sum(reached[d] for d in SCORED_DECISIONS), 0)
        counts[Decision.FILTERED_STATUS] = max(totals.other_status, reached[Decision.FILTERED_STATUS])
        counts[Decision.FILTERED_EXPIRED] = max(totals.expired, reached[Decision.FILTERED_EXPIRED])
        listed = dict.fromkeys(DECISIONS, 0)
        for line in self.lines:
            listed[line["decision"]] += 1
        omitted = {d: counts[d] - listed[d] for d in DECISIONS if counts[d] - listed[d] > 0}
        return replace(self, counts=counts, omitted=omitted)

    @property
    def recalled_ids(self) -> list:
        return [s.row.id for s in self.recalled]

    @property
    def cut_relevant(self) -> int:
        """Lessons that passed the floor but were left out (top_k, budget)."""
        return self.reached.get(Decision.TOP_K, 0) + self.reached.get(Decision.BUDGET, 0)


def age_days(row: LessonRow, today: date) -> int:
    reference = row.last_hit or row.injected_on or today
    return max((today - reference).days, 0)


def filter_decision(row: LessonRow, today: date) -> str | None:
    """Step 1: why ``row`` may not enter scoring, or None."""
    if row.status != "injected":
        return Decision.FILTERED_STATUS
    if row.review_by < today:
        return Decision.FILTERED_EXPIRED
    return None


def apply_brakes(ranked: list[Scored], params: RecallParams) -> tuple[list[Scored], int]:
    """Step 3 on lessons already in rank order: floor → top_k → budget."""
    recalled: list[Scored] = []
    used = 0
    for item in ranked:
        if item.score < params.floor:
            item.decision = Decision.FLOOR
        elif len(recalled) >= params.top_k:
            item.decision = Decision.TOP_K
        elif used + item.row.tokens > params.budget_tokens:
            item.decision = Decision.BUDGET
        else:
            item.decision = Decision.RECALLED
            recalled.append(item)
            used += item.row.tokens
    return recalled, used


def _round(value: float) -> float:
    return round(value, 4)


def scored_line(item: Scored) -> dict:
    return {
        "lesson": str(item.row.id),
        "title": item.row.title,
        "decision": item.decision,
        "score": _round(item.score),
        "components": {name: _round(value) for name, value in item.components.items()},
        "tokens": item.row.tokens,
    }


def filtered_line(row: LessonRow, decision: str) -> dict:
    return {
        "lesson": str(row.id),
        "title": row.title,
        "decision": decision,
        "score": None,
        "components": None,
        "tokens": row.tokens,
    }


def _lines(
    filtered: list[tuple[LessonRow, str]],
    candidates: list[Scored],
    recalled: list[Scored],
    params: RecallParams,
) -> tuple[list[dict], list[dict]]:
    # The recalled lessons are always listed; the other scored ones in rank order as room allows.
    room = max(params.max_lines - len(recalled), 0)
    others = {id(item) for item in [c for c in candidates if c.decision != Decision.RECALLED][:room]}
    scored_lines = [
        scored_line(item) for item in candidates if item.decision == Decision.RECALLED or id(item) in others
    ]
    room = max(params.max_lines - len(scored_lines), 0)
    filtered.sort(key=lambda pair: _id_order(pair[0].id))
    filtered_lines = [filtered_line(row, decision) for row, decision in filtered[:room]]
    return filtered_lines, scored_lines


def _id_order(lesson_id) -> int | str:
    return lesson_id.int if isinstance(lesson_id, uuid.UUID) else str(lesson_id)


def recall(
    rows: list[LessonRow],
    totals: Totals | None,
    ctx: RecallContext,
    params: RecallParams,
    *,
    lines: bool = True,
) -> RecallResult:
    """Recall over ``rows`` (at least every lesson of the scope that can reach
    the floor; more do no harm) of a scope whose stage sizes are ``totals``.

    Lines: filtered lessons first (they leave the pipeline first), then the
    scored ones in rank order. Lessons that cannot reach the floor are
    counted, not listed; beyond ``max_lines`` lines the recalled and then the
    best scored lines are kept and the rest counted. ``counts`` has every
    lesson's decision once ``totals`` are known (``RecallResult.with_totals``).
    Without ``lines`` no line is written (a context preview shows the
    recalled lessons, never the trace): the decisions are the same.
    """
    filtered: list[tuple[LessonRow, str]] = []
    candidates: list[Scored] = []
    # Step 2 (the score), each share computed once per row; a lesson whose
    # tag and symptom parts plus the largest decay part stay below the floor
    # is not scored.
    ctx_tags, ctx_symptoms = frozenset(ctx.tags), frozenset(ctx.symptoms)
    n_tags, n_symptoms = len(ctx.tags), len(ctx.symptoms)
    w_tag, w_symptom, w_decay, floor = params.w_tag, params.w_symptom, params.w_decay, params.floor
    for row in rows:
        tag = len(row.tags & ctx_tags) / n_tags if n_tags else 0.0
        symptom = len(row.symptoms & ctx_symptoms) / n_symptoms if n_symptoms else 0.0
        if w_tag * tag + w_symptom * symptom + w_decay < floor:
            continue  # cannot reach the floor: counted from the totals
        decision = filter_decision(row, ctx.today)
        if decision is not None:
            filtered.append((row, decision))
            continue
        decay = math.exp(-age_days(row, ctx.today) / params.decay_days)
        total = w_tag * tag + w_symptom * symptom + w_decay * decay
        candidates.append(
            Scored(row=row, score=total, components={"tag": tag, "symptom": symptom, "decay": decay})
        )
    # Ties by id as text: a UUID's integer orders as its text does, and costs nothing to read.
    candidates.sort(key=lambda s: (-s.score, _id_order(s.row.id)))
    recalled, used = apply_brakes(candidates, params)

    filtered_lines, scored_lines = _lines(filtered, candidates, recalled, params) if lines else ([], [])

    reached = dict.fromkeys(DECISIONS, 0)
    for item in candidates:
        reached[item.decision] += 1
    for _, decision in filtered:
        reached[decision] += 1
    result = RecallResult(
        context=ctx,
        params=params,
        recalled=recalled,
        lines=filtered_lines + scored_lines,
        used_tokens=used,
        reached=reached,
    )
    return result.with_totals(totals) if totals is not None else result


def recalled_item(item: Scored) -> dict:
    """A recalled lesson as the preview endpoints show it (SPEC §6 recall response)."""
    return {
        "id": str(item.row.id),
        "title": item.row.title,
        "score": _round(item.score),
        "components": {name: _round(value) for name, value in item.components.items()},
        "tokens": item.row.tokens,
    }
