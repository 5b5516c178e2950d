"""A task's tags: the limits they share with a lesson's (SPEC §6, §9).

A task's tags are the recall context's ``ctx.tags`` and become the tags of
the lessons captured from its fixes, and recall matches every pair of them
(``lessons.text.tag_pairs``): so a task may carry no more tags, and no longer
ones, than a lesson may.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

MAX_TAGS = 20
TAG_MAX_CHARS = 64


def tags_problem(value: Any) -> tuple[str, str] | None:
    """Where (``""`` for the list, ``"[i]"`` for one tag) and why ``value`` is
    not a valid list of tags; None when it is."""
    if not isinstance(value, list):
        return "", "must be a list of strings"
    if len(value) > MAX_TAGS:
        return "", f"at most {MAX_TAGS} tags; got {len(value)}"
    for i, tag in enumerate(value):
        if not isinstance(tag, str):
            return f"[{i}]", "must be a string"
        if not tag.strip():
            return f"[{i}]", "must not be empty"
        if len(tag) > TAG_MAX_CHARS:
            return f"[{i}]", f"must be at most {TAG_MAX_CHARS} characters"
    return None


def validate_tags(value: Any) -> None:
    """The model field's validator (Django admin's task form)."""
    problem = tags_problem(value)
    if problem is not None:
        where, message = problem
        raise ValidationError(f"tags{where}: {message}", code="invalid_tags")
