"""How the corrections admin shows a text in a changelist cell (SPEC §8)."""

from __future__ import annotations

WORDS_CHARS = 120  # a supporter's own words in the changelist


def short(text: str, limit: int = WORDS_CHARS) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
