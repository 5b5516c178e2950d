"""The first look at a stored message: could it be a correction at all?
(SPEC §5: detection runs on every user message; README, Benchmarks.) It runs
in the request, reads as little as it can and never less than ``detect``
needs. Details: docs/architecture.md, Correction detection.
"""

from __future__ import annotations

import re

from corrections import cues
from corrections.text import normalize
from tutor.kernel.invisible import DEFAULT_IGNORABLE

_INVISIBLE = re.compile(DEFAULT_IGNORABLE)
_DIGIT = re.compile(r"\d")
# A curt no where a clause may start (``corrections.reading``: after
# punctuation, a dash, a line break, or a space beside a Chinese character).
_CURT_NO = re.compile(
    r"(?=[nh不没])"
    r"(?:^|(?<=[,.;:!。，；：！、—\n-])|(?<=[,.;:!。，；：！、—\n-] )"
    r"|(?<=[\u3400-\u9fff] )|(?<= )(?=[不没]))(?:"
    + cues.CURT_NO.pattern.replace("^", "").replace("$", "(?=$|[\\s,.;:!。，；：！])")
    + ")"
)
_CURT_WORDS = frozenset(
    {"no", "noo", "nooo", "noooo", "nope", "nah", "nahh", "nahhh", "nop", "naw", "not", "hmm", "hmmm"}
)
# Words as ``str.split`` finds them once punctuation is space: an apostrophe
# joins ("don't" is "dont"), an opening bracket stays on the word before it
# (a function's name, "first(", is no "first").
_TO_WORDS = str.maketrans(
    {
        **dict.fromkeys('"`.,;:!?[]{}<>/\\|@#%^&*+=~$)，。；：！？、“”‘’（）《》【】—…-', " "),
        "'": "",
        "(": "( ",
    }
)
_STILL = re.compile(r"(?=[itn]|still)" + cues.STILL_FAILING.lstrip("|"))
_CJK_RUN = re.compile(r"[\u3400-\u9fff]+")
_SPACES = re.compile(r"\s+")
_SENTENCE_ENDS = re.compile(r"([.!?;。；\n]+)")


def _without_questions(text: str) -> str:
    """``text`` without the sentences that end with a question mark."""
    if "?" not in text:
        return text
    parts = _SENTENCE_ENDS.split(text)  # sentence, its end, sentence, its end, …
    kept = []
    for i in range(0, len(parts), 2):
        end = parts[i + 1] if i + 1 < len(parts) else ""
        if "?" not in end:
            kept.append(parts[i] + end)
    return " ".join(kept)


def _pairs(*rules: tuple[str, str]) -> dict[str, frozenset[str]]:
    """Word pairs, as "left words" → "right words" (space-separated)."""
    table: dict[str, set[str]] = {}
    for left, right in rules:
        for word in left.split():
            table.setdefault(word, set()).update(right.split())
    return {word: frozenset(rights) for word, rights in table.items()}


def _words(*groups) -> frozenset[str]:
    found: set[str] = set()
    for group in groups:
        found.update(group.split() if isinstance(group, str) else group)
    return frozenset(found)


_RIGHT = " ".join(cues.typo_words("right", "correct"))
_SHOULD = " ".join(cues.typo_words("should"))
_STYLE_NOUNS = (
    "answers answer replies reply responses explanations explanation examples hints code sentences text lines"
    " words language terms english"
)
_STYLE = (
    _STYLE_NOUNS
    + " solution solutions bullet bullets list lists steps step emojis emoji jargon short shorter concise"
    " brief simple simpler details detailed long longer theory commands command language english chinese"
    " mandarin"
    " format markdown tables table semicolons comments style whole full it talk"
)
_DONT_VERBS = (
    " ".join(sorted(cues.DO_VERBS)) + " giving using writing pasting showing sending explaining adding with"
)
_VERBS = " ".join(sorted(cues.PROCESS_VERBS))

# Words that are a cue by themselves, wherever they stand.
_ALONE = _words(
    cues.typo_words("wrong", "incorrect", "actually", "prefer"),
    {p + end for p in cues.typo_words("prefer") for end in ("s", "red", "ed")},
    "mistaken false outdated anymore according documented correction nope nah nahh nahhh nop naw noo nooo"
    " noooo mixing mixed backwards nonsense disagree doubt"
    " always never concise briefer clearer",
)
_PAIRS = _pairs(
    # negation
    ("not isnt", _RIGHT + " true accurate quite it how what any the"),
    ("doesnt didnt not", "work help fix change seem look sound"),
    ("thats its is way bit kinda totally this", "off"),
    ("of", "date"),
    ("old", "info"),
    ("no", "longer more full complete whole solutions"),
    ("not hmm hmmm", "really no"),
    ("think not", "so"),
    ("makes make", "no sense"),
    # assertion
    (_SHOULD, "be b"),
    ("in", "fact future english chinese mandarin bullet bullets order short"),
    ("matter", "of"),
    (_RIGHT, "answer value one way version number name command term"),
    # a cited source
    ("stated said written explained documented", "in"),
    (" ".join(cues.SOURCE_NOUNS), "says say said states state mentions lists shows explains"),
    # preference
    ("now here", "on"),
    ("going", "forward"),
    ("next", "time"),
    ("the", "future"),
    ("any", "more"),
    ("id would", " ".join(cues.typo_words("rather"))),
    (" ".join(cues.typo_words("rather")), "than"),
    ("please pls plz", "remember " + _DONT_VERBS + " stop keep always never avoid be not"),
    ("remember", "that"),
    ("keep", "it them answers replies responses your the things"),
    ("too", "long short verbose wordy detailed much many complicated"),
    ("less fewer more", _STYLE),
    ("a", "list"),
    ("example examples", "in"),
    ("want", "you shorter longer more less short simple simpler only just " + _STYLE),
    ("when", "you u"),
    ("like love", "short concise simple brief step small examples"),
    ("you u", "stop use keep always never avoid be give not answer reply respond write explain"),
    ("just", "give tell show the hints"),
    ("only", "hints"),
    ("hint hints", "only"),
    ("make", "sure"),
    ("use", "tables table bullet bullets lists list markdown headings code diagrams a more"),
    ("dont not stop", _DONT_VERBS),
    # process
    ("first", _VERBS + " the a you u step"),
    ("then", "do show write the suggest give explain fix run"),
    (
        "before",
        "you u giving suggesting showing saying telling anything answering writing changing pushing"
        " committing",
    ),
    ("step", "1 one"),
    ("this that right same", "order"),
    ("file", "by"),
    ("one", "file step"),
    ("process workflow order", _SHOULD + " must is"),
    ("start begin", "with by"),
)
# Pairs of kinds that need two words anywhere in the sentence, not side by side.
_STYLE_ADJECTIVES = (
    "short shorter brief briefer concise simple simpler fewer smaller clearer plain plainer easier"
)
_TOGETHER = (
    (frozenset({"first", "before"}), cues.PROCESS_VERBS),  # "check the error log first"
    (frozenset(_STYLE_ADJECTIVES.split()), frozenset(_STYLE_NOUNS.split())),  # "simpler words pls"
    (frozenset({"per", "based"}), cues.SOURCE_NOUNS),  # "per the pro git book"
)
# Chinese cues, by kind: the pairs and characters each needs, and its pattern.
_CJK_KINDS = (
    (
        cues.NEGATION,
        "不对 不队 太对 有误 准确 正确 不是 不行 不好 过时 过期 改了"
        " 搞错 弄错 说错 写错 算错 记错 看错 想错 讲错 答错 猜错"
        " 说反 搞反 弄反 写反 讲反 记反 反了 搞混 弄混 混淆"
        " 道理 说不 讲不 合理 有问 没用 同意 这么 这样 觉得",
        "错",
    ),
    (cues.CORRECTION_WORDS, "更正 纠正", ""),
    (_CURT_NO, "不是 没有 不行 没用 不不", ""),
    (cues.ASSERTION, "实际 其实 事实 应该 因该 才是", ""),
    (cues.X_NOT_Y, "不是 不叫", ""),
    (
        cues.SOURCE,
        "根据 依据 文档 说法 规定 大纲 标准 官网 教材 课本 讲义 课件 手册 规范 要求 写着 写的 里说 上说 上写",
        "据",
    ),
    (
        cues.PREFERENCE,
        "以后 之后 下次 现在 今后 往后 希望 喜欢 习惯 不要 中文 英文 英语 汉语 太长 啰嗦 啰唆"
        " 太多 复杂 详细 简短 短一 短点 简单 简洁 少点 多点 多举 举例 记住 叫我 重点 直接 表格 形式",
        "别",
    ),
    (cues.PROCESS, "第一 步骤 流程 顺序 文件 一步 前先 应该", "先"),
)
_WIDE_WORDS = frozenset(
    {
        "but",
        "however",
        "though",
        "although",
        "instead",
        "rather",
        "not",
        "no",
        "never",
        "nope",
        "nah",
        "dont",
        "doesnt",
        "didnt",
        "isnt",
        "wrong",
        "incorrect",
        "prefer",
        "like",
        "want",
        "please",
        "pls",
        "plz",
        "should",
        "must",
        "need",
        "always",
        "next",
        "sure",
        "actually",
        "stop",
        "keep",
    }
)
_WIDE_CHARS = frozenset("不没别请要先但错")
_EVERY_PATTERN = (
    cues.NEGATION,
    cues.CORRECTION_WORDS,
    cues.ASSERTION,
    cues.X_NOT_Y,
    cues.SOURCE,
    cues.PREFERENCE,
    cues.PROCESS,
)


def _latin_cue(tokens: list[str], words: set[str]) -> bool:
    if not _ALONE.isdisjoint(words):
        return True
    for left, right in zip(tokens, tokens[1:], strict=False):
        rights = _PAIRS.get(left)
        if rights is not None and right in rights:
            return True
    for first, second in _TOGETHER:
        if not first.isdisjoint(words) and not second.isdisjoint(words):
            return True
    if ("before" in words or "after" in words) and any(
        left in ("before", "after") and right.endswith("ing")
        for left, right in zip(tokens, tokens[1:], strict=False)
    ):
        return True  # "before guessing"
    # "in the syllabus", "from the official docs"
    return ("from" in words or "in" in words) and any(
        left in ("the", "official") and right in cues.SOURCE_NOUNS
        for left, right in zip(tokens, tokens[1:], strict=False)
    )


_CONTRAST_TOKEN = re.compile(r"[\w.()=/$<>!'-]+")
_NOT_AROUND = cues.NOT_BEFORE | cues.NOT_AFTER


def _contrast(text: str) -> bool:
    """ "X, not Y" (cues.X_NOT_Y): "not" between two words (or operators,
    calls) that are no auxiliary or adverb ("is not", "not sure" are none)."""
    tokens = [t.replace("'", "").strip(".") for t in _CONTRAST_TOKEN.findall(text)]
    for i, token in enumerate(tokens):
        if token != "not" or i == 0:
            continue
        after = tokens[i + 1 : i + 3]
        if after and after[0] in ("a", "an", "the"):
            after = after[1:]
        if tokens[i - 1] not in cues.NOT_BEFORE and after and after[0] not in _NOT_AROUND:
            return True
    return False


def _cjk_cue(text: str) -> bool:
    runs = _CJK_RUN.findall(text)
    if not runs:
        return False
    chars = set("".join(runs))
    pairs = {run[i : i + 2] for run in runs for i in range(len(run) - 1)}
    for pattern, kind_pairs, kind_chars in _CJK_KINDS_SETS:
        if pairs.isdisjoint(kind_pairs) and chars.isdisjoint(kind_chars):
            continue
        if pattern.search(text):
            return True
    return False


def is_candidate(text: str, *, wide: bool = False) -> bool:
    """Could ``text`` be a correction at all (module docstring)? ``wide``:
    any contrast, negation, preference or instruction word counts -- the
    gate of the model classifier (issue 36)."""
    norm = normalize(text)
    hidden = not norm.isascii() and _INVISIBLE.search(norm) is not None
    if hidden:
        norm = _INVISIBLE.sub("", norm)
    light = _SPACES.sub(" ", norm) if ("  " in norm or not norm.isprintable()) else norm
    stated = _without_questions(light)
    if _DIGIT.search(stated):
        return True
    if hidden:  # a word may be split or joined by what is not seen: every pattern reads it
        return any(p.search(light if p is cues.PREFERENCE else stated) for p in _EVERY_PATTERN) or bool(
            _CURT_NO.search(stated)
        )
    tokens = stated.translate(_TO_WORDS).split()
    words = set(tokens)
    if not _ANCHORS.isdisjoint(words) and _latin(stated, tokens, words):
        return True
    if not light.isascii() and _cjk_cue(stated):
        return True
    if stated != light:  # a wish may be asked: "can you stop using emojis?"
        asked = set(light.translate(_TO_WORDS).split())
        if (not _PREFERENCE_WORDS.isdisjoint(asked) or not light.isascii()) and cues.PREFERENCE.search(light):
            return True
    if wide:
        return not _WIDE_WORDS.isdisjoint(words) or not _WIDE_CHARS.isdisjoint(stated)
    return False


def _latin(stated: str, tokens: list[str], words: set[str]) -> bool:
    if _latin_cue(tokens, words):
        return True
    if "not" in words and _contrast(stated):
        return True
    if not _CURT_WORDS.isdisjoint(words) and _CURT_NO.search(stated):
        return True
    return "still" in words and _STILL.search(stated) is not None


# The words every Latin preference cue holds one of (cues.PREFERENCE).
_PREFERENCE_WORDS = _words(
    cues.typo_words("prefer", "rather"),
    "prefers preferred prefered now going forward next future here always never more anymore any"
    " remember keep too less fewer english chinese mandarin bullet bullets list examples example want"
    " when like love stop use avoid not dont just only hints hint sure short shorter brief briefer concise"
    " simple simpler smaller clearer",
)
_ANCHORS = (
    _ALONE
    | frozenset(_PAIRS)
    | frozenset(w for first, _ in _TOGETHER for w in first)
    | _CURT_WORDS
    | {"not", "still", "from", "in"}
)
_CJK_KINDS_SETS = tuple(
    (pattern, frozenset(pairs.split()), frozenset(chars)) for pattern, pairs, chars in _CJK_KINDS if pattern
)
