"""Fencing untrusted data placed in prompts (SPEC §3 placement, §2 review prompt).

Every fence marker starts with ``<<<``. Data is escaped by breaking every
``<<<`` run, so no text inside a fence -- a student's report, a reviewer's
reason, a file -- can open or close one; invisible characters between its
"<" are dropped first. The text never grows, so budgets computed before
escaping still hold.
"""

from __future__ import annotations

import re

MARKER_LEAD = "<<<"
ESCAPED_LEAD = "<\u2039<"  # "<‹<": looks alike to a reader, never a marker


# Characters that show nothing (soft hyphen, zero-width and joiner
# characters, bidirectional controls, BOM): between two "<" a model still
# reads a marker, so they go before the runs are broken.
_INVISIBLE = "[\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff]"
_INVISIBLE_BETWEEN = re.compile(f"<{_INVISIBLE}+(?=<)")


def escape_data(text: str) -> str:
    if "<" in text:
        text = _INVISIBLE_BETWEEN.sub("<", text)
    while MARKER_LEAD in text:
        text = text.replace(MARKER_LEAD, ESCAPED_LEAD)
    return text


def begin_marker(name: str) -> str:
    return f"{MARKER_LEAD}BEGIN {name}>>>"


def end_marker(name: str) -> str:
    return f"{MARKER_LEAD}END {name}>>>"


def fence(name: str, data: str) -> str:
    """``data`` escaped and wrapped in the named markers, one per line."""
    return f"{begin_marker(name)}\n{escape_data(data)}\n{end_marker(name)}"
