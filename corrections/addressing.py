"""Which cues of a message correct the tutor (SPEC §5; issue 36): the guards
of ``corrections.detection``'s rule 1 and the conditions of its weak cues.

- A cue is about whoever the student last named before it in its sentence
  (``cues.person_marks``): the tutor ("you're wrong"), the student ("my test
  was wrong"), someone else ("my friend … he's wrong"), or -- naming no one
  -- the tutor's answer ("that's wrong").
- No cue counts in a question, in a sentence of confusion or hope, or in a
  message that opens by agreeing and turns nowhere.
- Weak cues (an assertion, "X, not Y", a cited source, a curt "no") count
  only in reply to a tutor's statement, and on its topic: words of the
  tutor's message in the cue's sentence, the tutor's Y replaced by the
  student's X, or a bare value after the cue ("actually its canberra").
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import cached_property

from corrections import cues
from corrections.reading import HIDDEN, Reading
from corrections.statements import has_content
from corrections.text import Analysed, normalize, query_tokens

QUERY_MAX_TOKENS = 200  # words of one text compared for a shared topic


class Reference:
    """The tutor's message a student's reply answers."""

    def __init__(self, text: str):
        self.doc = Analysed(text)
        self.reading = Reading(text, self.doc)

    @cached_property
    def states(self) -> bool:
        """Whether it states something: a sentence with content, or code."""
        reading = self.reading
        if HIDDEN in reading.clean:
            return True
        return any(has_content(self.doc, reading.span(c.start, c.end)) for c in reading.statements)

    @cached_property
    def asks(self) -> bool:
        """Whether it only asks: a reply answers the question, it corrects nothing."""
        return not self.states and any(c.question for c in self.reading.clauses)

    @cached_property
    def words(self) -> frozenset[str]:
        return frozenset(stems(self.doc.norm))

    def says(self, word: str) -> bool:
        """Whether the tutor's text holds ``word`` as written (a word, a number, a name)."""
        word = word.strip(".,()")
        if not word:
            return False
        if word.isascii():
            return re.search(rf"(?<![a-z0-9_]){re.escape(word)}(?![a-z0-9_])", self.reading.clean) is not None
        return word in self.reading.clean


_CODE_WORDS = re.compile(r"\d+(?:\.\d+)?|[=!<>]=+|=>|[\w.]+\(\)")


def stems(text: str) -> set[str]:
    """Topic words of ``text``: its content words (Latin ones without a plural
    or past ending), numbers and operators or calls ("===", "sort()")."""
    found = set()
    for token in query_tokens(text, QUERY_MAX_TOKENS):
        if token.isascii() and len(token) > 4 and token.endswith(("s", "d")):
            token = token[:-1]
        found.add(token)
    found.update(m.group() for m in _CODE_WORDS.finditer(normalize(text)))
    return found


@dataclass(frozen=True)
class Cue:
    start: int  # in the reading's clean text
    end: int
    kind: str  # negation | assertion | contrast | source
    cut: bool  # taken out of the statement


CUES_MAX = 64  # cues of one kind read in one message: enough for any sentence a person writes


def in_clauses(clauses, pattern: re.Pattern[str], clean: str):
    starts = [c.start for c in clauses]
    found = 0
    for match in pattern.finditer(clean):
        i = bisect_right(starts, match.start()) - 1
        if i >= 0 and match.start() < clauses[i].end:
            yield match
            found += 1
            if found >= CUES_MAX:
                return


def in_statements(reading: Reading, pattern: re.Pattern[str]):
    return in_clauses(reading.statements, pattern, reading.clean)


def agrees(clean: str) -> bool:
    """The message opens by agreeing and turns nowhere ("yes exactly, 201 not 200")."""
    return bool(cues.AGREEMENT.match(clean)) and not (
        cues.CONTRAST.search(clean) or cues.CONTRAST_ZH.search(clean)
    )


_NARRATOR = re.compile(r"^(?:i|we|i'?m|im|i'?ve|我|我们)(?![a-z'])(?!希望|更喜欢|喜欢|习惯|想要)")


def narrates(reading: Reading, position: int) -> bool:
    """The clause tells what the student did ("i ran the tests first")."""
    clause = reading.clause_at(position)
    return clause is not None and bool(_NARRATOR.match(reading.clean[clause.start : clause.end]))


def preferences(reading: Reading) -> list:
    """Preference cues a reader takes as a wish about the tutor's answers."""
    clean, found = reading.clean, []
    for match in cues.PREFERENCE.finditer(clean):
        clause = reading.clause_at(match.start())
        if clause is None or not clean[clause.start : clause.end].strip(HIDDEN + " "):
            continue
        if clause.question and not clause.request:
            continue
        if (match.group("standing") or match.group("standing_zh")) and narrates(reading, match.start()):
            continue  # "we were told never to use var": what happened, not a wish
        if person_at(reading, match.start()) == cues.OTHER:
            continue
        found.append(match)
    return found


def confused(reading: Reading, position: int) -> bool:
    """The sentence at ``position`` speaks of confusion or hope."""
    cache = reading.__dict__.setdefault("confused", {})
    start, end = reading.sentence_at(position)
    if start not in cache:
        cache[start] = cues.CONFUSION.search(reading.clean, start, end) is not None
    return cache[start]


_JOINS = re.compile(
    r"(?<![a-z])(?:and|but|so|then|because|since|while)(?![a-z])|但是|而且|然后|所以|因为|不过|可是|结果"
)


def person_at(reading: Reading, position: int, *, claim: bool = False) -> str | None:
    """Whom the student last named in the sentence before ``position``.
    ``claim``: the cue opens a claim of its own ("i checked the course page
    and actually the deadline is …"), which the student's own words before
    it govern only inside its clause, up to a joining word."""
    marks = reading.__dict__.get("_persons")
    if marks is None:
        marks = reading.__dict__["_persons"] = cues.person_marks(reading.clean)
        reading.__dict__["_person_starts"] = [m[0] for m in marks]
    starts = reading.__dict__["_person_starts"]
    i = bisect_left(starts, position) - 1
    if i < 0 or marks[i][0] < reading.sentence_start(position):
        return None
    at, kind = marks[i]
    if claim and kind == cues.SELF:
        clause = reading.clause_at(position)
        start = clause.start if clause is not None else 0
        for join in _JOINS.finditer(reading.clean, start, position):
            start = join.end()
        if at < start:
            return None
    return kind


_YOU = re.compile(
    r"^(?:i think |i believe |i'?m pretty sure |imo )?(?:you|ur|u r|u are|your|youre|you'?re)\b|^[你您]"
)
_SELF_AFTER = re.compile(r" ?(?:i|i'?m|im|i'?ve|ive|we|my|我|我们)(?![a-z'])")


def _about_the_tutor(
    reading: Reading, match: re.Match, *, default: str | None = None, claim: bool = False
) -> bool:
    if _YOU.match(match.group()):
        return True
    person = person_at(reading, match.start(), claim=claim) or default
    return person in (None, cues.TUTOR)


_BARE_WRONG = re.compile(rf"^(?:{cues.WRONG}|{cues.INCORRECT})$")
_BEFORE_PREDICATE = re.compile(
    r"(?:^|[ ,])(?:so|just|totally|completely|all|again|still|also|simply|definitely|kinda|is|are|was|were"
    r"|its|it'?s"
    r"|thats|that'?s|be|been|looks|seems|sounds|very|really|quite|plain|dead|wrong|incorrect|and|but|lol|hmm+"
    r"|no|nope|nah)$"
)


def _names_a_thing(reading: Reading, match: re.Match) -> bool:
    """A lone "wrong" after a word that is no subject or adverb is said of a
    thing ("it prints wrong answer: 41"), not of the tutor ("wrong, it's 42",
    "thats just wrong")."""
    if not _BARE_WRONG.match(match.group()):
        return False
    clause = reading.clause_at(match.start())
    before = reading.clean[clause.start : match.start()].rstrip(" ")
    return bool(before) and not _BEFORE_PREDICATE.search(before)


# A weak cue followed by nothing but the value it gives ("actually its canberra",
# "实际上是堪培拉") needs no words of the tutor's topic: it answers the tutor's statement.
_VALUE_ONLY = re.compile(
    r" ?(?:(?:it'?s|its|it is|that'?s|thats|is|are|the answer is)\b ?)?[^ ]+(?: [^ ]+){0,2}$"
    r"|[是为]?[^ ]{1,6}$"
)


def _gives_a_value(clean: str, start: int, end: int) -> bool:
    return (
        bool(_VALUE_ONLY.match(clean, start, end))
        and HIDDEN not in clean[start:end]
        and cues.PERSONS.search(clean, start, end) is None
    )


def correction_cues(reading: Reading, reference: Reference | None) -> list[Cue]:
    """The cues that correct the tutor (module docstring, rules 1 and 3)."""
    clean = reading.clean
    found: list[Cue] = []
    states = reference is None or reference.states
    for match in in_statements(reading, cues.NEGATION):
        if confused(reading, match.start()) or reading.clause_at(match.start()).question:
            continue
        if match.group("attr_det") or _names_a_thing(reading, match):
            # "the wrong formula", "it prints wrong answer": only "you gave me the wrong date" says so.
            if person_at(reading, match.start()) != cues.TUTOR:
                continue
            cut = False
        else:
            cut = True
        default = cues.SELF if match.group("self_verb") else None
        if not _about_the_tutor(reading, match, default=default):
            continue
        found.append(Cue(match.start(), match.end(), "negation", cut))
    for match in in_statements(reading, cues.CORRECTION_WORDS):
        if not confused(reading, match.start()) and _about_the_tutor(reading, match):
            found.append(Cue(match.start(), match.end(), "negation", True))
    if states:
        for clause in reading.statements:
            match = cues.CURT_NO.match(clean[clause.start : clause.end])
            if match and not confused(reading, clause.start):
                found.append(Cue(clause.start, clause.start + match.end(), "negation", True))
        found.extend(_weak_cues(reading, reference))
    found.sort(key=lambda c: (c.start, c.end))
    return found


def _weak_cues(reading: Reading, reference: Reference | None) -> list[Cue]:
    """Assertions, "X, not Y" and cited sources: a correction only in reply to
    a statement of the tutor on the same topic."""
    clean, found = reading.clean, []
    for pattern, kind in ((cues.ASSERTION, "assertion"), (cues.SOURCE, "source"), (cues.X_NOT_Y, "contrast")):
        for match in in_statements(reading, pattern):
            # An assertion or a source opens its own claim; "X, not Y" is about X's subject.
            claim = kind != "contrast"
            if confused(reading, match.start()) or not _about_the_tutor(reading, match, claim=claim):
                continue
            if _SELF_AFTER.match(clean, match.end()):
                continue  # "actually i haven't pushed yet": the student's own news
            sentence = (reading.sentence_start(match.start()), reading.sentence_end(match.start()))
            if kind == "source" and clean[match.end() : sentence[1]].lstrip(" :,").startswith(HIDDEN):
                continue  # 'the readme says "run npm install"': the quotation is not the student's claim
            if kind == "contrast":
                if not _replaces(reading, match, sentence, reference):
                    continue
            elif (
                reference is not None
                and not (stems(clean[sentence[0] : sentence[1]]) & reference.words)
                and not (kind in ("assertion", "source") and _gives_a_value(clean, match.end(), sentence[1]))
            ):
                continue  # the same topic, in the sentence of the cue
            cut = kind == "assertion" and bool(match.group("cut") or match.group("cut_zh"))
            found.append(Cue(match.start(), match.end(), kind, cut))
    return found


_NO_CONTRAST_ZH = re.compile(r"^[这那很太我你他她吗呢啊的一都也就还只要会能是用]")


def _replaces(
    reading: Reading, match: re.Match, sentence: tuple[int, int], reference: Reference | None
) -> bool:
    """ "X, not Y": the student says X where the tutor said Y (or spoke of the
    same topic), and X is not the tutor's own word ("yes, 201 not 200")."""
    y = match.group("y") or match.group("y_zh") or ""
    if match.group("zh") and _NO_CONTRAST_ZH.match(y):
        return False
    if reference is None:
        return True
    clean = reading.clean
    before = clean[sentence[0] : match.start()] + " " + (match.group("x") or "")
    after = clean[match.end() : sentence[1]]
    said = reference.says(y) or bool(stems(before + " " + after) & reference.words)
    if not said:
        return False
    own = stems(before + " " + after) - stems(y)
    return bool(own - reference.words)


def cites_a_source(reading: Reading) -> bool:
    """A source named for the student's own words (seed 002: 根据, 据); once a
    correction is certain, it need not share the tutor's words to count."""
    clean = reading.clean
    for match in in_statements(reading, cues.SOURCE):
        end = reading.sentence_end(match.start())
        if not clean[match.end() : end].lstrip(" :,").startswith(HIDDEN) and _about_the_tutor(reading, match):
            return True
    return False
