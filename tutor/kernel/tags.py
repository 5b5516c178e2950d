"""Tags: the rules a task's share with a lesson's (SPEC §6, §9).

A task's tags are the recall context's ``ctx.tags`` and become the tags of
the lessons captured from its fixes, and recall matches every pair of them
(``lessons.text.tag_pairs``): so a task may carry no more tags, and no longer
ones, than a lesson may, and both are stored alike -- stripped and
single-spaced, the same tag in another case or width once. The lessons app
builds its text rules on ``clean_tag`` and ``tag_key``.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from django.core.exceptions import ValidationError

MAX_TAGS = 20
TAG_MAX_CHARS = 64

_SPACES = re.compile(r"\s+")


def clean_tag(text: str) -> str:
    """A tag as it is stored and shown: stripped and single-spaced, case kept."""
    return _SPACES.sub(" ", text).strip()


def folded(text: str) -> str:
    """Compatibility-folded (full-width ``ＣＩ`` is ``ci``) and case-folded."""
    return unicodedata.normalize("NFKC", text).casefold()


def tag_key(text: str) -> str:
    """What makes two tags one: ``folded`` and single-spaced."""
    return clean_tag(folded(text))


def tags_cleaned(tags: list[str]) -> list[str]:
    """Tags ``tags_problem`` accepts, as they are stored: each cleaned, and a
    tag that comes again (in any case or width) kept once, where it came first."""
    kept: dict[str, str] = {}
    for tag in tags:
        kept.setdefault(tag_key(tag), clean_tag(tag))
    return list(kept.values())


def tags_problem(value: Any) -> tuple[int | None, str] | None:
    """Which tag (its index; None for the list itself) and why ``value`` is
    not a valid list of tags; None when it is."""
    if not isinstance(value, list):
        return None, "must be a list of strings"
    if len(value) > MAX_TAGS:
        return None, f"at most {MAX_TAGS} tags; got {len(value)}"
    for i, tag in enumerate(value):
        if not isinstance(tag, str):
            return i, "must be a string"
        tag = clean_tag(tag)
        if not tag:
            return i, "must not be empty"
        if len(tag) > TAG_MAX_CHARS:
            return i, f"must be at most {TAG_MAX_CHARS} characters"
    return None


def tags_path(index: int | None) -> str:
    """``tags`` or ``tags[i]``: where a problem is, as error messages name it."""
    return "tags" if index is None else f"tags[{index}]"


def validate_tags(value: Any) -> None:
    """The model field's validator (Django admin's task form)."""
    problem = tags_problem(value)
    if problem is not None:
        index, message = problem
        raise ValidationError(f"{tags_path(index)}: {message}", code="invalid_tags")
