"""Fencing untrusted data placed in prompts (SPEC §3 placement, §2 review prompt).

Every fence marker starts with ``<<<``. Data is escaped by breaking every
run that reads as ``<<<``, so no text inside a fence -- a student's report,
a reviewer's reason, a file -- can open or close one: within a run,
characters that show nothing are dropped and look-alikes of "<" become it
first. The text never grows, so budgets computed before escaping still hold.
"""

from __future__ import annotations

import re

from tutor.invisible import DEFAULT_IGNORABLE, without_ignorables

MARKER_LEAD = "<<<"
ESCAPED_LEAD = "<\u2039<"  # "<‹<": looks alike to a reader, never a marker


# What a reader takes for "<": the sign itself and its two compatibility
# forms (small and full-width, which NFKC folds to "<"); between two of
# them, characters that show nothing (``tutor.invisible``) -- a model reads
# "<\u034f<<END …>>>" or "＜<<END …>>>" as the marker all the same.
_LEADS = "<\ufe64\uff1c"
_RUN = re.compile(f"[{_LEADS}](?:{DEFAULT_IGNORABLE}*[{_LEADS}])+")
_AS_SIGN = str.maketrans(_LEADS, "<" * len(_LEADS))


def _broken(run: re.Match) -> str:
    text = without_ignorables(run.group()).translate(_AS_SIGN)
    while MARKER_LEAD in text:
        text = text.replace(MARKER_LEAD, ESCAPED_LEAD)
    return text


def escape_data(text: str) -> str:
    """``text`` with every run of what reads as "<<<" broken (the text never grows)."""
    if "<" in text or "\ufe64" in text or "\uff1c" in text:
        return _RUN.sub(_broken, text)
    return text


def begin_marker(name: str) -> str:
    return f"{MARKER_LEAD}BEGIN {name}>>>"


def end_marker(name: str) -> str:
    return f"{MARKER_LEAD}END {name}>>>"


def fence(name: str, data: str) -> str:
    """``data`` escaped and wrapped in the named markers, one per line."""
    return f"{begin_marker(name)}\n{escape_data(data)}\n{end_marker(name)}"
