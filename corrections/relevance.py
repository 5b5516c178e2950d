"""The task half of fact relevance (SPEC §5): what a task's text is, read as
tokens once per process.

A fact is relevant to a tutor request when the message or the task text
contains at least ``CORRECTIONS_INJECT_MIN_TOKENS`` of its topic tokens. The
task's part does not change from one request to the next, so it is worked
out when a fact is written or a task's text changes (``TaskFactOverlap``,
``corrections.services.relevance``), and both sides read the task's tokens
through :func:`task_query_tokens`: the same tokens at write time and at
request time, tokenized once per (task, text) in a process.
"""

from __future__ import annotations

from functools import lru_cache

from corrections.conf import setting
from corrections.models import REACH_ALL
from corrections.text import query_tokens

# Tasks whose tokens a process keeps: a course's tasks, many times over.
TASK_TOKENS_CACHED = 512


def task_text(task) -> str:
    """The text of a task the relevance rule reads: title, goal, steps, materials."""
    return "\n".join([task.title, task.goal, "\n".join(task.steps or []), task.materials or ""])


@lru_cache(maxsize=TASK_TOKENS_CACHED)
def _tokens(task_id, text: str, cap: int) -> tuple[str, ...]:
    # Keyed by the text itself: an edited task is a new entry, never a stale one.
    return tuple(query_tokens(text, cap))


def task_query_tokens(task) -> tuple[str, ...]:
    """The task text's tokens for the relevance lookup, at most
    ``CORRECTIONS_QUERY_MAX_TOKENS`` (SPEC §5)."""
    return _tokens(task.pk, task_text(task), setting("CORRECTIONS_QUERY_MAX_TOKENS"))


def reach(hits: int, token_count: int) -> int:
    """The largest INJECT_MIN_TOKENS at which ``hits`` of a fact's
    ``token_count`` tokens make it relevant: hits ≥ min(N, token_count)
    holds for every N once the text has all of them, else for N ≤ hits."""
    return REACH_ALL if hits >= token_count else hits
