"""The second engine (SPEC §2, §6): detect-secrets' plugins, through its
library API, offline -- plugins are called for the values they find
(``analyze_string``), so no verification request is ever made.

Its findings join the project's patterns as spans (``tutor.kernel.redaction``
merges them): a secret found by either is redacted once. The same rules
apply to them: a hash its context explains, a placeholder or a question's
word is no secret. A line is scanned only where a plugin can find
something -- a run of 16 token characters, a quoted string or a secret's
name -- so a chat message of words costs nothing (see docs/architecture.md,
"Redaction", for the measurement).
"""

from __future__ import annotations

import re
from functools import cache

from tutor.kernel.secret_context import decodes_to_text, hash_explained, is_stand_in

# detect-secrets' types, as the kinds of SPEC §6.
_KINDS = {
    "Secret Keyword": "password",
    "Base64 High Entropy String": "secret",
    "Hex High Entropy String": "secret",
    "JSON Web Token": "jwt",
    "Basic Auth Credentials": "url_password",
}
# Covered better by the project's own patterns, or not a secret here.
_SKIPPED = {"Public IP (ipv4)", "Private Key"}
_ENTROPY = {"Base64 High Entropy String", "Hex High Entropy String"}
_WORTH_SCANNING = re.compile(
    r"[A-Za-z0-9_\-+/=.~:]{16,}|[\"'`][^\"'`\n]{8,}[\"'`]|(?i:pass|pwd|secret|key|token|auth|cred)"
)


@cache
def _plugins() -> tuple:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.keyword import (
        CONFIG_DENYLIST_REGEX_TO_GROUP,
        QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP,
    )

    plugins = []
    for secret_type, plugin_class in get_mapping_from_secret_type_to_class().items():
        if secret_type in _SKIPPED:
            continue
        plugin = plugin_class()
        if secret_type == "Secret Keyword":
            for table in (QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP, CONFIG_DENYLIST_REGEX_TO_GROUP):
                plugins.append((secret_type, plugin, {"denylist_regex_to_group": table}))
        else:
            plugins.append((secret_type, plugin, {}))
    return tuple(plugins)


def _values(secret_type: str, plugin, kwargs: dict, line: str):
    for value in plugin.analyze_string(line, **kwargs):
        if not isinstance(value, str) or not value:
            continue
        if secret_type in _ENTROPY and plugin.calculate_shannon_entropy(value) <= plugin.entropy_limit:
            continue
        yield value


def scanner_findings(text: str) -> list[tuple[int, int, str]]:
    """detect-secrets' findings in ``text`` as (start, end, kind) spans."""
    found: list[tuple[int, int, str]] = []
    offset = 0
    for line in text.split("\n"):
        if len(line) >= 8 and _WORTH_SCANNING.search(line):
            token_windows = _token_windows(line)
            for secret_type, plugin, kwargs in _plugins():
                pieces = _keyword_windows(line) if secret_type == "Secret Keyword" else token_windows

                for base, piece in pieces:
                    for value in _values(secret_type, plugin, kwargs, piece):
                        _locate(found, text, offset + base, piece, value, secret_type)
        offset += len(line) + 1
    return found


# The keyword plugin's expressions grow faster than the text they read
# ("pwd" repeated 270 times took 0.6 s): it reads a window after each
# secret's name of a name's length, never a run of names, and so many at most.
_KEYWORD = re.compile(r"(?i:pass|pwd|secret|key|token|auth|cred)")
_NAME_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")
_NAME_RUN = re.compile(r"[A-Za-z0-9_\-.]*")
_ASSIGNS = re.compile(r"[=:;>]")
KEYWORD_NAME_CHARS = 64
KEYWORD_WINDOW_CHARS = 200
KEYWORD_WINDOWS = 64


def _keyword_windows(line: str) -> list[tuple[int, str]]:
    windows: list[tuple[int, str]] = []
    resume = 0
    for keyword in _KEYWORD.finditer(line):
        if keyword.start() < resume:
            continue  # inside the name already read
        left = keyword.start()
        while left > 0 and keyword.start() - left <= KEYWORD_NAME_CHARS and line[left - 1] in _NAME_CHARS:
            left -= 1
        right = _NAME_RUN.match(line, keyword.end()).end()
        resume = right
        if right - left > KEYWORD_NAME_CHARS:
            continue
        start = max(0, left - 2)  # an opening quote: "password": "…"
        window = line[start : right + KEYWORD_WINDOW_CHARS]
        if _ASSIGNS.search(window, right - start):  # every expression of the plugin assigns
            windows.append((start, window))
        if len(windows) == KEYWORD_WINDOWS:
            break
    return windows


# The other plugins look for a token, with a name or a quote before it:
# each is shown the tokens of a line with what stands before them.
_TOKEN = re.compile(r"[A-Za-z0-9_\-+/=.~:%@]{12,}")
TOKEN_CONTEXT_CHARS = 48


def _token_windows(line: str) -> list[tuple[int, str]]:
    windows: list[list[int]] = []
    for token in _TOKEN.finditer(line):
        start, end = max(0, token.start() - TOKEN_CONTEXT_CHARS), min(len(line), token.end() + 1)
        if windows and start <= windows[-1][1]:
            windows[-1][1] = end
        else:
            windows.append([start, end])
    return [(start, line[start:end]) for start, end in windows]


def _locate(found: list, text: str, base: int, piece: str, value: str, secret_type: str) -> None:
    kind = _KINDS.get(secret_type, "api_key")
    start = piece.find(value)
    while start >= 0:
        end = start + len(value)
        if _kept(secret_type, value, text, base + start, base + end):
            found.append((base + start, base + end, kind))
        start = piece.find(value, end)


def _kept(secret_type: str, value: str, text: str, start: int, end: int) -> bool:
    if secret_type == "Secret Keyword":
        bare = value.strip("\"'")
        return len(bare) > 3 and not is_stand_in(bare) and not any(c.isspace() for c in bare)
    if secret_type in _ENTROPY:
        return not hash_explained(text, start, end) and not decodes_to_text(value)
    return True
