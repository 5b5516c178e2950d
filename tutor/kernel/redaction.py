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

_NOT_ALNUM_BEFORE = r"(?<![A-Za-z0-9])"
_NOT_ALNUM_AFTER = r"(?![A-Za-z0-9])"

# (kind, pattern), applied in this order: a private key block before the
# base64 lines inside it, a URL's password before the e-mail-like user@host.
# Where a marker stands as a secret's value it is left alone: one of ours,
# or one a student typed (``unmarked``: U+200C after its bracket).
_IPV4 = r"(?:(?:25[0-5]|2[0-4]\d|[01]?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d?\d)(?![\d.]*\d)"

# After "is", words that say something of the secret rather than give it:
# "the api key is invalid", "my passphrase is wrong" (a student asking about
# an error, not pasting a credential).
_NOT_A_VALUE = (
    r"(?!(?:invalid|wrong|incorrect|required|missing|empty|blank|expired|revoked|correct|right|ok|okay"
    r"|fine|set|unset|not|never|no|too|the|a|an|in|on|at|stored|saved|hashed|encrypted|changed|reset"
    r"|used|needed|shown|hidden|visible|null|none|still|now|also|only|being|same|different|case"
    r"|sensitive|optional|mandatory|valid|weak|strong|long|short)(?![A-Za-z0-9_-]))"
)

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
    # scheme://user:password@host -> the password only (which may hold a
    # "/"; a port and a path are none: host:443/@scope/package, and
    # host:8000/users?email=a@b.org is a port, a path and a query)
    (
        "url_password",
        # the user may be empty: redis://:password@host
        re.compile(r"(?<=://)([^/\s:@]{0,255}):(?!\[\u200c?REDACTED:|\d{1,5}/)([^\s@]{0,255}[^/\s@])(?=@)"),
    ),
    (
        "api_key",
        re.compile(
            _NOT_ALNUM_BEFORE
            + r"(?:sk-(?:proj-|ant-)?[A-Za-z0-9_\-]{16,}"  # OpenAI / Anthropic style
            + r"|AKIA[0-9A-Z]{16}"  # AWS access key id
            + r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}"  # GitHub tokens
            + r"|xox[abprs]-[A-Za-z0-9\-]{10,}"  # Slack
            + r"|AIza[0-9A-Za-z_\-]{35}"  # Google API key
            + r"|glpat-[A-Za-z0-9_\-]{20,}"  # GitLab
            + r"|[sr]k_(?:live|test)_[A-Za-z0-9]{16,}"  # Stripe
            + r"|hf_[A-Za-z0-9]{30,}"  # Hugging Face
            + r"|npm_[A-Za-z0-9]{36})"  # npm
            + _NOT_ALNUM_AFTER
        ),
    ),
    ("bearer_token", re.compile(r"(?i)(?<=bearer )[A-Za-z0-9._~+/\-]{16,}=*")),
    # A JSON Web Token whole: its payload is data (a user, claims), its signature the secret.
    (
        "jwt",
        re.compile(r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]{4,}\.eyJ[A-Za-z0-9_\-]{4,}\.[A-Za-z0-9_\-]{8,}"),
    ),
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
            r"|api[_-]?key|private[_-]?key"
            r"|access[_-]?key)[A-Za-z0-9_-]{0,40}|密码|口令|密钥)[\"']?"
            # whose it is: "the password for the db is ...", "password of alice: ..."
            r"(?:\s+(?:for|of|to)\s+(?:the\s+|my\s+|our\s+)?[\w.@-]{1,40})?"
            # "=", ":", "=>" (PHP, Perl), "==", ":=", "is", "is:"
            r"(?:\s*(?:=>|==|:=|[:=：])\s*|\s+is\s*[:=]\s*|\s+is\s+" + _NOT_A_VALUE + r"|\s*是\s*)"
            r"(?![\"']?\[\u200c?REDACTED:)"
            r"(?P<value>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|[^\s,;，；。]{1,200})"
            # no separator at all ("password hunter2", on one line): only a value
            # with a digit in it, so "password hashing" and "password field" stay
            r"|(?<![A-Za-z0-9])(?:password|passwd|passphrase|pwd)[ \t]+(?![\"']?\[\u200c?REDACTED:)"
            r"(?P<bare>(?=[^\s,;，；。]*\d)[^\s,;，；。]{6,200})"
            r"|(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{0,40}token[A-Za-z0-9_-]{0,40}[\"']?\s*[:=]\s*(?![\"']?\[\u200c?REDACTED:)"
            r"(?P<token>[\"']?[A-Za-z0-9._~+/\-]{8,}={0,2}[\"']?)(?![A-Za-z0-9])"
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
    # Long opaque strings: 32+ hex digits, or 40+ base64 characters mixing
    # cases and digits (a commit SHA of 40 hex digits counts: evidence keeps
    # ``head_sha`` in its own field, never in redacted text).
    ("secret", re.compile(_NOT_ALNUM_BEFORE + r"[0-9a-fA-F]{32,}" + _NOT_ALNUM_AFTER)),
    (
        "secret",
        re.compile(
            r"(?<![A-Za-z0-9+/_\-])(?=[A-Za-z0-9+/_\-]*[a-z])(?=[A-Za-z0-9+/_\-]*[A-Z])(?=[A-Za-z0-9+/_\-]*\d)"
            r"[A-Za-z0-9+/_\-]{40,}={0,2}(?![A-Za-z0-9+/=_\-])"
        ),
    ),
)


# What each pattern needs the text to hold before it can match -- a literal
# it always contains, or a length -- so that the patterns a text cannot
# match are not run (a chat message holds none of most). Each test is as
# strict as its pattern, never stricter: a case-insensitive literal is
# searched with the pattern's own flag, a digit as ``\d`` matches it.
_API_KEY_PREFIXES = (
    *("sk-", "AKIA", "github_pat_", "AIza", "glpat-", "k_live_", "k_test_", "hf_", "npm_"),
    *(f"gh{c}_" for c in "pousr"),
    *(f"xox{c}-" for c in "abprs"),
)
_SECRET_WORD = re.compile(r"(?i)pass|pwd|secret|key|token|密码|口令|密钥")
_BEARER, _BASIC = re.compile(r"(?i)bearer "), re.compile(r"(?i)basic ")
_DIGIT = re.compile(r"\d")
_NEEDS: dict[str, Callable[[str], bool]] = {
    "private_key": lambda text: "-----BEGIN " in text,
    "url_password": lambda text: "://" in text,
    "api_key": lambda text: any(prefix in text for prefix in _API_KEY_PREFIXES),
    "bearer_token": lambda text: _BEARER.search(text) is not None,
    "jwt": lambda text: "eyJ" in text,
    "basic_auth": lambda text: _BASIC.search(text) is not None,
    "password": lambda text: _SECRET_WORD.search(text) is not None,
    "email": lambda text: "@" in text,
    "ip_address": lambda text: ":" in text or ("." in text and _DIGIT.search(text) is not None),
    "secret": lambda text: len(text) >= 32,
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
    (s\u200bk-…) -- is found by a second pass: each stretch of the first
    pass's result between its markers is read as a reader would
    (``_as_read``), and a stretch in which that reading finds something is
    kept as read, its findings redacted. The first pass's findings stay
    redacted whatever the reading does to their neighbours, and what reads
    like a marker in the reading (a typed ［REDACTED:email］) is ``unmarked``."""
    if not text:
        return Redacted(text or "")
    first = _redacted(text)
    if first.text.isascii():
        return first
    pieces = MARKER_SPLIT.split(first.text) if "[REDACTED:" in first.text else [first.text]
    more: Counter[str] | None = None
    for index in range(0, len(pieces), 2):  # the stretches; the markers at odd indexes
        read = _as_read(pieces[index])
        if read != pieces[index]:
            second = _redacted(unmarked(read))
            if second.count:
                pieces[index] = second.text
                more = (more or Counter()) + Counter(second.kinds)
    if more is None:
        return first
    found = Counter(first.kinds) + more
    return Redacted(text="".join(pieces), count=sum(found.values()), kinds=dict(found))


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


def _as_read(text: str) -> str:
    text = text.translate(_FULL_WIDTH)
    text = _OTHER_DIGIT.sub(lambda digit: str(unicodedata.decimal(digit.group())), text)
    return _SHOWS_NOTHING.sub("", text)


def _redacted(text: str) -> Redacted:
    found: Counter[str] = Counter()
    for kind, pattern in PATTERNS:
        if not _NEEDS[kind](text):
            continue

        def replace(match: re.Match[str], kind: str = kind) -> str:
            if kind == "ip_address" and "::" in match.group(0) and not _is_ipv6(match.group(0)):
                return match.group(0)  # hex groups around "::" that make no address
            found[kind] += 1
            if kind == "password":  # keep "password=" so the text still reads
                group = next(name for name in ("value", "bare", "token") if match.group(name) is not None)
                return match.group(0)[: match.start(group) - match.start(0)] + marker(kind)
            if kind == "url_password":
                return f"{match.group(1)}:{marker(kind)}"
            return marker(kind)

        text = pattern.sub(replace, text)
    return Redacted(text=text, count=sum(found.values()), kinds=dict(found))


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
