"""Recall as seed 003 runs it (SPEC §6): filter → score → three brakes, each
decision a trace line. Pure functions over loaded rows: a process's snapshots
of the scope (``lessons.selectors.library``) or the rows of the recall statement
(``lessons.selectors.statement.lessons_recall``).

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
``W_DECAY``): it is cut by the floor without entering the brakes. Every
decision is a line up to ``max_lines``: the recalled, the other scored, the
filtered ones (the readers hand the first ``max_lines`` by id), then those
that cannot reach the floor (the readers hand the first ``max_lines`` injected
ones by id, those not past review) in rank order while room remains, at most
``floor_lines`` of them; the rest are counted.
"""

from __future__ import annotations

import heapq
import math
import uuid
from dataclasses import dataclass, field, replace
from datetime import date

from django.db import models

from tutor.kernel.conf import from_settings, optional_setting

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
# Of them, lines for lessons that cannot reach the floor (ours, not SPEC's): 200 of those made
# a trace of 40 KB, 2 ms more to store on PostgreSQL than 7 lines; 20 cost 0.1 ms.
LESSON_TRACE_FLOOR_LINES = 20


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
    floor_lines: int = LESSON_TRACE_FLOOR_LINES

    @classmethod
    def from_settings(cls) -> RecallParams:
        """The parameters in force (kept until a setting changes)."""
        return from_settings(cls._read_settings)

    @classmethod
    def _read_settings(cls) -> RecallParams:
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
            floor_lines=int(get("LESSON_TRACE_FLOOR_LINES", LESSON_TRACE_FLOOR_LINES)),
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
    # Worked out once per row (a snapshot's rows serve many requests): the
    # integer its ties are broken by (``_id_order``), its id as text, and
    # the day its age counts from (an ordinal; None: no hit, not injected).
    rank_key: int | str = field(init=False, repr=False, compare=False)
    id_text: str = field(init=False, repr=False, compare=False)
    reference_day: int | None = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        reference = self.last_hit or self.injected_on
        object.__setattr__(self, "rank_key", _id_order(self.id))
        object.__setattr__(self, "id_text", str(self.id))
        object.__setattr__(self, "reference_day", reference.toordinal() if reference else None)


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
    def recalled_id_texts(self) -> list[str]:
        return [s.row.id_text for s in self.recalled]

    @property
    def cut_relevant(self) -> int:
        """Lessons that passed the floor but were left out (top_k, budget)."""
        return self.reached.get(Decision.TOP_K, 0) + self.reached.get(Decision.BUDGET, 0)


def _round(value: float) -> float:
    return round(value, 4)


def scored_line(
    decision: str, score: float, row: LessonRow, tag: float, symptom: float, decay: float
) -> dict:
    return {
        "lesson": row.id_text,
        "title": row.title,
        "decision": decision,
        "score": round(score, 4),
        "components": {"tag": round(tag, 4), "symptom": round(symptom, 4), "decay": round(decay, 4)},
        "tokens": row.tokens,
    }


def filtered_line(row: LessonRow, decision: str) -> dict:
    return {
        "lesson": row.id_text,
        "title": row.title,
        "decision": decision,
        "score": None,
        "components": None,
        "tokens": row.tokens,
    }


def _lines(
    filtered: list[tuple[LessonRow, str]],
    ranked: list[tuple],
    recalled: int,
    params: RecallParams,
    below: tuple = (),
) -> list[dict]:
    """The trace's lines: the filtered lessons first, by id, then the scored
    ones in rank order (``ranked``: (decision, score, row, parts…)) with the
    ``below`` entries merged in by rank. The recalled lessons are always
    listed, the other scored ones as room allows, then the filtered ones in
    what is left; ``below`` comes with room made for it."""
    room = max(params.max_lines - recalled, 0)
    listed = []
    for entry in ranked:
        if entry[0] != Decision.RECALLED:
            if room <= 0:
                continue
            room -= 1
        listed.append(entry)
    if below:
        merged = heapq.merge(
            ((-entry[1], entry[2].rank_key, None, entry) for entry in listed), below, key=_rank
        )
        scored_lines = [scored_line(*item[3]) if item[2] is None else item[2] for item in merged]
    else:
        scored_lines = [scored_line(*entry) for entry in listed]
    room = max(params.max_lines - len(scored_lines), 0)
    filtered.sort(key=lambda pair: pair[0].rank_key)
    return [filtered_line(row, decision) for row, decision in filtered[:room]] + scored_lines


def below_reach(rows, ctx: RecallContext, params: RecallParams) -> tuple:
    """The entries of ``rows`` (active lessons) whose tag and symptom parts
    cannot reach the floor under ``ctx``, best first: (−score, id order, trace
    line, row). ``recall`` lists them while room remains (SPEC §6: every
    decision is a line); a snapshot keeps them per context and day."""
    scoring = _Scoring.of(ctx, params)
    entries = []
    for row in rows:
        tag, symptom = scoring.shares(row)
        if scoring.can_reach(tag, symptom):
            continue
        entry = scoring.entry(row, tag, symptom)
        entries.append((entry[0], entry[1], scored_line(Decision.FLOOR, -entry[0], *entry[2:]), row))
    entries.sort(key=_rank)
    return tuple(entries)


@dataclass(frozen=True)
class _Scoring:
    """Step 2 for one context: each share, the reach test and the score (with
    the decay part) -- the one place recall's formula is written."""

    tags: frozenset
    symptoms: frozenset
    n_tags: int
    n_symptoms: int
    today_day: int
    decays: dict
    params: RecallParams

    @classmethod
    def of(cls, ctx: RecallContext, params: RecallParams) -> _Scoring:
        return cls(
            frozenset(ctx.tags),
            frozenset(ctx.symptoms),
            len(ctx.tags),
            len(ctx.symptoms),
            ctx.today.toordinal(),
            _decays(params.decay_days),
            params,
        )

    def shares(self, row: LessonRow) -> tuple[float, float]:
        """The tag and symptom shares; an empty context list contributes 0."""
        tag = len(row.tags & self.tags) / self.n_tags if self.n_tags else 0.0
        symptom = len(row.symptoms & self.symptoms) / self.n_symptoms if self.n_symptoms else 0.0
        return tag, symptom

    def can_reach(self, tag: float, symptom: float) -> bool:
        """Whether the floor is within reach at the largest decay part (``W_DECAY``)."""
        params = self.params
        return params.w_tag * tag + params.w_symptom * symptom + params.w_decay >= params.floor

    def entry(self, row: LessonRow, tag: float, symptom: float) -> tuple:
        """(−score, id order, row, tag part, symptom part, decay part): ranked by the first two.
        Age in whole days since the last hit, else since injection (none: 0)."""
        params, decays = self.params, self.decays
        age = self.today_day - row.reference_day if row.reference_day is not None else 0
        decay = decays.get(age) if age > 0 else 1.0
        if decay is None:
            decay = decays.setdefault(age, math.exp(-age / params.decay_days))
        total = params.w_tag * tag + params.w_symptom * symptom + params.w_decay * decay
        return (-total, row.rank_key, row, tag, symptom, decay)


def _id_order(lesson_id) -> int | str:
    return lesson_id.int if isinstance(lesson_id, uuid.UUID) else str(lesson_id)


def recall(
    rows: list[LessonRow],
    totals: Totals | None,
    ctx: RecallContext,
    params: RecallParams,
    *,
    lines: bool = True,
    below: tuple = (),
) -> RecallResult:
    """Recall over ``rows`` (at least every lesson of the scope that can reach
    the floor, and for a trace the first ``max_lines`` filtered ones by id;
    more do no harm) of a scope whose stage sizes are ``totals``.

    Lines: filtered lessons first (they leave the pipeline first, SPEC §6),
    then the scored ones in rank order, with ``below`` among them (the
    ``below_reach`` entries of the scope's first ``max_lines`` injected lessons
    by id). Beyond ``max_lines`` lines the recalled and then the best scored
    lines are kept, the filtered ones by id in what is left, then ``below``
    while room remains, and the rest counted. ``counts`` has every
    lesson's decision once ``totals`` are known (``RecallResult.with_totals``).
    Without ``lines`` no line is written (a context preview shows the
    recalled lessons, never the trace): the decisions are the same, and only
    the recalled lessons become ``Scored`` items.
    """
    filtered: list[tuple[LessonRow, str]] = []
    # Step 2 (the score): a lesson whose tag and symptom parts plus the
    # largest decay part stay below the floor is not scored.
    scoring = _Scoring.of(ctx, params)
    floor, today = params.floor, ctx.today
    scored: list[tuple] = []  # ``_Scoring.entry``: ranked by its first two items
    for row in rows:
        # Step 1, the filter: a filtered lesson is never scored, and leaves its line.
        if row.status != "injected":
            filtered.append((row, Decision.FILTERED_STATUS))
            continue
        if row.review_by < today:
            filtered.append((row, Decision.FILTERED_EXPIRED))
            continue
        tag, symptom = scoring.shares(row)
        if scoring.can_reach(tag, symptom):
            scored.append(scoring.entry(row, tag, symptom))
        # else it cannot reach the floor: listed from ``below`` if room remains, else counted
    # Ties by id as text: a UUID's integer orders as its text does, and costs nothing to read.
    scored.sort(key=_rank)

    # Step 3, the brakes, in rank order: floor → top_k → budget.
    reached = dict.fromkeys(DECISIONS, 0)
    recalled: list[Scored] = []
    ranked: list[tuple] = []  # (decision, score, row, tag, symptom, decay): what the lines show
    used = 0
    top_k, budget_tokens = params.top_k, params.budget_tokens
    for n, (negative, _, row, tag, symptom, decay) in enumerate(scored):
        score = -negative
        if score < floor:
            decision = Decision.FLOOR
            if not lines:  # every later one is below the floor too
                reached[Decision.FLOOR] += len(scored) - n
                break
        elif len(recalled) >= top_k:
            decision = Decision.TOP_K
        elif used + row.tokens > budget_tokens:
            decision = Decision.BUDGET
        else:
            decision = Decision.RECALLED
            components = {"tag": tag, "symptom": symptom, "decay": decay}
            recalled.append(Scored(row=row, score=score, components=components, decision=decision))
            used += row.tokens
        reached[decision] += 1
        if lines:
            ranked.append((decision, score, row, tag, symptom, decay))
    for _, decision in filtered:
        reached[decision] += 1
    listed_below: tuple | list = ()
    room = min(params.max_lines - len(filtered) - len(ranked), params.floor_lines)
    if lines and below and room > 0:
        # Each below the floor, best first; counted with the totals (``with_totals``). A
        # lesson already listed (one two snapshots saw in two states) is listed once.
        seen = {row.rank_key for row, _ in filtered}
        seen.update(entry[2].rank_key for entry in ranked)
        listed_below = [entry for entry in below if entry[1] not in seen][:room]

    result = RecallResult(
        context=ctx,
        params=params,
        recalled=recalled,
        lines=_lines(filtered, ranked, len(recalled), params, listed_below) if lines else [],
        used_tokens=used,
        reached=reached,
    )
    return result.with_totals(totals) if totals is not None else result


def _rank(entry: tuple) -> tuple:
    return entry[0], entry[1]


# exp(−age/DECAY_DAYS) per age in days, per DECAY_DAYS: a day has few distinct ages.
_DECAY_PARTS: dict[float, dict[int, float]] = {}


def _decays(decay_days: float) -> dict[int, float]:
    found = _DECAY_PARTS.get(decay_days)
    if found is None:
        found = _DECAY_PARTS.setdefault(decay_days, {})
    return found


def recalled_item(item: Scored) -> dict:
    """A recalled lesson as the preview endpoints show it (SPEC §6 recall response)."""
    return {
        "id": item.row.id_text,
        "title": item.row.title,
        "score": _round(item.score),
        "components": {name: _round(value) for name, value in item.components.items()},
        "tokens": item.row.tokens,
    }
