"""Input rules for a lesson's fields, shared by the API, admin, deltas and
``import_lessons`` so that every door refuses the same things, naming the
field by its path (``deltas.1.symptoms.0``, ``[3].tags``)."""

from __future__ import annotations

from typing import Any

from lessons.models import (
    BODY_MAX_CHARS,
    MAX_SYMPTOMS,
    MAX_TAGS,
    SYMPTOM_MAX_CHARS,
    TAG_MAX_CHARS,
    TITLE_MAX_CHARS,
)
from lessons.text import clean, normalize, symptom_anchor
from tutor.kernel.errors import InvalidInput
from tutor.kernel.readable import nothing_to_read


def _at(prefix: str, name: str) -> str:
    return f"{prefix}{name}" if prefix.endswith((".", "]")) or not prefix else f"{prefix}.{name}"


def clean_text(value: Any, field: str, *, max_chars: int, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str):
        raise InvalidInput("must be a string", field=field)
    value = value.strip()
    if required and nothing_to_read(value):
        raise InvalidInput("must not be empty", field=field)
    if len(value) > max_chars:
        raise InvalidInput(f"must be at most {max_chars} characters", field=field)
    return value


def clean_title(value: Any, field: str = "title") -> str:
    return clean_text(value, field, max_chars=TITLE_MAX_CHARS)


def clean_body(value: Any, field: str = "body") -> str:
    return clean_text(value, field, max_chars=BODY_MAX_CHARS)


def _clean_list(values: Any, field: str, *, max_items: int, max_chars: int, what: str) -> list[str]:
    if values is None:
        return []
    if not isinstance(values, list):
        raise InvalidInput(f"must be a list of {what}", field=field)
    if len(values) > max_items:
        raise InvalidInput(f"at most {max_items} {what}", field=field)
    cleaned: list[str] = []
    seen: set[str] = set()
    for i, value in enumerate(values):
        at = f"{field}.{i}"
        if not isinstance(value, str):
            raise InvalidInput("must be a string", field=at)
        value = clean(value)
        # Text that shows nothing (a zero-width space) is empty too: the rule of messages and corrections.
        if nothing_to_read(value):
            raise InvalidInput("must not be empty", field=at)
        if len(value) > max_chars:
            raise InvalidInput(f"must be at most {max_chars} characters", field=at)
        key = normalize(value)
        if key not in seen:  # the same tag twice (any case) counts once
            seen.add(key)
            cleaned.append(value)
    return cleaned


def clean_tags(values: Any, field: str = "tags") -> list[str]:
    return _clean_list(values, field, max_items=MAX_TAGS, max_chars=TAG_MAX_CHARS, what="tags")


def clean_symptoms(values: Any, field: str = "symptoms") -> list[str]:
    """Symptom phrases: each needs a letter, digit or CJK character, the
    token recall finds it by (``lessons.text.symptom_anchor``)."""
    cleaned = _clean_list(values, field, max_items=MAX_SYMPTOMS, max_chars=SYMPTOM_MAX_CHARS, what="symptoms")
    for i, value in enumerate(cleaned):
        if not symptom_anchor(normalize(value)):
            raise InvalidInput("needs at least one letter, digit or CJK character", field=f"{field}.{i}")
    return cleaned
