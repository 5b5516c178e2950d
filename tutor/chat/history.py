"""Which earlier messages go into the model request (SPEC §4)."""

from __future__ import annotations

from tutor.kernel.conf import optional_setting

HISTORY_MAX_MESSAGES = 12
HISTORY_MAX_CHARS = 6000


def history_limits() -> tuple[int, int]:
    return (
        optional_setting("HISTORY_MAX_MESSAGES", HISTORY_MAX_MESSAGES),
        optional_setting("HISTORY_MAX_CHARS", HISTORY_MAX_CHARS),
    )


def select_history(earlier: list[dict], current: str | None) -> tuple[list[dict], int]:
    """The history to send, oldest first, and how many candidates were left out.

    Rule (SPEC §4): take the 12 messages before the current one; walking from
    the newest, keep each while the running total of characters -- starting
    from the current message's length -- stays ≤ 6000, and stop at the first
    that would exceed it. ``earlier`` is oldest first and already limited to
    the newest 12.
    """
    max_messages, max_chars = history_limits()
    candidates = earlier[-max_messages:]
    total = len(current or "")
    kept: list[dict] = []
    for message in reversed(candidates):
        total += len(message["content"])
        if total > max_chars:
            break
        kept.append(message)
    kept.reverse()
    return kept, len(candidates) - len(kept)
