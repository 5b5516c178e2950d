"""Text rules of the lessons app: normalization, token estimates, symptom
matching and near-duplicate shingles (SPEC §6, §11).

Chinese has no spaces, so every rule here treats CJK characters on their own:
a token estimate counts each as one token (tiktoken would download its
encodings at first use and fail offline, SPEC §11), symptom matching finds a
Chinese phrase anywhere while a Latin one must start and end at a word
boundary, and shingles pair adjacent CJK characters.
"""

from __future__ import annotations

import math
import re

from tutor.kernel.tags import clean_tag, folded

# Ideographs, kana, hangul, bopomofo: one token each, matched without word boundaries.
CJK_RANGES = "\u3040-\u30ff\u3100-\u312f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
# CJK punctuation and full-width forms also cost about one token each.
CJK_PUNCTUATION_RANGES = "\u3000-\u303f\uff00-\uffef"
_CJK_CHAR = re.compile(f"[{CJK_RANGES}]")
_WIDE_CHAR = re.compile(f"[{CJK_RANGES}{CJK_PUNCTUATION_RANGES}]")
# A word: letters, digits and underscores that are not CJK (Python counts CJK
# characters as word characters, so ``\w`` alone would glue them to Latin words).
_WORD_CHAR = f"[^\\W{CJK_RANGES}]"
_WORD = re.compile(f"{_WORD_CHAR}+")
_TOKEN = re.compile(f"{_WORD_CHAR}+|[{CJK_RANGES}]")
_CJK_RUN = re.compile(f"[{CJK_RANGES}]+")
BOUNDARY = "\x01"  # marks word edges in ``marked`` text; never part of normalized text

# Latin-script text averages about four characters per token.
CHARS_PER_TOKEN = 4


def normalize(text: str) -> str:
    """Compatibility-folded (full-width ``ＣＩ`` is ``ci``), case-folded, single-spaced:
    a tag's key (``tutor.kernel.tags.tag_key``) without ``BOUNDARY``, for symptoms and texts too."""
    return clean_tag(folded(text).replace(BOUNDARY, ""))


def tag_pairs(tags) -> list[str]:
    """Every two of ``tags`` (normalized, distinct) as one key: the two in
    sorted order joined by ``BOUNDARY``, which no normalized text contains.
    A lesson and a task sharing ``n`` tags share ``n·(n−1)/2`` pairs."""
    ordered = sorted(set(tags))
    return [f"{a}{BOUNDARY}{b}" for i, a in enumerate(ordered) for b in ordered[i + 1 :]]


# A tag or symptom as stored and shown: stripped and single-spaced, case kept.
clean = clean_tag


def estimate_tokens(text: str) -> int:
    """Tokens of ``text`` as a model would count them, roughly: one per CJK
    character or full-width mark, one per four other characters."""
    wide = len(_WIDE_CHAR.findall(text))
    return max(1, wide + math.ceil((len(text) - wide) / CHARS_PER_TOKEN))


def render_lesson(title: str, body: str) -> str:
    """A lesson as the tutor prompt shows it; its ``tokens`` are estimated from this."""
    return f"{title}\n{body}"


# --- symptom matching ------------------------------------------------------------------


def text_tokens(text: str) -> set[str]:
    """The words and single CJK characters of normalized ``text``: a symptom's
    anchor occurs among them whenever the symptom occurs in the text."""
    return set(_TOKEN.findall(text))


def symptom_anchor(phrase: str) -> str:
    """The token of normalized ``phrase`` that recall looks up: its longest
    word (the rarest, most likely), else its first CJK character; "" when it
    has neither (such a symptom is refused on input)."""
    words = _WORD.findall(phrase)
    if words:
        return max(words, key=len)
    cjk = _CJK_CHAR.search(phrase)
    return cjk.group(0) if cjk else ""


def marked(text: str) -> str:
    """Normalized ``text`` with every word wrapped in BOUNDARY marks, so that
    "phrase occurs at word boundaries" becomes a plain substring test -- the
    same one in Python and in SQL (``instr``/``strpos``): "escape" is
    ``\x01escape\x01``, which "unescaped" (``\x01unescaped\x01``) does not
    contain while "escape-d" (``\x01escape\x01-\x01d\x01``) does. CJK
    characters get no marks: a Chinese phrase matches anywhere."""
    return _WORD.sub(lambda m: f"{BOUNDARY}{m.group(0)}{BOUNDARY}", text.replace(BOUNDARY, ""))


def phrase_in(phrase: str, text: str) -> bool:
    """Whether normalized ``phrase`` occurs in normalized ``text``: a Latin
    word at either end must be whole ("escape" is not in "unescaped"), CJK
    needs no boundary ("连接超时" is in "数据库连接超时了")."""
    return bool(phrase) and marked(phrase) in marked(text)


# --- near duplicates ---------------------------------------------------------------------


def shingles(text: str) -> list[str]:
    """Words, and adjacent-character pairs of CJK runs (a lone CJK character
    stands for itself), of normalized ``text``, sorted and unique."""
    norm = normalize(text)
    found = set(_WORD.findall(norm))
    for run in _CJK_RUN.findall(norm):
        found.update([run] if len(run) == 1 else (run[i : i + 2] for i in range(len(run) - 1)))
    return sorted(found)


def jaccard(a: set[str] | list[str], b: set[str] | list[str]) -> float:
    a, b = set(a), set(b)
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)
