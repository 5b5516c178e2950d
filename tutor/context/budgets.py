"""Budgets of the tutor's system message (SPEC §4).

Every section has its own character budget and reports what it cut, so
nothing is dropped silently (``tutor.context.providers``). Budgets are named
constants, overridable in settings under the same name.
"""

from __future__ import annotations

import functools

from tutor.kernel.conf import from_settings, optional_setting

ELLIPSIS = "…"
TASK_GOAL_CHARS = 1000
TASK_STEPS_CHARS = 1200
TASK_CRITERIA_CHARS = 1600
TASK_MATERIALS_CHARS = 2000


def budget(name: str, default: int) -> int:
    """The budget ``name`` in force (kept until a setting changes)."""
    return from_settings(_budget_reader(name, default))


@functools.cache
def _budget_reader(name: str, default: int):
    # One reader per budget: the key ``from_settings`` keeps its value under.
    return lambda: int(optional_setting(name, default))


def cut(text: str, limit: int) -> tuple[str, bool]:
    """``text`` cut to at most ``limit`` characters including a trailing "…"."""
    if len(text) <= limit:
        return text, False
    return text[: max(limit - len(ELLIPSIS), 0)] + ELLIPSIS, True
