"""What a correction states (SPEC §5: "a stored statement is the student's
sentence with the cue removed cleanly"), its number and its topic. Details:
docs/architecture.md, Correction detection.
"""

from __future__ import annotations

import re

from corrections.reading import HIDDEN, Reading
from corrections.text import (
    TOPIC_MAX_TOKENS,
    Analysed,
    Quantity,
    Span,
    clean_statement,
    cut_text,
    is_content,
    ordered_unique,
)
from corrections.vocabulary import FILLER_WORDS, VERSIONED_NAMES

ORIGINAL_MAX_CHARS = 500  # the tutor's words a correction refers to


# --- numbers ------------------------------------------------------------------------

_NAMED = "|".join(sorted(map(re.escape, VERSIONED_NAMES), key=len, reverse=True))
_VERSION_BEFORE = re.compile(rf"(?:(?<![a-z])(?:{_NAMED}|v|version|ver|release) ?|[a-z_/^-])$")
_VERSION_AFTER = re.compile(r"^(?:\.\d|[a-z_-](?!\w*\s*$)|[a-z]{1,3}\d)")


def is_name_or_version(norm: str, span: Span, quantity: Quantity) -> bool:
    """Whether the number at ``span`` belongs to a name or version rather
    than stating a quantity: "utf-8", "python 3.11", "node 20", "v2", "3.10.4"."""
    before = norm[max(0, span.start - 16) : span.start]
    if _VERSION_BEFORE.search(before):
        return True
    number_end = span.start + len(quantity.number_text) if not quantity.unit else span.end
    after = norm[number_end : number_end + 6]
    return bool(_VERSION_AFTER.match(after)) and not quantity.unit


def quantities(doc: Analysed, span: Span | None = None) -> list[tuple[Quantity, Span]]:
    """The quantities of ``doc`` (inside ``span``), without names and versions."""
    return [(q, s) for q, s in doc.quantities_in(span) if not is_name_or_version(doc.norm, s, q)]


# --- the student's words ---------------------------------------------------------------------

_VOCATIVE = re.compile(
    r"^(?:(?:老师|大佬|哥|姐|兄弟|teacher|sir|bro|dude|man|hey|hi|hmm+|um+|uh+|ugh|well|lol"
    r"|嗯+|啊|哈哈+|额|呃)[ ,，!！]*)+$"
)


_OPERATOR = re.compile(r"[=!<>]=+|=>|(?<![\w<>=-])[<>](?![\w<>=])|\w+\(\)")


_AFTER_CUE = re.compile(r" ?(?:tho|though|lol|haha|bro|dude|man|sorry|啊|哦|哈哈)(?![a-z])")


def has_content(doc: Analysed, span: Span | None = None) -> bool:
    """Words that state something: a content word that is no filler, a
    quantity or an operator ("=== not =="); "still failing with the same
    error" states nothing."""
    tokens = doc.tokens if span is None else doc.tokens_in(span)
    if any(is_content(t) and t.text not in FILLER_WORDS for t in tokens):
        return True
    start, end = (span.start, span.end) if span else (0, len(doc.norm))
    return bool(quantities(doc, span)) or _OPERATOR.search(doc.masked, start, end) is not None


def cuts_for(reading: Reading, cues: list[tuple[int, int]]) -> list[tuple[int, int, str]]:
    """The cuts (message offsets, replacement) that take ``cues`` (clean
    offsets, sorted) out of the student's words (module docstring)."""
    clauses = reading.clauses
    doc = reading.doc
    cuts: list[tuple[int, int, str]] = []
    whole: set[int] = set()
    for start, end in cues:
        index = next((i for i, c in enumerate(clauses) if c.start <= start and end <= c.end), None)
        if index is None:
            continue
        clause = clauses[index]
        rest = list(
            _outside(clause.start, clause.end, [(s, e) for s, e in cues if clause.start <= s < clause.end])
        )
        said = any(
            has_content(doc, reading.span(a, b)) for a, b in rest if reading.text(a, b).strip(" " + HIDDEN)
        )
        if not said:
            whole.add(index)
            continue
        lead = reading.text(clause.start, start)
        begin = clause.start if lead.strip() and _VOCATIVE.match(lead.strip()) else start
        # A particle after the cue goes with it ("thats not right tho, …").
        tail = _AFTER_CUE.match(reading.clean, end, clause.end)
        span = reading.span(begin, tail.end() if tail else end)
        cuts.append((span.start, span.end, ""))
    for index in sorted(whole):
        clause = clauses[index]
        previous = clauses[index - 1] if index > 0 else None
        following = clauses[index + 1] if index + 1 < len(clauses) else None
        keeps_before = (
            previous is not None and previous.sentence == clause.sentence and index - 1 not in whole
        )
        has_after = following is not None and following.sentence == clause.sentence
        if keeps_before and has_after:
            # "The limit, that is wrong, is 60": the clause and both separators go, one space stays.
            cuts.append((_end(reading, previous), _start(reading, following), " "))
        elif has_after:
            cuts.append((_start(reading, clause), _start(reading, following), ""))
        elif keeps_before:
            cuts.append((_end(reading, previous), _end(reading, clause), ""))
        else:
            cuts.append((_start(reading, clause), _end(reading, clause), ""))
    cuts.sort()
    merged: list[tuple[int, int, str]] = []
    for cut in cuts:
        if merged and cut[0] < merged[-1][1]:
            start, end, text = merged[-1]
            merged[-1] = (start, max(end, cut[1]), text or cut[2])
        else:
            merged.append(cut)
    return merged


def _start(reading: Reading, clause) -> int:
    return reading.span(clause.start, clause.end).start


def _end(reading: Reading, clause) -> int:
    return reading.span(clause.start, clause.end).end


def _outside(start: int, end: int, inside: list[tuple[int, int]]):
    position = start
    for a, b in sorted(inside):
        if a > position:
            yield position, a
        position = max(position, b)
    if position < end:
        yield position, end


def statement_text(reading: Reading, cuts: list[tuple[int, int, str]] = (), *, requests: bool = False) -> str:
    """The student's statement clauses as written, ``cuts`` applied, runs of
    clauses apart by a question or hidden text joined by one space.
    ``requests``: a wish asked as a question is part of it ("能不能下次先告诉我哪里错了")."""
    original = reading.doc.original
    parts = []
    for a, b in _runs(reading, requests):
        span = reading.span(a, b)
        position, text = span.start, []
        for start, end, replacement in cuts:
            if end <= span.start or start >= span.end:
                continue
            text.append(original[position : max(position, start)])
            text.append(replacement)
            position = max(position, min(end, span.end))
        text.append(original[position : span.end])
        parts.append("".join(text))
    return clean_statement(" ".join(p for p in parts if p.strip()))


def _runs(reading: Reading, requests: bool = False) -> list[tuple[int, int]]:
    """Consecutive clauses that are no question (quoted or code parts among
    them stay: "typeof null is \"object\""), in clean offsets."""
    runs: list[list[int]] = []
    previous = None

    def kept(clause) -> bool:
        return not clause.question or (requests and clause.request)

    for clause in reading.clauses:
        if kept(clause):
            if previous is not None and kept(previous) and runs:
                runs[-1][1] = clause.end
            else:
                runs.append([clause.start, clause.end])
        previous = clause
    return [(a, b) for a, b in runs if reading.text(a, b).strip(HIDDEN + " ")]


# --- the tutor's words -------------------------------------------------------------------------


def content_words(doc: Analysed, span: Span | None = None, limit: int | None = TOPIC_MAX_TOKENS) -> list[str]:
    tokens = doc.tokens if span is None else doc.tokens_in(span)
    words = ordered_unique(t.text for t in tokens if is_content(t))
    return words[:limit] if limit is not None else words


def _clause_at(doc: Analysed, position: int) -> Span:
    return next((c for c in doc.clauses if c.start <= position < c.end), Span(0, len(doc.norm)))


def _sentence_at(doc: Analysed, position: int) -> Span:
    return next((s for s in doc.sentences if s.start <= position < s.end), Span(0, len(doc.norm)))


def original_of(reference: Analysed, clause: Span) -> str:
    sentence = _sentence_at(reference, clause.start)
    return cut_text(clean_statement(reference.text_of(sentence)), ORIGINAL_MAX_CHARS)


def refer(
    own_topic: list[str],
    quantity: Quantity | None,
    reference: Analysed | None,
    corrected: str,
    *,
    compose=True,
):
    """The tutor's statement a correction refers to, its topic, and the
    corrected statement. A correction with words of its own keeps its topic;
    one without takes the topic of the tutor's clause holding a number, and
    (``compose``) its statement is that clause with the new number -- not
    when the student's words say it whole ("120 min, not 90")."""
    if reference is None:
        return "", own_topic, corrected
    if own_topic:
        best, best_overlap = None, 0
        for clause in reference.clauses:
            overlap = len(set(content_words(reference, clause)) & set(own_topic))
            if overlap > best_overlap:
                best, best_overlap = clause, overlap
        if best is None:
            return "", own_topic, corrected
        return original_of(reference, best), own_topic, corrected
    if quantity is None:
        return "", own_topic, corrected
    numbered = [
        (clause, stated, span)
        for clause in reference.clauses
        for stated, span in quantities(reference, clause)
    ]
    if not numbered:
        return "", own_topic, corrected
    same_unit = [n for n in numbered if n[1].unit == quantity.unit and not n[1].same_as(quantity)]
    clause, stated, span = (same_unit or numbered)[0]
    topic = content_words(reference, clause)
    # Keep the tutor's unit unless the correction names another one ("90
    # minutes" keeps its words when the student writes "120 min").
    new_unit = bool(quantity.unit) and bool(stated.unit) and quantity.unit != stated.unit
    value = quantity.number_text + (quantity.unit if new_unit else "")
    end = span.end if new_unit else span.start + len(_number_at(reference, span))
    if not compose:
        return original_of(reference, clause), topic, corrected
    composed = reference.original[clause.start : span.start] + value + reference.original[end : clause.end]
    return original_of(reference, clause), topic, clean_statement(composed)


def _number_at(doc: Analysed, span: Span) -> str:
    match = re.match(r"\d+(?:,\d{3})*(?:\.\d+)?", doc.norm[span.start : span.end])
    return match.group() if match else ""


def clause_topic(doc: Analysed, position: int) -> list[str]:
    """The topic of the clause stating the value at ``position``."""
    return content_words(doc, _clause_at(doc, position))
