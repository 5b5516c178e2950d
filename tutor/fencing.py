"""Fencing untrusted data placed in prompts (SPEC §3 placement, §2 review prompt).

Every fence marker starts with ``<<<``. Data is escaped by breaking every
``<<<`` run, so no text inside a fence -- a student's report, a reviewer's
reason, a file -- can open or close one. The replacement has the same length,
so budgets computed before escaping still hold.
"""

from __future__ import annotations

MARKER_LEAD = "<<<"
ESCAPED_LEAD = "<\u2039<"  # "<‹<": looks alike to a reader, never a marker


def escape_data(text: str) -> str:
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
