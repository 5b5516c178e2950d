"""Redaction of secrets and personal data in free text (SPEC §2, §5, §6).

One module for every app: correction text and lesson bodies before they are
stored, regrade reasons, and evidence before it enters a review prompt or a
stored ``ModelCall`` request. Each finding becomes ``[REDACTED:kind]``; the
count is kept so staff can see that something was removed.

Boundaries are ASCII lookarounds, not ``\\b``: Python counts Chinese
characters as word characters, so ``\\bsk-`` would miss the key in
"密钥sk-…" that has no space before it.
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from tutor.kernel.invisible import DEFAULT_IGNORABLE
from tutor.kernel.secret_context import RANDOM_MIN_CHARS, hash_explained, is_stand_in, looks_random
from tutor.kernel.secret_formats import JWT, KNOWN_TOKEN, TOKEN_RUN
from tutor.kernel.secret_scanner import scanner_findings

_NOT_ALNUM_BEFORE = r"(?<![A-Za-z0-9])"
_NOT_ALNUM_AFTER = r"(?![A-Za-z0-9])"

# (kind, pattern): each finding is a span of the text -- the value only
# where a name or a user goes before it -- and overlapping spans from every
# pattern, the vendor formats (``tutor.kernel.secret_formats``), the random
# strings and the second engine (``tutor.kernel.secret_scanner``) become one
# marker with the strongest kind (``PRIORITY``). Where a marker stands as a
# secret's value it is left alone: one of ours, or one a student typed
# (``unmarked``: U+200C after its bracket).
_IPV4 = r"(?:(?:25[0-5]|2[0-4]\d|[01]?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d?\d)(?![\d.]*\d)"

# After "is" or 是, words that say something of the secret rather than give it:
# "the api key is invalid", "my passphrase is wrong" (a student asking about
# an error, not pasting a credential).
_NOT_A_VALUE = (
    r"(?!(?:invalid|wrong|incorrect|required|missing|empty|blank|expired|revoked|correct|right|ok|okay"
    r"|fine|set|unset|not|never|no|too|the|a|an|in|on|at|stored|saved|hashed|encrypted|changed|reset"
    r"|used|needed|shown|hidden|visible|null|none|still|now|also|only|being|same|different|case"
    r"|sensitive|optional|mandatory|valid|weak|strong|long|short|what|which|where|how|why|whether|this"
    r"|that|it|my|your|working|accepted|rejected|leaked|exposed|public|private)(?![A-Za-z0-9_-]))"
)
_NOT_MARKED = r"(?![\"']?\[\u200c?REDACTED:)"
# A value runs to a space, a separator or a Chinese character (a question's
# words after 是 are no password); long ones whole (no tail is kept).
_VALUE = r"(?P<value>\"[^\"\n]{1,4096}\"|'[^'\n]{1,4096}'|[^\s,;，；。\u3000-\u9fff\uff00-\uffef]{1,4096})"
_MARKER_OR_VALUE = _NOT_MARKED + _VALUE

PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "private_key",
        re.compile(
            # PEM (RSA, EC, OPENSSH, ENCRYPTED ...) and OpenPGP's "PRIVATE KEY BLOCK"
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
            r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
            re.DOTALL,
        ),
    ),
    # scheme://user:password@host -> the password only, up to the "@" before
    # the host (a password may hold "@" and "/"); a port and a path are none:
    # host:443/@scope/package, host:8000/users?email=a@b.org.
    (
        "url_password",
        re.compile(
            r"(?<=://)(?P<user>[^/\s:@]{0,255}):(?!\[\u200c?REDACTED:|\d{1,5}/)"
            r"(?P<value>[^\s]{0,255}?[^/\s@])@(?=[A-Za-z0-9\-.\[\]]{1,255}(?:[:/?#\s\"'`)>,;]|$))"
        ),
    ),
    ("bearer_token", re.compile(r"(?i)(?<=bearer )\s*(?P<value>[A-Za-z0-9._~+/\-=]{16,})")),
    ("jwt", JWT),
    ("basic_auth", re.compile(r"(?i)(?<=basic )[A-Za-z0-9+/]{8,}={0,2}(?![A-Za-z0-9+/=])")),
    (
        "password",
        # A secret-naming key with any prefix or suffix (SECRET_KEY, DB_PASSWORD,
        # "client_secret", api-key), an optional closing quote (JSON, YAML), then
        # the value. "token" alone names a secret only when the value looks like
        # one: "Unexpected token: '<'" is an error message, not a credential.
        re.compile(
            # Key characters around the word are bounded: unbounded, a run of
            # "pwd" repeated was scanned to its end from every occurrence.
            r"(?i)(?<![A-Za-z0-9_-])(?:api key|[A-Za-z0-9_-]{0,40}(?:password|passwd|passphrase|pwd|secret"
            r"|api[_-]?key|private[_-]?key|access[_-]?key|auth[_-]?key)[A-Za-z0-9_-]{0,40}"
            r"|(?-i:pass)|密码|口令|密钥|秘钥|令牌)[\"']?"
            # whose it is: "the password for the db is ...", "password of alice: ..."
            r"(?:\s+(?:for|of|to)\s+(?:the\s+|my\s+|our\s+)?[\w.@-]{1,40})?"
            # "=", ":", "=>" (PHP, Perl), "==", ":=", "is", "is:", 是, 为
            r"(?:\s*(?:=>|==|:=|[:=：])\s*|\s+is\s*[:=]\s*|\s+is\s+"
            + _NOT_A_VALUE
            + r"|\s*[是为]\s*"
            + _NOT_A_VALUE
            + r")"
            + _MARKER_OR_VALUE
            # no separator at all ("password hunter2", "数据库 密码 X", "登录口令 X"):
            # only a value with a digit or a sign in it, so "password hashing" stays
            + r"|(?<![A-Za-z0-9])(?:password|passwd|passphrase|pwd)[ \t]+"
            + _NOT_MARKED
            + r"(?P<bare>(?=[^\s,;，；。]*[\d!@#$%^&*])[^\s,;，；。\u3000-\u9fff]{6,4096})"
            + r"|(?:密码|口令|密钥|秘钥)[ \t]+"
            + _NOT_MARKED
            + r"(?P<cjk>(?=[!-~]*[\d!@#$%^&*A-Z])[!-~]{4,4096})"
            # a command line: mysql -pSECRET, docker login -p SECRET, sshpass -p, redis-cli -a,
            # curl -u user:pass
            + r"|(?<![A-Za-z0-9_-])(?:mysql\w*|mariadb\w*)\b[^\n]{0,200}?\s-p"
            r"(?P<mysql>[^\s'\"]{1,4096}|'[^'\n]{1,4096}'|\"[^\"\n]{1,4096}\")"
            + r"|(?<![A-Za-z0-9_-])(?:login|sshpass|redis-cli|mongo\w*|psql)\b[^\n]{0,200}?"
            r"\s(?:-p|-a|--password)"
            r"(?:[ \t]+|=)"
            + _NOT_MARKED
            + r"(?P<flag>[^\s'\"]{1,4096}|'[^'\n]{1,4096}'|\"[^\"\n]{1,4096}\")"
            + r"|(?<![A-Za-z0-9_-])curl\b[^\n]{0,200}?\s(?:-u|--user)(?:[ \t]+|=)['\"]?[^\s:'\"]{1,200}:"
            + _NOT_MARKED
            + r"(?P<curl>[^\s'\"]{1,4096})"
            + r"|(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{0,40}token[A-Za-z0-9_-]{0,40}[\"']?\s*(?:[:=：]|是|为)\s*"
            + _NOT_MARKED
            + r"(?P<token>[\"']?[A-Za-z0-9._~+/\-=:]{8,}[\"']?)(?![A-Za-z0-9])"
        ),
    ),
    (
        "email",
        # ASCII lookbehind: "写着li.wei@example.edu.cn" has a CJK character right before the address.
        re.compile(
            # Latin letters with accents too (jörg@exämple.de), not CJK: it would take the words before.
            r"(?<![A-Za-z0-9._%+\-\u00c0-\u024f])[A-Za-z0-9._%+\-\u00c0-\u024f]{1,64}"
            r"@[A-Za-z0-9.\-\u00c0-\u024f]{1,253}\.[A-Za-z]{2,24}(?![A-Za-z])"
        ),
    ),
    (
        "ip_address",
        re.compile(
            # an IPv4 address mapped into IPv6 (::ffff:192.168.1.1) whole, before
            # the IPv6 rule would take "::ffff:192" alone
            r"(?i:(?<![0-9A-Za-z:])::ffff:(?:0{1,4}:)?)"
            + _IPV4
            + r"|"
            + _NOT_ALNUM_BEFORE
            + r"(?<![\d.])"
            + _IPV4
            + r"|(?<![0-9A-Fa-f:])(?:[0-9A-Fa-f]{1,4}:){7}[0-9A-Fa-f]{1,4}(?![0-9A-Fa-f:])"
            # compressed IPv6 (2001:db8::1, fe80::1ff:fe23, 2001:db8::), with a digit
            # (a::b is a C++ name) and two groups at least, checked by ipaddress.
            # Each group ends at a ":" or the address, so digits split into groups
            # one way only (nested repeats backtracked exponentially). A bracket
            # after a name makes a slice (a[::2], b[1::3]); one after a space or
            # "//" is an address (http://[2001:db8::1]:8080/).
            + r"|(?<![0-9A-Za-z:])(?<![\w)\]]\[)(?=[0-9A-Fa-f:]*\d)"
            + r"(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){0,6}::"
            + r"(?:[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){0,6})?"
            + r"|::[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{1,4}){1,6})"
            + r"(?![0-9A-Za-z:])"
        ),
    ),
    # Strings that read as generated (``looks_random``): long hex, or mixed
    # characters whose letters make no words -- unless a hash context explains them.
    (
        "secret",
        re.compile(
            r"(?<![A-Za-z0-9+/_\-=%.])[A-Za-z0-9+/_\-%](?:[A-Za-z0-9+/_\-=%]|\.{1,3}(?=[A-Za-z0-9+/_\-%])){15,}"
        ),
    ),
)
_VALUE_GROUPS = ("value", "bare", "cjk", "mysql", "flag", "curl", "token")

# Which kind a merged span takes: the strongest of the findings in it.
PRIORITY = {
    "private_key": 100, "url_password": 90, "bearer_token": 85, "basic_auth": 85, "api_key": 80, "jwt": 75,
    "password": 60, "secret": 40, "email": 30, "ip_address": 20,
}  # fmt: skip
# Kinds whose span runs on to the end of its token (no tail of a secret is kept).
_WHOLE_TOKEN = {"api_key", "jwt", "bearer_token", "secret"}
_PERSONAL = frozenset({"email", "ip_address"})
_JOINERS = frozenset(".:/-_@|")
_TOKEN_TAIL = re.compile(r"(?:[A-Za-z0-9_\-+/=~]|[.:!?\]@]{1,3}(?=[A-Za-z0-9_\-+/~]))*")
# ... and begins at its beginning: "00MMW9rR!gZTT…" is one token, not "!gZTT…".
_TOKEN_HEAD = re.compile(r"(?:[A-Za-z0-9_\-+/~]+[.!?\]@]{1,3})?[A-Za-z0-9_\-+/~]*$")


# What each pattern needs the text to hold before it can match -- a literal
# it always contains, or a length -- so that the patterns a text cannot
# match are not run (a chat message holds none of most). Each test is as
# strict as its pattern, never stricter: a case-insensitive literal is
# searched with the pattern's own flag, a digit as ``\d`` matches it.
_SECRET_WORD = re.compile(
    r"(?i)pass|pwd|secret|key|token|密码|口令|密钥|秘钥|令牌|mysql|mariadb|login|curl|-a"
)
_BEARER, _BASIC = re.compile(r"(?i)bearer "), re.compile(r"(?i)basic ")
_DIGIT = re.compile(r"\d")
_NEEDS: dict[str, Callable[[str], bool]] = {
    "private_key": lambda text: "-----BEGIN " in text,
    "url_password": lambda text: "://" in text,
    "bearer_token": lambda text: _BEARER.search(text) is not None,
    "jwt": lambda text: "ey" in text,
    "basic_auth": lambda text: _BASIC.search(text) is not None,
    "password": lambda text: _SECRET_WORD.search(text) is not None,
    "email": lambda text: "@" in text,
    "ip_address": lambda text: ":" in text or ("." in text and _DIGIT.search(text) is not None),
    "secret": lambda text: len(text) >= RANDOM_MIN_CHARS,
}


def _is_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


def marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


MARKER = re.compile(r"\[REDACTED:[a-z_]+\]")
_ANY_MARKER = re.compile(r"[\[［]\u200c?REDACTED:[a-z_]+[\]］]")
MARKER_SPLIT = re.compile(r"(\[REDACTED:[a-z_]+\])")


# After the bracket of a marker a student typed: invisible where the text is shown.
_NOT_A_MARKER = "\u200c"  # ZERO WIDTH NON-JOINER


def unmarked(text: str) -> str:
    """``text`` in which what reads like a marker (a student typing
    ``[REDACTED:email]``) no longer is one, so ``markers_in`` counts only
    redactions that were made: a zero-width non-joiner goes after its
    bracket, and the text still reads the same."""
    return MARKER.sub(lambda match: f"[{_NOT_A_MARKER}{match.group(0)[1:]}", text)


def markers_in(text: str) -> int:
    """How many redaction markers ``text`` carries: the redactions it went
    through, also those made upstream (a chat message is redacted when it is
    stored, before a correction is read from it)."""
    return len(MARKER.findall(text or ""))


def marker_kinds(text: str) -> Counter[str]:
    """The markers of ``text`` by kind (``markers_in``, per kind)."""
    return Counter(match.group(0)[len("[REDACTED:") : -1] for match in MARKER.finditer(text or ""))


@dataclass(frozen=True)
class Redacted:
    text: str
    count: int = 0
    kinds: dict[str, int] = field(default_factory=dict)


def redact(text: str) -> Redacted:
    """``text`` with every finding replaced by ``[REDACTED:kind]``.

    The patterns are ASCII. A secret written in characters that read the
    same -- full-width letters and digits (ｐａｓｓｗｏｒｄ, １９２．１６８．１．１),
    other decimal digits, characters that show nothing inside it
    (s\u200bk-…) -- is found by a second pass over the text as a reader
    would read it (``_as_read``); its findings are mapped back onto the
    text as written and join the first pass's, so the text outside them is
    kept as written and nothing the first pass found comes back. What reads
    like a marker in the reading (a typed ［REDACTED:email］) is no marker."""
    if not text:
        return Redacted(text or "")
    spans = _spans(text)
    if not text.isascii():
        read = _as_read(text)
        if read != text:
            kept = _kept_positions(text)
            more = [
                Finding(kept[f.start], kept[f.end - 1] + 1, f.kind) for f in _spans(read) if f.end > f.start
            ]
            if more:
                spans = _merged(text, spans + more)
    return _replaced(text, spans)


# The text as read: full-width forms as the ASCII they stand for (but the
# punctuation Chinese text is written with: ，；：！？（）), the ideographic
# space as a space, every decimal digit as its ASCII one, and characters
# that show nothing dropped -- all but the one ``unmarked`` puts after a
# typed marker's bracket.
_KEPT_FULL_WIDTH = "，；：！？（）"
_FULL_WIDTH = {c: c - 0xFEE0 for c in range(0xFF01, 0xFF5F) if chr(c) not in _KEPT_FULL_WIDTH}
_FULL_WIDTH[0x3000] = 0x20
_OTHER_DIGIT = re.compile(r"(?![0-9])\d")
_SHOWS_NOTHING = re.compile(f"(?!(?<=\\[){_NOT_A_MARKER}){DEFAULT_IGNORABLE}")


def _kept_positions(text: str) -> list[int]:
    """Where each character of ``_as_read(text)`` stands in ``text`` (the
    reading maps characters one to one, and drops those that show nothing)."""
    dropped = {match.start() for match in _SHOWS_NOTHING.finditer(text)}
    return [index for index in range(len(text)) if index not in dropped]


def _as_read(text: str) -> str:
    text = text.translate(_FULL_WIDTH)
    text = _OTHER_DIGIT.sub(lambda digit: str(unicodedata.decimal(digit.group())), text)
    return _SHOWS_NOTHING.sub("", text)


@dataclass(frozen=True)
class Finding:
    start: int
    end: int
    kind: str


def _pattern_findings(text: str) -> list[Finding]:
    found = []
    for kind, pattern in PATTERNS:
        if not _NEEDS[kind](text):
            continue
        matches = _password_matches(text) if kind == "password" else pattern.finditer(text)
        for match in matches:
            group = next(
                (name for name in _VALUE_GROUPS if name in pattern.groupindex and match.group(name)), None
            )
            start, end = match.span(group) if group else match.span()
            value = text[start:end]
            if kind == "ip_address" and "::" in value and not _is_ipv6(value):
                continue  # hex groups around "::" that make no address
            if kind == "password" and not _is_value(value):
                continue
            if kind == "secret":
                start = _after_name(text, start, end)
                value = text[start:end]
                if not (looks_random(value) and not hash_explained(text, start, end)):
                    continue
            found.append(Finding(start, end, kind))
    if len(text) >= 12:
        for run in TOKEN_RUN.finditer(text):
            for match in KNOWN_TOKEN.finditer(run.group()):
                found.append(Finding(run.start() + match.start(), run.start() + match.end(), "api_key"))
    return found


# Every alternative of the password pattern begins where a name begins
# (no name character before it) at most 40 characters before one of these
# words, or at the word itself: it is tried there only, not at every
# position (1.5 ms of a 2 KB message before).
_PASSWORD_WORD = re.compile(
    r"(?i)pass|pwd|secret|key|token|密码|口令|密钥|秘钥|令牌|mysql|mariadb|login|sshpass|redis-cli|mongo|psql|curl"
)
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def _password_matches(text: str):
    pattern = dict(PATTERNS)["password"]
    starts: set[int] = set()
    for word in _PASSWORD_WORD.finditer(text):
        starts.add(word.start())
        start = word.start()
        while start > 0 and word.start() - start <= 41 and text[start - 1] in _NAME_CHARS:
            start -= 1
        starts.add(start)
        if text[max(0, word.start() - 4) : word.start()].lower() == "api ":
            starts.add(word.start() - 4)
    end = -1
    for start in sorted(starts):
        if start < end:
            continue
        match = pattern.match(text, start)
        if match:
            end = match.end()
            yield match


_NAME_THEN_VALUE = re.compile(r"[A-Za-z_][A-Za-z_\-]*=(?=[^=])")


def _after_name(text: str, start: int, end: int) -> int:
    """Where a random string's value begins: after ``name=`` when a name
    (letters, no digits) is written onto it (``_gitlab_session=…``)."""
    match = _NAME_THEN_VALUE.match(text, start, end)
    return match.end() if match else start


_SHORT_NUMBER = re.compile(r"^[\d/.:\-]{1,7}$")


def _is_value(value: str) -> bool:
    """A password's value, not what stands in for one (a placeholder, an
    environment lookup, a question's word) nor a count ("pass: 12/12")."""
    bare = value.strip("\"'")
    return bool(bare) and not is_stand_in(bare) and not _SHORT_NUMBER.match(bare)


def _merged(text: str, findings: list[Finding]) -> list[Finding]:
    """One span per secret: a token's span runs to its end, and spans that
    overlap (or touch) become one with the strongest kind. Spans over a
    marker already in the text are dropped."""
    markers = [m.span() for m in _ANY_MARKER.finditer(text)] if "REDACTED:" in text else []
    secrets = [f for f in findings if f.kind == "url_password"]
    spans = []
    for finding in findings:
        if finding.kind in _PERSONAL and any(
            f.start < finding.end and finding.start < f.end for f in secrets
        ):
            continue  # "pw@host" of scheme://user:pw@host is a password and a host, not an address
        start, end = finding.start, finding.end
        if finding.kind in _WHOLE_TOKEN:
            end = _TOKEN_TAIL.match(text, end).end()
            head = _TOKEN_HEAD.search(text, max(0, start - 256), start)
            if head and head.start() < start and head.group()[:1] not in "-_":
                start = head.start()
        if any(start < m_end and m_start < end for m_start, m_end in markers):
            continue
        spans.append(Finding(start, end, finding.kind))
    spans.sort(key=lambda f: (f.start, -f.end))
    out: list[Finding] = []
    for span in spans:
        touching = (
            out
            and span.start == out[-1].end + 1
            and text[out[-1].end] in _JOINERS
            and {span.kind, out[-1].kind} <= _WHOLE_TOKEN | {"password"}
        )
        if out and (span.start <= out[-1].end or touching):
            last = out[-1]
            kind = max(last.kind, span.kind, key=PRIORITY.__getitem__)
            out[-1] = Finding(last.start, max(last.end, span.end), kind)
        else:
            out.append(span)
    return out


def _spans(text: str) -> list[Finding]:
    findings = _pattern_findings(text) + [Finding(*span) for span in scanner_findings(text)]
    return _merged(text, findings)


def _replaced(text: str, spans: list[Finding]) -> Redacted:
    if not spans:
        return Redacted(text=text)
    found: Counter[str] = Counter()
    pieces, cursor = [], 0
    for span in spans:
        pieces.append(text[cursor : span.start])
        pieces.append(marker(span.kind))
        found[span.kind] += 1
        cursor = span.end
    pieces.append(text[cursor:])
    return Redacted(text="".join(pieces), count=sum(found.values()), kinds=dict(found))


def redact_text(text: str) -> str:
    return redact(text).text


def redact_json(value):
    """Every string in a JSON-like value redacted (keys included), and the
    total count: for model-call requests and evidence copies."""
    total = 0

    def walk(item):
        nonlocal total
        if isinstance(item, str):
            result = redact(item)
            total += result.count
            return result.text
        if isinstance(item, list):
            return [walk(v) for v in item]
        if isinstance(item, dict):
            return {walk(k) if isinstance(k, str) else k: walk(v) for k, v in item.items()}
        return item

    return walk(value), total
