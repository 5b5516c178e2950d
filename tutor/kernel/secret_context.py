"""What a token's context and shape say about it (SPEC §2, §6): a hash that
its context explains, a value that is a placeholder or a question's word,
a string that reads as random.

Context, not shape, decides for hashes: a 40-hex string after ``commit``, in
a ``git log`` line, a lockfile, ``go.sum``, ``--hash`` line or an image
reference is a hash; entropy alone never redacts a value a hash context
explains. A name next to a value (``API_KEY=…``) or a known format still
redacts it: those findings do not ask this module.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections import Counter

# Words that say "what follows is a hash": git, checksums, lockfiles, image digests.
_HASH_WORDS = re.compile(
    r"(?i)(?<![A-Za-z])(?:commit(?:s|ted)?|sha(?:-?1|-?224|-?256|-?384|-?512)?(?:sum)?|shasum|md[45](?:sum)?"
    r"|blake[23]b?|crc32|xxh(?:ash)?\d*|hash(?:es|ed)?|digest|checksums?|fingerprint|etag|revision|rev"
    r"|head|tree|parent|merge|cherry-pick|revert|checkout|rebase|reset|bisect|blame|git|integrity"
    r"|resolved|h1|hexdigest|哈希|散列|摘要|校验和?|校验码|提交|指纹)(?![A-Za-z])|[@#]$"
)
# A previous line that produced the hash on this one (a hashing exercise's REPL, a shell).
_HASHING_COMMAND = re.compile(
    r"(?i)hashlib|hexdigest|md5sum|sha\d*sum|shasum|openssl\s+dgst|get-filehash|certutil|git\s+(?:log|rev-parse"
    r"|show|rev-list|reflog|ls-remote|ls-tree|cat-file)|digest|checksum|哈希|摘要|校验"
)
_HASH_PREFIXED = re.compile(r"(?i)(?:sha(?:1|224|256|384|512)|md5|h1)[-:~]")
# What follows a hash in tool output: "<sha256>  file.txt", "<sha> (HEAD -> main)", "<sha> refs/heads/x".
_HASH_SUFFIX = re.compile(
    r"^(?: {1,2}\*?(?:[A-Za-z0-9_\-]*[./][A-Za-z0-9_./\-]*|-)$| \((?:HEAD|tag:|origin/)| refs/)"
)
_LINE_PREFIX_CHARS = 160


def hash_explained(text: str, start: int, end: int) -> bool:
    """Whether the token at ``text[start:end]`` is a hash its context names."""
    token = text[start:end]
    if _HASH_PREFIXED.match(token):
        return True
    if "/" in token and _HASH_WORDS.search(token[: token.rfind("/")].replace("/", " ")):
        return True  # a path to a hash: …/commit/<sha>, …/blob/<sha>
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", end)
    line_end = len(text) if line_end < 0 else line_end
    before = text[max(line_start, start - _LINE_PREFIX_CHARS) : start]
    if _HASH_WORDS.search(before):
        return True
    if _HASH_SUFFIX.match(text[end:line_end]):
        return True
    if line_start:
        previous_start = text.rfind("\n", 0, line_start - 1) + 1
        if _HASHING_COMMAND.search(text[previous_start : line_start - 1]):
            return True
    return False


# Values that stand for a secret rather than give one: placeholders,
# references to where it is kept, and the words of a question about it.
_PLACEHOLDER = re.compile(
    r"(?i)^[\"'`]?(?:x{3,}|\*{3,}|\.{3}|…|<[^<>]*>|\[[^\[\]]*\]|\$\{\{?[^}]*\}?\}|\$[A-Za-z_]\w*|\{\{[^}]*\}\}"
    r"|%\(?\w*\)?s|your[\w\-. ]*|my[_\- ]?(?:key|token|secret|password|pass|api[_\-]?key)"
    r"|changeme|change[_\-]me"
    r"|example[\w\-]*|placeholder|dummy|redacted"
    r"|none|null|nil|true|false|undefined|secret|password|passwd|token|key|string|str|env|required|optional"
    r"|(?:os\.)?(?:environ|getenv)\b.*|process\.env\b.*|env\(.*|settings\.\w+|config\.\w+)[\"'`,;)]*$"
)
QUESTION_WORDS = (
    "what|which|where|when|how|why|who|whether|this|that|it|its|wrong|invalid|incorrect|expired|revoked"
    "|still|valid|working|correct|right|ok|okay|needed|required|missing|empty|set|unset|stored|saved|secure"
)
_QUESTION_VALUE = re.compile(rf"(?i)^(?:{QUESTION_WORDS})\W*$|[?？]$")


def is_stand_in(value: str) -> bool:
    """A placeholder, a reference or a question's word where a value would be."""
    return bool(_PLACEHOLDER.match(value) or _QUESTION_VALUE.search(value))


# --- random-looking strings --------------------------------------------------------------------

_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_UUID_INSIDE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HEX = re.compile(r"^[0-9a-fA-F]+$")
_SEGMENT_SPLIT = re.compile(r"[/_\-+.~=%]")
_CAMEL = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
_VOWELS = set("aeiouyAEIOUY")
RANDOM_MIN_CHARS = 16
HEX_MIN_CHARS = 32


def _entropy(text: str) -> float:
    counts = Counter(text)
    n = len(text)
    return -sum(c / n * math.log2(c / n) for c in counts.values())


# The commonest letter pairs of English words: a run of letters made of
# them reads as words; a generated string is mostly made of other pairs.
_COMMON_PAIRS = frozenset(
    [
        "th",
        "he",
        "in",
        "er",
        "an",
        "re",
        "on",
        "at",
        "en",
        "nd",
        "ti",
        "es",
        "or",
        "te",
        "of",
        "ed",
        "is",
        "it",
        "al",
        "ar",
        "st",
        "to",
        "nt",
        "ng",
        "se",
        "ha",
        "as",
        "ou",
        "io",
        "le",
        "ve",
        "co",
        "me",
        "de",
        "hi",
        "ri",
        "ro",
        "ic",
        "ne",
        "ea",
        "ra",
        "ce",
        "li",
        "ch",
        "ll",
        "be",
        "ma",
        "si",
        "om",
        "ur",
        "ca",
        "el",
        "ta",
        "la",
        "ns",
        "di",
        "fo",
        "ho",
        "pe",
        "ec",
        "pr",
        "no",
        "ct",
        "us",
        "ac",
        "ot",
        "il",
        "tr",
        "ly",
        "nc",
        "et",
        "ut",
        "ss",
        "so",
        "rs",
        "un",
        "lo",
        "wa",
        "ge",
        "ie",
        "wh",
        "ee",
        "wi",
        "em",
        "ad",
        "ol",
        "rt",
        "po",
        "we",
        "na",
        "ul",
        "ni",
        "ts",
        "mo",
        "ow",
        "pa",
        "im",
        "mi",
        "ai",
        "sh",
        "ir",
        "su",
        "id",
        "os",
        "iv",
        "ia",
        "am",
        "fi",
        "ci",
        "vi",
        "pl",
        "ig",
        "tu",
        "ev",
        "ld",
        "ry",
        "mp",
        "fe",
        "bl",
        "ab",
        "gh",
        "ty",
        "op",
        "wo",
        "sa",
        "ay",
        "ex",
        "ke",
        "fr",
        "oo",
        "av",
        "ag",
        "if",
        "ap",
        "gr",
        "od",
        "bo",
        "sp",
        "rd",
        "do",
        "uc",
        "bu",
        "ei",
        "ov",
        "by",
        "rm",
        "ep",
        "tt",
        "oc",
        "fa",
        "ef",
        "cu",
        "rn",
        "sc",
        "gi",
        "da",
        "yo",
        "cr",
        "cl",
        "du",
        "ga",
        "qu",
        "ue",
        "ff",
        "ba",
        "ey",
        "ls",
        "va",
        "um",
        "pp",
        "ua",
        "up",
        "lu",
        "go",
        "ht",
        "ru",
        "ug",
        "ds",
        "lt",
        "pi",
        "rc",
        "rr",
        "eg",
        "au",
        "ck",
        "ew",
        "mu",
        "br",
        "bi",
        "pt",
        "ak",
        "pu",
        "ui",
        "rg",
        "ib",
        "tl",
        "ny",
        "ki",
        "rk",
        "ys",
        "ob",
        "mm",
        "fu",
        "ph",
        "og",
        "ms",
        "ye",
        "ud",
        "mb",
        "ip",
        "ub",
        "oi",
        "rl",
        "gu",
        "dr",
        "hr",
        "cc",
        "tw",
        "ft",
        "wn",
        "nu",
        "af",
        "hu",
        "nn",
        "eo",
        "vo",
        "rv",
        "nf",
        "xp",
        "gn",
        "sm",
        "fl",
        "iz",
        "ok",
        "nl",
        "my",
        "gl",
        "aw",
        "ju",
        "oa",
        "eq",
        "sy",
        "sl",
        "ps",
        "jo",
        "lf",
        "nv",
        "je",
        "nk",
        "kn",
        "gs",
        "dy",
        "hy",
        "ze",
        "ks",
        "xt",
        "bs",
        "ik",
        "dd",
        "cy",
        "rp",
        "sk",
        "xi",
        "oe",
        "oy",
        "ws",
        "lv",
        "dl",
        "rf",
        "eu",
        "dg",
        "wr",
        "xa",
        "yi",
        "nm",
        "eb",
        "rb",
        "tm",
        "xc",
        "eh",
        "tc",
        "gy",
        "ja",
        "hn",
        "yp",
        "za",
    ]
)


def uncommon_pairs(token: str) -> float:
    """The share of a token's letter pairs that English words seldom hold."""
    pairs = [p for run in re.findall(r"[a-z]{2,}", token.lower()) for p in zip(run, run[1:], strict=False)]
    if len(pairs) < 6:
        return 0.0
    return sum(a + b not in _COMMON_PAIRS for a, b in pairs) / len(pairs)


def _wordy(piece: str) -> bool:
    """A run of letters that reads like a word or an abbreviation."""
    if len(piece) <= 4:
        return True
    vowels = sum(c in _VOWELS for c in piece)
    if not 0.2 <= vowels / len(piece) <= 0.75:
        return False
    consonant_run = max((len(run) for run in re.findall(r"[^aeiouyAEIOUY]+", piece)), default=0)
    return consonant_run <= 4


def _switches(text: str) -> int:
    def cls(c: str) -> int:
        return 0 if c.islower() else 1 if c.isupper() else 2 if c.isdigit() else 3

    return sum(cls(a) != cls(b) for a, b in zip(text, text[1:], strict=False))


def decodes_to_text(token: str) -> bool:
    """Base64 of readable text (test data, an encoding exercise): not a key."""
    core = token.rstrip("=")
    if len(core) < 12 or len(token) % 4 not in (0,) and "=" in token:
        return False
    try:
        raw = base64.b64decode(
            core + "=" * (-len(core) % 4), altchars=b"-_" if "-" in core or "_" in core else None
        )
    except (binascii.Error, ValueError):
        return False
    try:
        decoded = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    printable = sum(c.isprintable() or c in "\n\t" for c in decoded)
    letters = sum(c.isalpha() or c == " " for c in decoded)
    if re.match(r"^[^\s:]{1,64}:\S", decoded):
        return False  # user:password, as Basic auth encodes it
    wide = sum(ord(c) > 0x2E80 for c in decoded)
    return (
        printable == len(decoded)
        and letters >= 0.6 * len(decoded)
        and (" " in decoded or wide >= len(decoded) / 2)
    )


def looks_random(token: str) -> bool:
    """A token that reads as generated rather than written: long hex, or
    mixed characters whose runs of letters are not words. Identifiers
    (``AbstractSingletonProxyFactoryBean``, ``test_user_2024_report``), paths,
    UUIDs, numbers and base64 of readable text are not."""
    core = token.rstrip("=")
    if len(core) < RANDOM_MIN_CHARS or core.isdigit() or _UUID.match(core):
        return False
    if _UUID_INSIDE.search(core):  # an id with a name on it: "MARKER-<uuid>", "order_<uuid>"
        core = _UUID_INSIDE.sub("-", core)
        if len(core.strip("-_.")) < RANDOM_MIN_CHARS:
            return False
    if _HEX.match(core):
        return len(core) >= HEX_MIN_CHARS or (len(core) >= 20 and _switches(core) >= len(core) * 0.3)
    if decodes_to_text(token):
        return False
    segments = [s for s in _SEGMENT_SPLIT.split(core) if s]
    longest = max((len(s) for s in segments), default=0)
    mixed = sum(
        bool(re.search(r"\d", s)) and bool(re.search(r"[A-Za-z]", s)) and len(s) >= 4 for s in segments
    )
    if longest < 10 and mixed < 3:
        return False
    letters = [p for s in segments for p in _CAMEL.findall(s) if p.isalpha()]
    unwordy = sum(len(p) for p in letters if not _wordy(p))
    digits = sum(c.isdigit() for c in core)
    switch_rate = _switches(core) / (len(core) - 1)
    entropy = _entropy(core)
    if entropy < 3.0:
        return False
    if switch_rate >= 0.3 and digits >= 2:
        return True
    rare = uncommon_pairs(core)
    if rare >= 0.5 or (rare >= 0.4 and (digits or switch_rate >= 0.2)):
        return True
    return unwordy >= 0.4 * sum(c.isalpha() for c in core) and entropy >= 3.5
