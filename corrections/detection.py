"""The rule-based correction detector (SPEC §5; seed 002 §3.1). Pure Python:
it reads no row and writes none, so a message that is no correction costs
nothing but this.

Rules, in the seed's order:
1. Trigger words of the user's message: process, then preference, then
   factual (the first kind found wins).
2. Factual confidence: a number 0.9, a cited source 0.85, plain 0.7; a
   negation with nothing in its place ("不对。") is negative feedback at 0.3.
3. Without any trigger, a different number on the same topic as the recent
   assistant message is an implicit factual correction at 0.6.
4. Otherwise a negative trigger alone ("这不行") is negative feedback at 0.3.

Two guards the seed does not have, both for ordinary chat: words inside a
question ("Is it actually 630 mm?") are no correction, and the seed's "fewer
than 5 characters" test for a bare negation is read as "no content word and
no number", which works for English ("That's wrong." leaves "That's .") as for
Chinese.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, replace

from corrections.text import (
    TOPIC_MAX_TOKENS,
    Analysed,
    Quantity,
    Span,
    clean_statement,
    cut_text,
    is_content,
    normalize,
    ordered_unique,
    text_key,
    topic_tokens,
)
from corrections.vocabulary import (
    CORRECTION_TRIGGERS,
    DIRECTIVE_PHRASES,
    NEGATIVE_TRIGGERS,
    PREFERENCE_TRIGGERS,
    PROCESS_TRIGGERS,
    SOURCE_MARKERS_CJK,
    SOURCE_MARKERS_LATIN,
)
from tutor.kernel.invisible import DEFAULT_IGNORABLE, IGNORABLE_RANGES

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
ORIGINAL_MAX_CHARS = 500  # the assistant's words a correction refers to
IMPLICIT_MAX_NUMBERS = 20  # numbers of one message compared with the assistant's


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


# --- trigger matching ---------------------------------------------------------------

_HIDDEN = DEFAULT_IGNORABLE
_HIDDEN_RUN = re.compile(f"{_HIDDEN}+")
_GAP = rf"[\s{IGNORABLE_RANGES}]+"  # what a reader sees as one space between words


def _hidden_gap(text: str, start: int, end: int) -> bool:
    """Nothing a reader sees between ``start`` and ``end``: no character, or
    only invisible ones ("不\u200b对" reads 不对)."""
    return start == end or _HIDDEN_RUN.fullmatch(text, start, end) is not None


def _cjk_phrase_spans(doc: Analysed, phrase: str) -> list[Span]:
    """Where consecutive Chinese words spell exactly ``phrase``: "不"+"对" is
    不对, but 别 never matches inside 特别 or 别人 (word boundaries); words
    apart by invisible characters only are consecutive."""
    tokens, spans = doc.tokens, []
    for i, first in enumerate(tokens):
        if first.kind != "cjk" or not phrase.startswith(first.text):
            continue
        text, j = first.text, i
        while len(text) < len(phrase) and j + 1 < len(tokens):
            nxt = tokens[j + 1]
            if nxt.kind != "cjk" or not _hidden_gap(doc.masked, tokens[j].end, nxt.start):
                break
            text += nxt.text
            j += 1
        if text == phrase:
            spans.append(Span(first.start, tokens[j].end))
    return spans


@functools.cache
def _latin_pattern(phrase: str) -> re.Pattern[str]:
    # A reader sees a phrase where its words are apart by any white space
    # ("i  prefer", "i\u00a0prefer", "i\tprefer") or an invisible character,
    # and sees a word through invisible characters inside it ("m\u00adust").
    words = (f"{_HIDDEN}*".join(re.escape(ch) for ch in word) for word in phrase.split(" "))
    # Nor does a phrase end where the word goes on past an invisible
    # character ("wrong\u200bful").
    return re.compile(r"(?<![a-z'])" + _GAP.join(words) + rf"(?!{_HIDDEN}*[a-z'])")


def _latin_phrase_spans(doc: Analysed, phrase: str) -> list[Span]:
    return [Span(m.start(), m.end()) for m in _latin_pattern(phrase).finditer(doc.masked)]


def find_phrases(doc: Analysed, phrases, within: list[Span]) -> list[Span]:
    """Spans of ``phrases`` inside the ``within`` sentences, in text order."""
    found = []
    for phrase in phrases:
        spans = _latin_phrase_spans(doc, phrase) if phrase.isascii() else _cjk_phrase_spans(doc, phrase)
        found.extend(s for s in spans if any(w.start <= s.start and s.end <= w.end for w in within))
    return sorted(set(found), key=lambda s: (s.start, s.end))


def statement_sentences(doc: Analysed) -> list[Span]:
    return [s for s in doc.sentences if not doc.is_question(s)]


_CANDIDATE_GROUPS = (PROCESS_TRIGGERS, PREFERENCE_TRIGGERS, CORRECTION_TRIGGERS, NEGATIVE_TRIGGERS)
_EVERY_TRIGGER = tuple(dict.fromkeys(phrase for group in _CANDIDATE_GROUPS for phrase in group))
_DIGIT = re.compile(r"\d")
_GAPS = re.compile(_GAP)
_COMPACT_TRIGGERS = tuple(dict.fromkeys(phrase.replace(" ", "") for phrase in _EVERY_TRIGGER))


def _may_hold_a_trigger(norm: str) -> bool:
    """The first look for a trigger phrase: a plain text as it is; any other
    with its white space and invisible characters taken out, of the text and
    of the phrases alike -- which finds every phrase ``find_phrases`` can
    ("i\u200bpre\u00adfer", "i  prefer"), and a few more that the full
    reading then drops."""
    if norm.isascii() and norm.isprintable() and "  " not in norm:
        return any(phrase in norm for phrase in _EVERY_TRIGGER)
    compact = _GAPS.sub("", norm)
    return any(phrase in compact for phrase in _COMPACT_TRIGGERS)


def is_candidate(text: str) -> bool:
    """Could ``text`` be a correction at all? A trigger word or a number
    outside a question; False means no detection can find anything.

    Run on every stored user message (``corrections.services.dispatch``).
    Most hold neither a digit nor any trigger phrase as a substring of their
    normalised text, which a trigger word and a number need: those are
    answered without reading the text's words and sentences."""
    norm = normalize(text)
    if not _DIGIT.search(norm) and not _may_hold_a_trigger(norm):
        return False
    doc = Analysed(text)
    spans = statement_sentences(doc)
    if not spans:
        return False
    if any(find_phrases(doc, group, spans) for group in _CANDIDATE_GROUPS):
        return True
    return any(doc.quantities_in(span) for span in spans)


# --- the detector ---------------------------------------------------------------------


def detect(text: str, *, assistant: str | None = None) -> Detection | None:
    """The correction in the user's ``text``, if any; ``assistant`` is the
    recent assistant message it may refer to (None when there is none)."""
    doc = Analysed(text)
    spans = statement_sentences(doc)
    if not spans:
        return None
    reference = Analysed(assistant) if assistant and assistant.strip() else None
    process = find_phrases(doc, PROCESS_TRIGGERS, spans)
    if process:
        return _whole_message(doc, spans, PROCESS, PROCESS_CONFIDENCE, process)
    preference = find_phrases(doc, PREFERENCE_TRIGGERS, spans)
    if preference:
        return _whole_message(doc, spans, PREFERENCE, PREFERENCE_CONFIDENCE, preference)
    correction = find_phrases(doc, CORRECTION_TRIGGERS, spans)
    if correction:
        directive = find_phrases(doc, DIRECTIVE_PHRASES, spans)
        if directive:  # an instruction to the tutor is no fact (vocabulary.DIRECTIVE_PHRASES)
            return _whole_message(doc, spans, PROCESS, PROCESS_CONFIDENCE, directive)
        return _factual(doc, spans, correction, reference)
    implicit = _implicit(doc, spans, reference)
    if implicit is not None:
        return implicit
    if find_phrases(doc, NEGATIVE_TRIGGERS, spans):
        return _negative(reference)
    return None


def _text_without(doc: Analysed, spans: list[Span], removed: list[Span]) -> str:
    """The sentences ``spans`` of the user's own text, ``removed`` cut out."""
    parts = []
    for span in spans:
        position = span.start
        for cut in (r for r in removed if span.start <= r.start and r.end <= span.end):
            parts.append(doc.original[position : cut.start])
            position = cut.end
        parts.append(doc.original[position : span.end])
    return "".join(parts)


def _content_words(
    doc: Analysed, span: Span | None = None, exclude: list[Span] = (), limit: int | None = TOPIC_MAX_TOKENS
) -> list[str]:
    tokens = doc.tokens if span is None else doc.tokens_in(span)
    words = ordered_unique(
        t.text
        for t in tokens
        if is_content(t) and not any(e.start <= t.start and t.end <= e.end for e in exclude)
    )
    return words[:limit] if limit is not None else words


def _whole_message(doc: Analysed, spans: list[Span], kind: str, confidence: float, triggers) -> Detection:
    """Preference and process corrections: the user's statement as written
    (its trigger words are its meaning: "我希望回答简短一些")."""
    statement = clean_statement(_text_without(doc, spans, []))
    words = ordered_unique(w for span in spans for w in _content_words(doc, span, triggers))
    return Detection(
        type=kind,
        confidence=confidence,
        topic=tuple(words[:TOPIC_MAX_TOKENS]),
        original_statement="",
        corrected_statement=cut_text(statement, STATEMENT_MAX_CHARS),
    )


def _cites_source(doc: Analysed) -> bool:
    if any(t.kind == "cjk" and t.text.startswith(SOURCE_MARKERS_CJK) for t in doc.tokens):
        return True
    return bool(_phrases_anywhere(doc, SOURCE_MARKERS_LATIN))


def _phrases_anywhere(doc: Analysed, phrases) -> list[Span]:
    return find_phrases(doc, phrases, [Span(0, len(doc.norm))])


def _corrected_quantity(doc: Analysed, reference: Analysed | None):
    """The number the correction states: the first one that differs from the
    assistant's numbers (the wrong value is often quoted: "不是 500mm，是 630mm")."""
    quantities = doc.quantities_in()
    if not quantities:
        return None
    stated = [q for q, _ in reference.quantities_in()] if reference else []
    for quantity, span in quantities:
        if not any(quantity.same_as(other) for other in stated):
            return quantity, span
    return quantities[0]


def _clause_at(doc: Analysed, position: int) -> Span:
    return next((c for c in doc.clauses if c.start <= position < c.end), Span(0, len(doc.norm)))


def _sentence_at(doc: Analysed, position: int) -> Span:
    return next((s for s in doc.sentences if s.start <= position < s.end), Span(0, len(doc.norm)))


# What ends a clause inside a sentence and may go with the bare clause after
# it: no line break (that ends a sentence), no closing bracket (its opening
# one stays).
_CLAUSE_SEPARATOR = re.compile(r"[,、:(\[]+[^\S\n]*\Z")


def _bare(doc: Analysed, clause: Span, inside: list[Span], token_starts: list[int]) -> bool:
    """Whether ``clause`` says nothing but its triggers ``inside`` (sorted):
    no number, no word of content outside them. Linear in the
    clause's tokens and triggers."""
    if doc.quantities_in(clause):
        return False
    tokens, k, reach = doc.tokens, 0, -1
    for j in range(bisect_left(token_starts, clause.start), len(tokens)):
        token = tokens[j]
        if token.start >= clause.end:
            break
        while k < len(inside) and inside[k].start <= token.start:
            reach = max(reach, inside[k].end)  # the furthest end of a trigger begun before the token
            k += 1
        if token.end <= clause.end and reach < token.end and is_content(token):
            return False
    return True


def _bare_clauses(doc: Analysed, triggers: list[Span]) -> list[Span]:
    """What to cut of ``triggers`` (sorted): each trigger, or its whole clause
    when the clause says nothing else (SPEC §5 corrected_statement).
    "That is wrong," of "That is wrong, it is 42" goes whole, not as "That is
    ,"; inside a sentence, with the separator before it ("The limit, that is
    wrong, is 60" -> "The limit is 60")."""
    clauses = doc.clauses
    starts, token_starts = [c.start for c in clauses], [t.start for t in doc.tokens]
    at: list[int | None] = []  # each trigger's clause, by index
    grouped: dict[int, list[Span]] = {}
    for trigger in triggers:
        i = bisect_right(starts, trigger.start) - 1
        i = i if i >= 0 and trigger.end <= clauses[i].end else None
        at.append(i)
        if i is not None:
            grouped.setdefault(i, []).append(trigger)
    bare = {i for i, inside in grouped.items() if _bare(doc, clauses[i], inside, token_starts)}
    cuts: list[Span] = []
    for trigger, i in zip(triggers, at, strict=True):
        cut = trigger
        if i in bare:
            cut = clauses[i]
            before = clauses[i - 1] if i > 0 and i - 1 not in bare else None
            if before is not None and before.end == cut.start:
                separator = _CLAUSE_SEPARATOR.search(doc.masked, before.start, before.end)
                if separator is not None:
                    cut = Span(separator.start(), cut.end)
        if not cuts or cut.start >= cuts[-1].end:
            cuts.append(cut)
    return cuts


def _factual(doc: Analysed, spans: list[Span], triggers: list[Span], reference: Analysed | None) -> Detection:
    corrected = clean_statement(_text_without(doc, spans, _bare_clauses(doc, triggers)))
    body = Analysed(corrected)
    found = _corrected_quantity(body, reference)
    words = _content_words(body)
    if found is not None:
        confidence = NUMBER_CONFIDENCE
    elif _cites_source(body):
        confidence = SOURCE_CONFIDENCE
    elif not words:
        return _negative(reference)
    else:
        confidence = PLAIN_CONFIDENCE
    quantity, quantity_span = found if found is not None else (None, None)
    # The topic is what the clause stating the new value is about.
    own = _content_words(body, _clause_at(body, quantity_span.start)) if quantity_span else words
    original, topic, statement = _refer(own, quantity, reference, corrected)
    if statement[:1].isascii():  # "Actually, the rainfall is…" → "The rainfall is…"
        statement = statement[:1].upper() + statement[1:]
    return Detection(
        type=FACTUAL,
        confidence=confidence,
        topic=tuple(topic),
        original_statement=original,
        corrected_statement=cut_text(statement, STATEMENT_MAX_CHARS),
        quantity=quantity,
    )


def _refer(own_topic: list[str], quantity: Quantity | None, reference: Analysed | None, corrected: str):
    """The assistant's statement a correction refers to, the topic, and the
    corrected statement. A correction with words of its own keeps its topic;
    one without ("实际上是 580mm") takes the topic of the assistant's clause
    holding a number, and its statement is that clause with the new number."""
    if reference is None:
        return "", own_topic, corrected
    if own_topic:
        best, best_overlap = None, 0
        for clause in reference.clauses:
            overlap = len(set(_content_words(reference, clause)) & set(own_topic))
            if overlap > best_overlap:
                best, best_overlap = clause, overlap
        if best is None:
            return "", own_topic, corrected
        return _original(reference, best), own_topic, corrected
    if quantity is None:
        return "", own_topic, corrected
    numbered = [
        (clause, stated, span)
        for clause in reference.clauses
        for stated, span in reference.quantities_in(clause)
    ]
    if not numbered:
        return "", own_topic, corrected
    same_unit = [n for n in numbered if n[1].unit == quantity.unit and not n[1].same_as(quantity)]
    clause, stated, span = (same_unit or numbered)[0]
    topic = _content_words(reference, clause)
    # Keep the assistant's unit unless the correction names another one.
    new_unit = bool(quantity.unit) and quantity.unit != stated.unit
    value = quantity.number_text + (quantity.unit if new_unit else "")
    end = span.end if new_unit else span.start + len(_number_at(reference, span))
    composed = reference.original[clause.start : span.start] + value + reference.original[end : clause.end]
    return _original(reference, clause), topic, clean_statement(composed)


def _number_at(doc: Analysed, span: Span) -> str:
    match = re.match(r"\d+(?:,\d{3})*(?:\.\d+)?", doc.norm[span.start : span.end])
    return match.group() if match else ""


def _original(reference: Analysed, clause: Span) -> str:
    sentence = _sentence_at(reference, clause.start)
    return cut_text(clean_statement(reference.text_of(sentence)), ORIGINAL_MAX_CHARS)


def _implicit(doc: Analysed, spans: list[Span], reference: Analysed | None) -> Detection | None:
    """Seed 002 detectImplicitCorrection: no trigger, but the user states a
    number the assistant did not, on a topic they share."""
    if reference is None:
        return None
    stated = [q for q, _ in reference.quantities_in()]
    if not stated:
        return None
    shared_with = set(_content_words(reference, limit=None))
    candidates = [found for span in spans for found in doc.quantities_in(span)][:IMPLICIT_MAX_NUMBERS]
    for quantity, quantity_span in candidates:
        if any(quantity.same_as(other) for other in stated):
            continue
        own = _content_words(doc, _clause_at(doc, quantity_span.start))
        if not set(own) & shared_with:
            continue
        original, topic, _ = _refer(own, quantity, reference, "")
        return Detection(
            type=FACTUAL,
            confidence=IMPLICIT_CONFIDENCE,
            topic=tuple(topic),
            original_statement=original,
            corrected_statement=cut_text(clean_statement(_text_without(doc, spans, [])), STATEMENT_MAX_CHARS),
            quantity=quantity,
        )
    return None


def _negative(reference: Analysed | None) -> Detection:
    """Negative feedback: the answer was wrong, nothing in its place. What it
    refers to is the assistant's recent message."""
    original = cut_text(clean_statement(reference.original), ORIGINAL_MAX_CHARS) if reference else ""
    return Detection(
        type=NEGATIVE,
        confidence=BARE_NEGATION_CONFIDENCE,
        topic=tuple(topic_tokens(original)) if original else (),
        original_statement=original,
        corrected_statement="",
    )
