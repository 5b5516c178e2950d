"""Reading a student's message as a reader does (SPEC §5: "triggers are
matched on the text"): the student's own words, as one clean text, in
sentences and clauses. Details: docs/architecture.md, Correction detection.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from dataclasses import dataclass
from functools import cached_property

from corrections.text import CJK_RANGE, Analysed, Span
from tutor.kernel.invisible import DEFAULT_IGNORABLE

HIDDEN = "\x02"  # stands for text that is not the student's own words
_INVISIBLE = re.compile(DEFAULT_IGNORABLE)

# --- what is not the student's own words ------------------------------------------------

_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_INLINE_CODE = re.compile(r"`[^`\n]+`")
_QUOTED = re.compile(
    r'"[^"\n]{1,400}"'
    r"|「[^」\n]{0,400}」|『[^』\n]{0,400}』"
    # Single quotes only where they open and close a quotation, never an
    # apostrophe inside a word ("don't", "sara's").
    r"|(?<![a-z0-9])'[^'\n]{2,400}'(?![a-z0-9])"
)
# Lines that are code, a log or a quotation rather than the student's sentence.
_CODE_OR_LOG_LINE = re.compile(
    r"^(?:"
    r"\s*>"  # a quoted line, a REPL prompt
    r"|(?: {4,}|\t)\S"  # an indented block, a stack frame
    r"|\s*(?:def|class|elif|except|import|function)\b"
    r"|\s*from \S+ import\b"
    r"|\s*(?:const|let|var) [\w$]+ ?="
    r"|\s*(?:if|for|while) ?\("
    r"|\s*(?://|#) "
    r"|\s*\$ "
    r"|\s*traceback\b"
    r"|\s*file \""
    r"|\s*[\w.]*(?:error|exception|warning)\s*:"  # "Error: …", "AssertionError: …"
    r"|\s*(?:warn|info|debug|fatal|critical)\s*[:\]]"
    r"|\s*\S+\.\w+:\d+"  # "tests/test_add.py:4: …"
    r"|.*[;{}]\s*$"
    r"|.*\):\s*$"
    r"|.*\)\s*(?://|#)"
    r")"
)
# A runner's status word, as the runner writes it (upper case), or pytest's "E   ".
_LOG_WORDS = re.compile(r"\b(?:FAIL|FAILED|PASS|PASSED|ERROR|WARN)\b|^E {2,}")


# What a program printed, reported in the student's words ("the error message
# is …", "it prints …", "报错信息是 …"): the rest of the line is its output.
_REPORTED_OUTPUT = re.compile(
    r"(?<![a-z])(?:(?:the )?(?:error(?: message)?|output|log|console|terminal|compiler|linter|grader|checker"
    r"|pytest|jest|eslint|mypy|ci|stack ?trace|traceback|test runner)(?: output)?"
    r" (?:says|said|prints|printed|shows|showed|outputs|reports|reported|throws|threw|logs|logged|is)"
    r"|it (?:prints|printed|says|said|shows|showed|outputs|logs|logged|throws|threw))\b ?:?"
    r"|(?:报错|错误信息|报错信息|错误提示|提示信息|输出|日志|控制台|终端|编译器)(?:信息)?(?:是|说|显示|写着|为)?[:：]"
    r"|(?:报错|错误|提示)信息(?:是|为)|打印(?:出来)?的?是|(?:它|程序|控制台|终端)(?:说|显示|打印)(?:了|的是)?"
)


def _hidden_ranges(original: str, norm: str) -> list[tuple[int, int]]:
    ranges = [m.span() for m in _FENCE.finditer(norm)]
    position = 0
    for line in original.split("\n"):
        end = position + len(line)
        low = norm[position:end]
        if line.strip() and (_CODE_OR_LOG_LINE.match(low) or _LOG_WORDS.search(line)):
            ranges.append((position, end))
        else:
            reported = _REPORTED_OUTPUT.search(low)
            if reported and reported.end() < len(low):
                ranges.append((position + reported.end(), end))
        position = end + 1
    for pattern in (_INLINE_CODE, _QUOTED):
        ranges.extend(m.span() for m in pattern.finditer(norm))
    ranges.sort()
    merged: list[list[int]] = []
    for start, end in ranges:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


# --- sentences, clauses, questions ---------------------------------------------------------

_SENTENCE_END = re.compile(r"[。!?;！？；\n]+|\.(?= |$)")
_CJK = f"[{CJK_RANGE}]"
_CLAUSE_END = re.compile(rf"[,，、:：]+| ?(?:—|--| - ) ?|(?<={_CJK}) (?! )|(?<! ) (?={_CJK})")
_FILLER = r"(?:(?:so|wait|but|and|ok|okay|hmm+|um+|uh+|then|also|oh|ah+|sorry|btw|like|lol|well),? )*"
_AUX = (
    r"(?:is|are|was|were|am|do|does|did|can|could|would|will|should|shall|may|might|have|has|had"
    r"|isn'?t|aren'?t|wasn'?t|weren'?t|doesn'?t|didn'?t|can'?t|couldn'?t|wouldn'?t|won'?t|shouldn'?t)"
)
_SUBJECT = (
    r"(?:i|you|u|we|they|it|this|that|these|those|there|he|she|the|a|an|my|your|our|his|her|its|one|any)"
)
_EN_QUESTION = re.compile(
    rf"^{_FILLER}(?:"
    # A question word opens a question, not a clause of time or place ("when reviewing my code, …").
    r"(?:what|whats|what's|why|how|hows|how's|when|where|which|who|whose|whom|wat|wut)\b(?! \w+ing\b)"
    r"|(?:isn'?t|aren'?t)\b|(?:doesn'?t|didn'?t|wasn'?t|don'?t) (?:it|that|this|there|you|u|he|she|they|the"
    r"|we)\b"
    # "do the tests first" tells; "do i have to …" asks.
    r"|do (?:i|you|u|we|they)\b"
    rf"|(?!(?:can|could|would|will) (?:you|u) (?!think|know|tell me if|see))(?!do\b){_AUX} {_SUBJECT}\b"
    r")"
)
# A request in the form of a question is no question: "can you stop using emojis".
_ZH_QUESTION_WORD = re.compile(
    r"^(?:那么?|所以|等下|等等|请问|但是|可是|可|还有)?(?:什么|怎么|为什么|为啥|哪|如何|谁|多少|几|到底|啥|是否)"
)
_ZH_A_NOT_A = re.compile(
    r"(?<![说看问试测知确判决])"
    r"(?:是不是|能不能|要不要|可不可以|有没有|会不会|(?<!不)对不对|行不行|用不用|好不好|该不该|算不算|需不需要)"
)
# "不对吧" doubts the tutor; "对吧" asks.
_ZH_QUESTION = re.compile(r"吗|呢(?:[啊呀]?$)|来着$|是.{1,20}还是|(?<!不)(?:对吧|是吧)$")
# A question word inside a clause asks, unless it is what the clause tells of
# ("先解释bug在哪", "不知道为什么").
_ZH_WH = re.compile(r"怎么|为什么|为啥|如何|(?:什么|在哪|哪里|哪个|多少)$")
_ZH_TELLS_OF = re.compile(r"解释|说明|知道|明白|懂|告诉|问|看看|确认|检查|弄清楚|搞清楚|想想")
_TAG_QUESTION = re.compile(r"^(?:right|correct|yeah|no|isn'?t it|is it|huh|or not|对吧|是吧|对不对|是不是)$")


# A wish in the form of a question: "can you stop using emojis", "回答能不能短一点".
REQUEST = re.compile(
    r"^(?:(?:please|pls|plz|so|and|also|next time|from now on) )*(?:can|could|would|will) (?:you|u)\b"
    r"|能不能|可不可以|可以.{0,6}[点些]|能.{0,6}[点些]"
)


@dataclass(frozen=True)
class Clause:
    start: int  # in ``clean``
    end: int
    sentence: int  # index of its sentence
    question: bool
    request: bool = False  # a question that asks the tutor to do something


class Reading:
    """A message read as its author's own words (module docstring)."""

    def __init__(self, text: str, doc: Analysed | None = None):
        self.doc = doc or Analysed(text)
        norm = self.doc.masked
        hidden = _hidden_ranges(self.doc.original, norm)
        chars, positions = [], []
        h, i, n = 0, 0, len(norm)
        while i < n:
            if h < len(hidden) and i == hidden[h][0]:
                chars.append(HIDDEN)
                positions.append(i)
                i = hidden[h][1]
                h += 1
                continue
            ch = norm[i]
            if ch.isspace():
                # A run of white space reads as one space, or one line break.
                if chars and chars[-1] not in " \n":
                    chars.append("\n" if ch == "\n" else " ")
                    positions.append(i)
                elif ch == "\n" and chars and chars[-1] == " ":
                    chars[-1] = "\n"
            elif not _INVISIBLE.match(ch):
                chars.append(ch)
                positions.append(i)
            i += 1
        self.clean = "".join(chars).strip(" \n")
        offset = len(chars) - len("".join(chars).lstrip(" \n"))
        self._positions = positions[offset : offset + len(self.clean)]
        self._hidden = hidden

    def span(self, start: int, end: int) -> Span:
        """A clean range as a span of the message (and of ``doc.norm``)."""
        if start >= end:
            at = self._positions[start] if start < len(self._positions) else len(self.doc.norm)
            return Span(at, at)
        last = self._positions[end - 1]
        stop = last + 1
        for a, b in self._hidden:
            if a == last:
                stop = b
                break
        return Span(self._positions[start], stop)

    @cached_property
    def sentences(self) -> list[tuple[int, int]]:
        return _split(self.clean, _SENTENCE_END, 0, len(self.clean))

    @cached_property
    def clauses(self) -> list[Clause]:
        found = []
        for index, (start, end) in enumerate(self.sentences):
            parts = _split(self.clean, _CLAUSE_END, start, end)
            text = self.clean[start:end]
            # An English question opens its sentence; inside one, "where …" is a clause.
            asked = "?" in self.clean[end : end + 3].split(" ")[0]
            whole = asked or bool(_EN_QUESTION.match(text))
            last = self.clean[parts[-1][0] : parts[-1][1]].strip(" .!。！") if parts else ""
            whole = whole or (len(parts) > 1 and bool(_TAG_QUESTION.match(last)))
            for a, b in parts:
                question = whole or _is_question(self.clean[a:b])
                request = question and bool(REQUEST.search(self.clean[a:b]) or REQUEST.search(text))
                found.append(Clause(a, b, index, question, request))
        return found

    def text(self, start: int, end: int) -> str:
        return self.clean[start:end]

    @cached_property
    def _clause_starts(self) -> list[int]:
        return [c.start for c in self.clauses]

    @cached_property
    def _sentence_starts(self) -> list[int]:
        return [s for s, _ in self.sentences]

    def clause_at(self, position: int) -> Clause | None:
        i = bisect_right(self._clause_starts, position) - 1
        return self.clauses[i] if i >= 0 and position < self.clauses[i].end else None

    def sentence_at(self, position: int) -> tuple[int, int]:
        i = bisect_right(self._sentence_starts, position) - 1
        return self.sentences[i] if i >= 0 else (0, len(self.clean))

    def sentence_start(self, position: int) -> int:
        return self.sentence_at(position)[0]

    @property
    def statements(self) -> list[Clause]:
        """The clauses that state something: no question, something visible."""
        return [c for c in self.clauses if not c.question and self.clean[c.start : c.end].strip(HIDDEN + " ")]

    def sentence_end(self, position: int) -> int:
        return self.sentence_at(position)[1]


def _is_question(text: str) -> bool:
    text = text.strip(" .!。！~")
    if text.endswith(("?", "？")):
        return True
    if _ZH_QUESTION_WORD.match(text) or _ZH_A_NOT_A.search(text) or _ZH_QUESTION.search(text):
        return True
    wh = _ZH_WH.search(text)
    return wh is not None and not _ZH_TELLS_OF.search(text, 0, wh.start())


def _split(text: str, pattern: re.Pattern[str], start: int, end: int) -> list[tuple[int, int]]:
    spans, position = [], start
    for match in pattern.finditer(text, start, end):
        if text[position : match.start()].strip(" "):
            spans.append((position, match.start()))
        position = match.end()
    if text[position:end].strip(" "):
        spans.append((position, end))
    return [_trim(text, a, b) for a, b in spans]


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start] == " ":
        start += 1
    while end > start and text[end - 1] == " ":
        end -= 1
    return start, end
