"""The rule-based correction detector (SPEC §5; seed 002 §3.1; issue 36).
Pure Python: it reads no row and writes none. The rules, in the seed's order:
not a correction, process, preference, factual, implicit number. Details:
docs/architecture.md, Correction detection.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from corrections import cues, gate
from corrections.addressing import (
    Cue,
    Reference,
    agrees,
    cites_a_source,
    confused,
    correction_cues,
    in_clauses,
    in_statements,
    narrates,
    person_at,
    preferences,
    stems,
)
from corrections.reading import Reading
from corrections.statements import (
    ORIGINAL_MAX_CHARS,
    clause_topic,
    cuts_for,
    has_content,
    quantities,
    refer,
    statement_text,
)
from corrections.text import (
    TOPIC_MAX_TOKENS,
    Analysed,
    Quantity,
    clean_statement,
    cut_text,
    is_content,
    ordered_unique,
    text_key,
    topic_tokens,
)

FACTUAL, PREFERENCE, PROCESS, NEGATIVE = "factual", "preference", "process", "negative"

# Seed 002 §3.1 calculateConfidence and the fixed confidences of its builders.
NUMBER_CONFIDENCE = 0.9
SOURCE_CONFIDENCE = 0.85
PLAIN_CONFIDENCE = 0.7
BARE_NEGATION_CONFIDENCE = 0.3
IMPLICIT_CONFIDENCE = 0.6
PREFERENCE_CONFIDENCE = 1.0
PROCESS_CONFIDENCE = 0.8

STATEMENT_MAX_CHARS = 1000  # a stored statement; a message may hold 8000
IMPLICIT_MAX_NUMBERS = 20  # numbers of one message compared with the tutor's


@dataclass(frozen=True)
class Detection:
    """What the detector found: SPEC §5's output, plus the number the
    correction states (for "the same statement")."""

    type: str
    confidence: float
    topic: tuple[str, ...]
    original_statement: str
    corrected_statement: str
    quantity: Quantity | None = None
    classifier: str = "rules"

    @property
    def statement_key(self) -> str:
        """Two statements on one topic are the same when their number matches
        (SPEC §5), or, without a number, their normalised text."""
        if self.quantity is not None:
            return f"n:{self.quantity.number_text}"
        return f"t:{text_key(self.corrected_statement)}"

    def with_changes(self, **changes) -> Detection:
        return replace(self, **changes)


# --- the first look, taken as a message is stored -------------------------------------


def is_candidate(text: str, *, wide: bool = False) -> bool:
    """Could ``text`` be a correction at all? False means ``detect`` finds
    nothing in it. Run on every stored user message (``corrections.gate``)."""
    return gate.is_candidate(text, wide=wide)


# --- the detector ---------------------------------------------------------------------


def detect(text: str, *, assistant: str | None = None) -> Detection | None:
    """The correction in the student's ``text``, if any; ``assistant`` is the
    tutor's message it answers (None when there is none)."""
    reading = Reading(text)
    if not reading.clauses or cues.SELF_REPAIR.search(reading.clean):
        return None
    reference = Reference(assistant) if assistant and assistant.strip() else None
    agreed = agrees(reading.clean)
    standing = any(
        m.group("standing") or m.group("standing_zh") for m in in_statements(reading, cues.PREFERENCE)
    )
    answers_a_question = reference is not None and reference.asks and not standing
    if not agreed and not answers_a_question:
        process = [m for m in _in_wishes(reading, cues.PROCESS) if _orders_the_work(reading, m)]
        if process:
            return _whole_message(reading, PROCESS, PROCESS_CONFIDENCE, process)
    found = [] if agreed else correction_cues(reading, reference)
    if found:
        directive = list(in_statements(reading, cues.DIRECTIVE))
        if directive:  # an instruction to the tutor is no fact (vocabulary.DIRECTIVE_PHRASES)
            return _whole_message(reading, PROCESS, PROCESS_CONFIDENCE, directive)
    if not answers_a_question:
        preference = preferences(reading)
        if preference:
            return _whole_message(reading, PREFERENCE, PREFERENCE_CONFIDENCE, preference)
    if agreed:
        return None
    if found:
        return _factual(reading, found, reference)
    return _implicit(reading, reference)


def _in_wishes(reading: Reading, pattern):
    """Matches in the statements, and in questions that ask the tutor to do
    something ("next time could you first tell me …?")."""
    clauses = [c for c in reading.clauses if not c.question or c.request]
    return in_clauses(clauses, pattern, reading.clean)


def _orders_the_work(reading: Reading, match) -> bool:
    """A process cue of the student's instruction, not of their story ("i ran
    the tests first") or of a fact ("WHERE filters rows before grouping")."""
    if narrates(reading, match.start()):
        return False
    if match.group("order"):
        clause = reading.clause_at(match.start())
        return bool(cues.IMPERATIVE.match(reading.clean[clause.start : clause.end]))
    return True


def _whole_message(reading: Reading, kind: str, confidence: float, matches) -> Detection:
    """Preference and process corrections: the student's statement as
    written (its cue words are its meaning: "我希望回答简短一些")."""
    statement = statement_text(reading, requests=True)
    cue_words = set()
    for match in matches:
        cue_words.update(topic_tokens(match.group()))
    words = [w for w in topic_tokens(statement) if w not in cue_words]
    return Detection(
        type=kind,
        confidence=confidence,
        topic=tuple(words[:TOPIC_MAX_TOKENS]),
        original_statement="",
        corrected_statement=cut_text(statement, STATEMENT_MAX_CHARS),
    )


def _factual(reading: Reading, found: list[Cue], reference: Reference | None) -> Detection | None:
    corrected = statement_text(reading, cuts_for(reading, [(c.start, c.end) for c in found if c.cut]))
    body = Analysed(corrected)
    negations_only = all(c.kind == "negation" for c in found)
    if not corrected or not has_content(body) or (negations_only and _only_the_students_own(corrected)):
        # Nothing in the tutor's place: "nope that's not it, i already have await there".
        if any(c.kind == "negation" for c in found):
            return _negative(reference)
        return None
    stated = _corrected_quantity(body, reference)
    if stated is not None:
        confidence = NUMBER_CONFIDENCE
    elif any(c.kind == "source" for c in found) or cites_a_source(reading):
        confidence = SOURCE_CONFIDENCE
    else:
        confidence = PLAIN_CONFIDENCE
    quantity, quantity_span = stated if stated is not None else (None, None)
    own = clause_topic(body, quantity_span.start) if quantity_span else _topic(body)
    contrast = any(c.kind == "contrast" for c in found)
    reference_doc = reference.doc if reference else None
    original, topic, statement = refer(own, quantity, reference_doc, corrected, compose=not contrast)
    if statement[:1].isascii():  # "actually the rainfall is…" → "The rainfall is…"
        statement = statement[:1].upper() + statement[1:]
    return Detection(
        type=FACTUAL,
        confidence=confidence,
        topic=tuple(topic),
        original_statement=original,
        corrected_statement=cut_text(statement, STATEMENT_MAX_CHARS),
        quantity=quantity,
    )


def _only_the_students_own(statement: str) -> bool:
    """Every clause with words of the statement tells of the student."""
    said = Reading(statement)
    clauses = [c for c in said.statements if has_content(said.doc, said.span(c.start, c.end))]
    return bool(clauses) and all(narrates(said, c.start) for c in clauses)


def _topic(doc: Analysed) -> list[str]:
    return ordered_unique(t.text for t in doc.tokens if is_content(t))[:TOPIC_MAX_TOKENS]


def _corrected_quantity(body: Analysed, reference: Reference | None):
    """The number the correction states: the first one the tutor did not
    state (the wrong value is often quoted: "不是 500mm，是 630mm")."""
    found = quantities(body)
    if not found:
        return None
    stated = [q for q, _ in quantities(reference.doc)] if reference else []
    for quantity, span in found:
        if not any(quantity.same_as(other) for other in stated):
            return quantity, span
    return found[0]


def _implicit(reading: Reading, reference: Reference | None) -> Detection | None:
    """Seed 002 detectImplicitCorrection: no cue, but the student states a
    number the tutor did not, on a topic of the tutor's statement."""
    if reference is None or not reference.states:
        return None
    stated = [q for q, _ in quantities(reference.doc)]
    if not stated:
        return None
    doc = reading.doc
    candidates = []
    for clause in reading.statements:
        if confused(reading, clause.start):
            continue
        span = reading.span(clause.start, clause.end)
        candidates.extend((q, s, clause) for q, s in quantities(doc, span))
    for quantity, quantity_span, clause in candidates[:IMPLICIT_MAX_NUMBERS]:
        if any(quantity.same_as(other) for other in stated):
            continue
        if person_at(reading, clause.end) in (cues.SELF, cues.OTHER):
            continue
        own = clause_topic(doc, quantity_span.start)
        if not stems(" ".join(own)) & reference.words:
            continue
        original, topic, _ = refer(own, quantity, reference.doc, "")
        return Detection(
            type=FACTUAL,
            confidence=IMPLICIT_CONFIDENCE,
            topic=tuple(topic),
            original_statement=original,
            corrected_statement=cut_text(statement_text(reading), STATEMENT_MAX_CHARS),
            quantity=quantity,
        )
    return None


def _negative(reference: Reference | None) -> Detection:
    """Negative feedback: the answer was wrong, nothing in its place. What it
    refers to is the tutor's message."""
    original = cut_text(clean_statement(reference.doc.original), ORIGINAL_MAX_CHARS) if reference else ""
    return Detection(
        type=NEGATIVE,
        confidence=BARE_NEGATION_CONFIDENCE,
        topic=tuple(topic_tokens(original)) if original else (),
        original_statement=original,
        corrected_statement="",
    )


def detection_from(*, kind: str, confidence: float, statement: str, assistant: str | None) -> Detection:
    """A detection read from a statement someone else wrote (the model
    classifier's, for a message the rules passed over): its number, topic
    and the tutor's statement it refers to, as the rules would find them."""
    if kind == NEGATIVE:
        return _negative(Reference(assistant) if assistant and assistant.strip() else None).with_changes(
            confidence=confidence
        )
    body = Analysed(statement)
    found = quantities(body)
    quantity = found[0][0] if found else None
    reference = Analysed(assistant) if assistant and assistant.strip() and kind == FACTUAL else None
    original, topic, _ = refer(_topic(body), quantity, reference, statement)
    return Detection(
        type=kind,
        confidence=confidence,
        topic=tuple(topic),
        original_statement=original,
        corrected_statement=cut_text(statement, STATEMENT_MAX_CHARS),
        quantity=quantity if kind == FACTUAL else None,
    )
