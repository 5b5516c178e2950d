"""Measuring correction detection on a labelled corpus (SPEC §5, §14).

Each corpus row is a student's message with the tutor message it answers,
labelled with its type, the SPEC §5 tier it routes to, its kind, whether it
is a hard negative, and (factual rows) the statement that should be stored.
A reader -- the rules, or the rules and the model -- gives a ``Detection``
or None per row; ``score`` counts what SPEC §14 asks and ``goals_missed``
names every goal the figures fall short of.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from corrections.conf import setting
from corrections.detection import FACTUAL, NEGATIVE, PREFERENCE, PROCESS, Detection

CORPUS = Path(__file__).with_name("corpus.jsonl")

NONE = "none"
TYPES = (FACTUAL, PREFERENCE, PROCESS, NEGATIVE)
LANGUAGES = ("en", "zh")
SPLITS = ("tune", "heldout")
# SPEC §5's table (turn 3), by tier: what a detection is written to.
SESSION, USER, PROPOSAL, PROCESS_CASE = "session", "user", "proposal", "process_case"
TIERS = (NONE, SESSION, USER, PROPOSAL, PROCESS_CASE)
# Every persistent tier writes the author's user memory (a proposal and a
# process case do too): a hard negative reaching any of them reaches it.
WRITES_USER_MEMORY = (USER, PROPOSAL, PROCESS_CASE)

# SPEC §14's goals (rules only).
DETECTION_PRECISION_MIN = 0.92  # per language
DETECTION_RECALL_MIN = 0.85  # per language
TYPE_ACCURACY_MIN = 0.85  # among the corrections detected
TIER_ACCURACY_MIN = 0.85
HARD_NEGATIVES_USER_MEMORY_MAX = 0.02  # share of hard negatives
HARD_NEGATIVES_PROPOSALS_MAX = 0  # hard negatives proposing a course fact
STATEMENTS_AS_EXPECTED_MIN = 0.85  # factual rows read as factual
STATEMENT_FRAGMENTS_MAX = 0


@dataclass(frozen=True)
class Row:
    id: str
    lang: str
    split: str
    type: str
    tier: str
    kind: str
    hard_negative: bool
    tutor: str
    message: str
    statement: str | None = None


class CorpusError(ValueError):
    """A corpus file that is not the labelled JSON lines described in the README."""


def load_corpus(path: Path = CORPUS) -> list[Row]:
    rows, seen = [], set()
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CorpusError(f"{path}: cannot be read ({exc})") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            row = Row(**{name: data[name] for name in Row.__dataclass_fields__ if name in data})
        except (ValueError, TypeError) as exc:
            raise CorpusError(f"{path}:{number}: not a corpus row ({exc})") from None
        problem = _row_problem(row)
        if row.id in seen:
            problem = "duplicate id"
        if problem:
            raise CorpusError(f"{path}:{number} ({row.id}): {problem}")
        seen.add(row.id)
        rows.append(row)
    if not rows:
        raise CorpusError(f"{path}: no rows")
    return rows


def _row_problem(row: Row) -> str:
    if row.lang not in LANGUAGES:
        return f"lang must be one of {', '.join(LANGUAGES)}"
    if row.split not in SPLITS:
        return f"split must be one of {', '.join(SPLITS)}"
    if row.type not in (*TYPES, NONE):
        return f"type must be one of {', '.join((*TYPES, NONE))}"
    if row.tier not in TIERS:
        return f"tier must be one of {', '.join(TIERS)}"
    if (row.type == NONE) != (row.tier == NONE):
        return "type none and tier none go together"
    if row.hard_negative and row.type != NONE:
        return "a hard negative is of type none"
    if not isinstance(row.message, str) or not isinstance(row.tutor, str) or not row.message.strip():
        return "tutor and message must be text, the message not empty"
    return ""


def spec_tier(detection: Detection | None) -> str:
    """The tier SPEC §5's table (turn 3) writes ``detection`` to, with the
    thresholds of ``corrections.conf``; a factual correction without topic
    words stays in user memory (``corrections.services.routing``)."""
    if detection is None:
        return NONE
    kind, confidence = detection.type, detection.confidence
    if kind == FACTUAL:
        if confidence < setting("CORRECTIONS_USER_THRESHOLD"):
            return SESSION
        if confidence < setting("CORRECTIONS_SYSTEM_THRESHOLD") or not detection.topic:
            return USER
        return PROPOSAL
    if kind == PROCESS:
        return PROCESS_CASE if confidence >= setting("CORRECTIONS_PROCESS_CASE_THRESHOLD") else USER
    if kind == PREFERENCE:
        return USER
    return SESSION


_EDGES = " \t\r\n,.;:!?、。，；：！？-—~…\"'“”‘’()（）"


def comparable(statement: str) -> str:
    """A statement as compared with the expected one: NFKC, one space
    between words, no punctuation at either end, case folded."""
    text = " ".join(unicodedata.normalize("NFKC", statement).split())
    return text.strip(_EDGES).casefold()


_CONTENT = re.compile(r"[a-z]{2,}|\d|[\u3400-\u9fff]{2,}", re.IGNORECASE)


def is_fragment(stored: str, expected: str) -> bool:
    """A stored statement no reader can use: nothing of content left, or less
    than half of what the student said."""
    stored, expected = comparable(stored), comparable(expected)
    return not _CONTENT.search(stored) or len(stored) * 2 < len(expected)


@dataclass
class Reading:
    row: Row
    type: str
    tier: str
    statement: str = ""

    @property
    def detected(self) -> bool:
        return self.type != NONE


def read_corpus(rows: Iterable[Row], reader: Callable[[Row], Detection | None], progress=None) -> list:
    rows = list(rows)
    readings = []
    for done, row in enumerate(rows, 1):
        detection = reader(row)
        readings.append(
            Reading(
                row=row,
                type=detection.type if detection else NONE,
                tier=spec_tier(detection),
                statement=detection.corrected_statement if detection else "",
            )
        )
        if progress is not None:
            progress(done, len(rows))
    return readings


def _ratio(part: int, whole: int) -> float | None:
    return part / whole if whole else None


@dataclass
class Score:
    """The figures of one set of readings (SPEC §14)."""

    readings: list
    detection: dict = field(default_factory=dict)  # lang -> (precision, recall, tp, fp, fn)
    by_type: dict = field(default_factory=dict)  # (type, lang) -> (precision, recall, tp, fp, fn)
    type_accuracy: tuple = (None, 0, 0)
    tier_accuracy: tuple = (None, 0, 0)
    hard_negatives: int = 0
    hard_tiers: Counter = field(default_factory=Counter)
    statements: tuple = (None, 0, 0)
    fragments: list = field(default_factory=list)
    kinds: dict = field(default_factory=dict)  # (kind, gold positive?) -> (right, total)

    @property
    def hard_user_memory(self) -> int:
        return sum(self.hard_tiers[t] for t in WRITES_USER_MEMORY)


def _pr(readings, is_gold, is_found) -> tuple:
    tp = sum(1 for r in readings if is_gold(r) and is_found(r))
    fp = sum(1 for r in readings if not is_gold(r) and is_found(r))
    fn = sum(1 for r in readings if is_gold(r) and not is_found(r))
    return (_ratio(tp, tp + fp), _ratio(tp, tp + fn), tp, fp, fn)


def score(readings: list) -> Score:
    result = Score(readings=readings)
    for lang in LANGUAGES:
        mine = [r for r in readings if r.row.lang == lang]
        if not mine:
            continue
        result.detection[lang] = _pr(mine, lambda r: r.row.type != NONE, lambda r: r.detected)
        for kind in TYPES:
            result.by_type[kind, lang] = _pr(
                mine, lambda r, k=kind: r.row.type == k, lambda r, k=kind: r.type == k
            )
    both = [r for r in readings if r.row.type != NONE and r.detected]
    right = sum(1 for r in both if r.type == r.row.type)
    result.type_accuracy = (_ratio(right, len(both)), right, len(both))
    right = sum(1 for r in readings if r.tier == r.row.tier)
    result.tier_accuracy = (_ratio(right, len(readings)), right, len(readings))
    hard = [r for r in readings if r.row.hard_negative]
    result.hard_negatives = len(hard)
    result.hard_tiers = Counter(r.tier for r in hard if r.tier != NONE)
    factual = [r for r in readings if r.row.type == FACTUAL and r.type == FACTUAL and r.row.statement]
    right = sum(1 for r in factual if comparable(r.statement) == comparable(r.row.statement))
    result.statements = (_ratio(right, len(factual)), right, len(factual))
    result.fragments = [r for r in factual if is_fragment(r.statement, r.row.statement)]
    kinds: dict = {}
    for r in readings:
        positive = r.row.type != NONE
        key = (r.row.kind, positive)
        good = r.type == r.row.type if positive else not r.detected
        done, total = kinds.get(key, (0, 0))
        kinds[key] = (done + good, total + 1)
    result.kinds = kinds
    return result


def goals_missed(result: Score) -> list[str]:
    """Every SPEC §14 goal ``result`` falls short of, as one line each."""
    missed = []
    # A figure without rows to count (no correction in a language, none
    # detected) has nothing to fall short of.
    for lang, (precision, recall, *_) in result.detection.items():
        if precision is not None and precision < DETECTION_PRECISION_MIN:
            missed.append(f"detection precision ({lang}) below {DETECTION_PRECISION_MIN}")
        if recall is not None and recall < DETECTION_RECALL_MIN:
            missed.append(f"detection recall ({lang}) below {DETECTION_RECALL_MIN}")
    if result.type_accuracy[0] is not None and result.type_accuracy[0] < TYPE_ACCURACY_MIN:
        missed.append(f"type accuracy below {TYPE_ACCURACY_MIN}")
    if result.tier_accuracy[0] is not None and result.tier_accuracy[0] < TIER_ACCURACY_MIN:
        missed.append(f"tier accuracy below {TIER_ACCURACY_MIN}")
    if (
        result.hard_negatives
        and result.hard_user_memory / result.hard_negatives > HARD_NEGATIVES_USER_MEMORY_MAX
    ):
        missed.append(f"hard negatives reaching user memory above {HARD_NEGATIVES_USER_MEMORY_MAX:.0%}")
    if result.hard_tiers[PROPOSAL] > HARD_NEGATIVES_PROPOSALS_MAX:
        missed.append("hard negatives proposing course facts")
    if result.statements[2] and result.statements[0] < STATEMENTS_AS_EXPECTED_MIN:
        missed.append(f"statements as expected below {STATEMENTS_AS_EXPECTED_MIN}")
    if len(result.fragments) > STATEMENT_FRAGMENTS_MAX:
        missed.append("statements stored as fragments")
    return missed


# --- the printed table ----------------------------------------------------------


def _f(value: float | None) -> str:
    return "  -  " if value is None else f"{value:.3f}"


def render(result: Score, title: str) -> list[str]:
    readings = result.readings
    langs = Counter(r.row.lang for r in readings)
    lines = [
        f"== {title}: {len(readings)} messages ("
        + ", ".join(f"{lang} {langs[lang]}" for lang in LANGUAGES if langs[lang])
        + f"), {result.hard_negatives} hard negatives",
        f"{'detection':<22}{'precision':>10}{'recall':>8}{'tp':>5}{'fp':>5}{'fn':>5}",
    ]
    for lang, (precision, recall, tp, fp, fn) in result.detection.items():
        lines.append(f"  {lang:<20}{_f(precision):>10}{_f(recall):>8}{tp:>5}{fp:>5}{fn:>5}")
    lines.append(f"{'by type':<22}{'precision':>10}{'recall':>8}{'tp':>5}{'fp':>5}{'fn':>5}")
    for kind in TYPES:
        for lang in LANGUAGES:
            if (kind, lang) in result.by_type:
                precision, recall, tp, fp, fn = result.by_type[kind, lang]
                label = f"{kind} {lang}"
                lines.append(f"  {label:<20}{_f(precision):>10}{_f(recall):>8}{tp:>5}{fp:>5}{fn:>5}")
    value, right, total = result.type_accuracy
    lines.append(f"type accuracy among detected: {_f(value)} ({right}/{total})")
    value, right, total = result.tier_accuracy
    lines.append(f"tier accuracy: {_f(value)} ({right}/{total})")
    hard = result.hard_negatives
    if hard:
        parts = [f"{tier} {result.hard_tiers[tier]}" for tier in (SESSION, USER, PROPOSAL, PROCESS_CASE)]
        share = result.hard_user_memory / hard
        lines.append(f"hard negatives reaching: {', '.join(parts)} (of {hard})")
        lines.append(
            f"hard negatives reaching user memory: {share:.1%} ({result.hard_user_memory}/{hard}); "
            f"proposing course facts: {result.hard_tiers[PROPOSAL]}"
        )
    value, right, total = result.statements
    lines.append(
        f"factual statements as expected: {_f(value)} ({right}/{total}); fragments: {len(result.fragments)}"
    )
    lines.append("by kind (right/total): ")
    for positive, label in ((True, "  corrections: "), (False, "  non-corrections: ")):
        parts = [f"{kind} {r}/{t}" for (kind, p), (r, t) in sorted(result.kinds.items()) if p is positive]
        lines.append(label + ", ".join(parts))
    return lines


def render_misses(result: Score) -> list[str]:
    lines = []
    for r in result.readings:
        wrong_type = r.type != r.row.type
        wrong_tier = r.tier != r.row.tier
        wrong_statement = (
            r.row.type == FACTUAL
            and r.type == FACTUAL
            and r.row.statement
            and comparable(r.statement) != comparable(r.row.statement)
        )
        if wrong_type or wrong_tier or wrong_statement:
            lines.append(
                f"  {r.row.id} [{r.row.kind}] want {r.row.type}/{r.row.tier}, got {r.type}/{r.tier}: "
                f"{json.dumps(r.row.message, ensure_ascii=False)}"
            )
            if wrong_statement:
                lines.append(
                    f"      statement {json.dumps(r.statement, ensure_ascii=False)} "
                    f"want {json.dumps(r.row.statement, ensure_ascii=False)}"
                )
    return lines
