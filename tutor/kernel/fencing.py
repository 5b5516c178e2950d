"""Fencing untrusted data placed in prompts (SPEC §3 placement, §2 review prompt).

Every fence marker starts with ``<<<``. Data is escaped by breaking every
run that reads as ``<<<``, so no text inside a fence -- a student's report,
a reviewer's reason, a file -- can open or close one: within a run,
characters that show nothing are dropped and look-alikes of "<" become it
first (``_LEADS``). The text never grows, so budgets computed before escaping still hold.
"""

from __future__ import annotations

import re

from tutor.kernel.invisible import CONTROL_RANGES, IGNORABLE_RANGES

MARKER_LEAD = "<<<"
ESCAPED_LEAD = "<\u2039<"  # "<‹<": looks alike to a reader, never a marker


# What a reader takes for "<", with how many it reads: the sign, its small
# and full-width forms (which NFKC folds to "<"), and the signs drawn as two
# or three of it (≪, ⋘, ⫷). Between two of them a reader passes over what
# shows nothing and control characters (``tutor.kernel.invisible``): a model reads
# "<\u034f<<END …>>>", "＜<<END …>>>" and "≪<END …>>>" as the marker all the same.
_LEADS = {"<": 1, "\ufe64": 1, "\uff1c": 1, "\u226a": 2, "\u22d8": 3, "\u2af7": 3}
_NOT_SEEN = f"[{IGNORABLE_RANGES}{CONTROL_RANGES}]"
_LEAD = f"[{''.join(_LEADS)}]"
# Runs of two leads or more, and a sign that reads as three alone.
_RUN = re.compile(f"{_LEAD}(?:{_NOT_SEEN}*{_LEAD})+|[\u22d8\u2af7]")


def _broken(run: re.Match) -> str:
    """A run read as the "<" its leads make, and that broken when it reads
    as "<<<" or more; the run left as it is when it reads as less. One
    character per lead: the text never grows."""
    leads = [character for character in run.group() if character in _LEADS]
    if sum(_LEADS[lead] for lead in leads) < len(MARKER_LEAD):
        return run.group()
    text = "<" * len(leads)
    while MARKER_LEAD in text:
        text = text.replace(MARKER_LEAD, ESCAPED_LEAD)
    return text


def escape_data(text: str) -> str:
    """``text`` with every run of what reads as "<<<" broken (the text never grows)."""
    # ``in`` first: for text without any lead it is all the work done.
    if any(lead in text for lead in _LEADS):
        return _RUN.sub(_broken, text)
    return text


def begin_marker(name: str) -> str:
    return f"{MARKER_LEAD}BEGIN {name}>>>"


def end_marker(name: str) -> str:
    return f"{MARKER_LEAD}END {name}>>>"


def fence(name: str, data: str) -> str:
    """``data`` escaped and wrapped in the named markers, one per line."""
    return f"{begin_marker(name)}\n{escape_data(data)}\n{end_marker(name)}"
