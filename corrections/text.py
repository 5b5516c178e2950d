"""Reading correction text: segmentation, numbers, topics, statement keys
(SPEC §5). Details: docs/architecture.md, Correction detection.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cached_property

import rjieba

from corrections.vocabulary import CJK_STOP_WORDS, LATIN_STOP_WORDS, TRIGGER_WORDS, UNITS

CJK_RANGE = "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_TOKEN = re.compile(
    rf"(?P<cjk>[{CJK_RANGE}]+)"
    r"|(?P<num>(?<![a-z0-9])\d+(?:,\d{3})*(?:\.\d+)?)"
    r"|(?P<word>[a-z][a-z0-9]*(?:'[a-z]+)*)"
)
# A number and the unit right after it: "630mm", "630 mm", "630毫米", "85%".
_UNIT_ALTERNATION = "|".join(re.escape(u) for u in sorted(UNITS, key=len, reverse=True))
_QUANTITY = re.compile(
    r"(?<![a-z0-9.])(?P<number>\d+(?:,\d{3})*(?:\.\d+)?)\s?"
    rf"(?P<unit>(?:{_UNIT_ALTERNATION})(?![a-z]))?"
)
_SENTENCE_END = re.compile(r"[。!?;\n]+|\.(?=\s|$)")
_CLAUSE_END = re.compile(r"[。!?;\n,、:()\[\]]+|\.(?=\s|$)")
_SPACE = re.compile(r"\s+")
_EDGE_PUNCTUATION = " \t\r\n,.;:!?、。，；：！？-—~…\"'()[]"
# Redaction markers ("[REDACTED:email]", tutor.kernel.redaction.marker) are not words
# of a topic, and a stored statement keeps them whole. Masking also takes a
# marker that lost its closing bracket (a model's reply may hold one): its
# words must never become topic tokens either.
_REDACTION_MARKER = re.compile(r"\[redacted:[a-z_]+\]?")
_WHOLE_MARKER = re.compile(r"\[REDACTED:[A-Za-z_]+\]", re.IGNORECASE)

# Canonical spelling of units, so "630 毫米" and "630mm" are the same statement.
UNIT_ALIASES = {
    "毫米": "mm",
    "厘米": "cm",
    "公里": "km",
    "千米": "km",
    "米": "m",
    "千克": "kg",
    "公斤": "kg",
    "克": "g",
    "毫升": "ml",
    "升": "l",
    "℃": "°c",
    "摄氏度": "°c",
    "度": "°",
    "percent": "%",
}
TOPIC_MAX_TOKENS = 8  # a topic names what a statement is about, not every word of it
TOKEN_MAX_CHARS = 64  # the column of the token tables


def normalize(text: str) -> str:
    """``text`` with full-width forms as ASCII, curly quotes straight and every
    character in lower case, character for character: offsets into the
    result are offsets into ``text``."""
    if text.isascii():  # no full-width form, no curly quote, and each letter lowers to one
        return text.lower()
    out = []
    for ch in text:
        code = ord(ch)
        if 0xFF01 <= code <= 0xFF5E:
            ch = chr(code - 0xFEE0)
        elif ch == "\u3000":
            ch = " "
        elif ch in "\u2018\u2019\u02bc":
            ch = "'"
        elif ch in "\u201c\u201d":
            ch = '"'
        low = ch.lower()
        out.append(low if len(low) == 1 else ch)
    return "".join(out)


@dataclass(frozen=True)
class Token:
    text: str
    kind: str  # "cjk" | "num" | "word"
    start: int
    end: int


@dataclass(frozen=True)
class Span:
    start: int
    end: int


@dataclass(frozen=True)
class Quantity:
    """A number with its unit, as written in one statement."""

    number: Decimal
    unit: str

    @property
    def number_text(self) -> str:
        text = format(self.number.normalize(), "f")
        return text[:-2] if text.endswith(".0") else text

    def same_as(self, other: Quantity) -> bool:
        # "630" and "630mm" say the same; "630mm" and "630cm" do not.
        return self.number == other.number and (not self.unit or not other.unit or self.unit == other.unit)


def tokenize(norm: str, *, search: bool = False) -> list[Token]:
    """Tokens of normalised text. ``search`` also yields the shorter words
    inside long Chinese ones ("降雨量" → 降雨, 雨量, 降雨量): the query side of
    a relevance lookup, so a fact stored as 降雨量 is found from 降雨."""
    tokens: list[Token] = []
    for match in _TOKEN.finditer(norm):
        kind = match.lastgroup
        if kind != "cjk":
            tokens.append(Token(match.group(), kind, match.start(), match.end()))
            continue
        position = match.start()
        for word in rjieba.cut(match.group()):
            tokens.append(Token(word, "cjk", position, position + len(word)))
            position += len(word)
        if search:
            tokens.extend(
                Token(word, "cjk", match.start(), match.end())
                for word in rjieba.cut_for_search(match.group())
                if len(word) >= 2
            )
    return tokens


def is_content(token: Token) -> bool:
    """A word that can name a topic: no number, unit, stop word or trigger."""
    text = token.text
    if token.kind == "num" or text in UNITS or text in TRIGGER_WORDS or len(text) > TOKEN_MAX_CHARS:
        return False
    if token.kind == "cjk":
        return len(text) >= 2 and text not in CJK_STOP_WORDS
    return len(text) >= 2 and text not in LATIN_STOP_WORDS


def ordered_unique(items) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item, None)
    return list(seen)


def jaccard(a, b) -> float:
    a, b = set(a), set(b)
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def topic_key(tokens) -> str:
    """The stored key of a topic: its tokens sorted (a hash when that is too long)."""
    key = "|".join(sorted(set(tokens)))
    if len(key) > 200:
        key = "h:" + hashlib.sha256(key.encode()).hexdigest()
    return key


def text_key(text: str) -> str:
    """A statement's text without case, spaces or punctuation, hashed (a
    marker's kind stays in it: "[REDACTED:email]" reads "redactedemail")."""
    norm = normalize(text)
    compact = "".join(ch for ch in norm if ch.isalnum())
    return hashlib.sha256(compact.encode()).hexdigest()[:32]


def mask_markers(text: str, fill: str = " ") -> str:
    """``text`` (normalised) with each redaction marker overwritten by ``fill``,
    character for character: offsets stay, and nothing reads inside a marker."""
    return _REDACTION_MARKER.sub(lambda m: fill * len(m.group()), text)


def _marker_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _WHOLE_MARKER.finditer(text)]


def clean_statement(text: str) -> str:
    """Spaces collapsed and stray punctuation trimmed at both ends (what is
    left after a trigger word is cut out of "不对，…") -- never the brackets of
    a redaction marker at either end ("是 [REDACTED:email]" keeps its "]")."""
    text = _SPACE.sub(" ", text)
    spans = _marker_spans(text)
    start, end = 0, len(text)
    while start < end and text[start] in _EDGE_PUNCTUATION and not any(a == start for a, _ in spans):
        start += 1
    while start < end and text[end - 1] in _EDGE_PUNCTUATION and not any(b == end for _, b in spans):
        end -= 1
    return text[start:end]


def cut_text(text: str, limit: int) -> str:
    """``text`` within ``limit`` characters, "…" marking a cut; a cut never
    falls inside a redaction marker (the marker goes whole)."""
    if len(text) <= limit:
        return text
    end = limit - 1
    for a, b in _marker_spans(text):
        if a < end < b:
            end = a
            break
    return text[:end].rstrip() + "…"


class Analysed:
    """One text, read once: normalised form, tokens, sentences, quantities."""

    def __init__(self, text: str):
        self.original = text
        self.norm = normalize(text)

    @cached_property
    def masked(self) -> str:
        """The normalised text with markers overwritten by "_": a marker's
        "[", ":" and "]" end no clause, its words are no trigger."""
        return mask_markers(self.norm, "_")

    @cached_property
    def tokens(self) -> list[Token]:
        return tokenize(mask_markers(self.norm))

    @cached_property
    def sentences(self) -> list[Span]:
        return _split(self.masked, _SENTENCE_END)

    @cached_property
    def clauses(self) -> list[Span]:
        return _split(self.masked, _CLAUSE_END)

    def is_question(self, sentence: Span) -> bool:
        return self.norm[sentence.start : sentence.end].rstrip().endswith("?")

    def text_of(self, span: Span) -> str:
        return self.original[span.start : span.end]

    def tokens_in(self, span: Span) -> list[Token]:
        return [t for t in self.tokens if t.start >= span.start and t.end <= span.end]

    def quantities_in(self, span: Span | None = None) -> list[tuple[Quantity, Span]]:
        start, end = (span.start, span.end) if span else (0, len(self.norm))
        found = []
        for match in _QUANTITY.finditer(self.norm, start, end):
            try:
                number = Decimal(match.group("number").replace(",", ""))
            except InvalidOperation:  # pragma: no cover - the pattern only matches digits
                continue
            unit = match.group("unit") or ""
            found.append((Quantity(number, UNIT_ALIASES.get(unit, unit)), Span(match.start(), match.end())))
        return found


def _split(norm: str, pattern: re.Pattern[str]) -> list[Span]:
    spans, start = [], 0
    for match in pattern.finditer(norm):
        if norm[start : match.end()].strip():
            spans.append(Span(start, match.end()))
        start = match.end()
    if norm[start:].strip():
        spans.append(Span(start, len(norm)))
    return spans


def topic_tokens(text: str) -> list[str]:
    """The topic of a statement: its content tokens in order, at most
    ``TOPIC_MAX_TOKENS`` ("北京年均降雨量约为 500mm。" → 北京, 年均, 降雨量)."""
    return ordered_unique(t.text for t in Analysed(text).tokens if is_content(t))[:TOPIC_MAX_TOKENS]


def query_tokens(text: str, limit: int) -> list[str]:
    """Content tokens of a tutor request's text for the relevance lookup
    (search mode: the short words inside long ones too), at most ``limit``."""
    norm = mask_markers(normalize(text))
    return ordered_unique(t.text for t in tokenize(norm, search=True) if is_content(t))[:limit]


def _pairs(unique: list[str]) -> list[str]:
    # Tokens never hold white space (a topic reads them joined by spaces), so
    # "a b" names one pair and no single token.
    return [f"{a} {b}" for a, b in itertools.combinations(unique, 2)]


def token_keys(tokens) -> list[str]:
    """A fact's relevance keys (``FactKey``): every pair of its distinct
    tokens, sorted, or its only token -- the smallest sets whose presence in
    a text makes it relevant at CORRECTIONS_INJECT_MIN_TOKENS = 2 (SPEC §5).
    (A topic that repeats one token needs two hits and can never have them:
    no key.)"""
    tokens = list(tokens)
    return tokens if len(tokens) == 1 else _pairs(sorted(set(tokens)))


def text_keys(tokens) -> list[str]:
    """The keys a text with these tokens contains: its tokens and their pairs.
    The facts holding one of them are exactly the facts it contains two
    tokens of, and the one-token facts it contains: every fact relevant at
    INJECT_MIN_TOKENS = 2, and a superset of those relevant at a higher one."""
    unique = sorted(set(tokens))
    return unique + _pairs(unique)
