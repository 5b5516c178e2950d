"""The role map: LTI context roles -> the tutor's course role (SPEC §12).
Imports nothing of the project: the settings module checks the setting with it.
Details: docs/architecture.md, LTI rules.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

STAFF = "staff"
STUDENT = "student"
NONE = "none"
TARGETS = (STAFF, STUDENT, NONE)

DEFAULT_ROLE_MAP = (
    "Instructor=staff;ContentDeveloper=staff;Learner+TeachingAssistant=student;"
    "TeachingAssistant=staff;Learner=student"
)
MAP_CHARS = 1000
_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")

Rule = tuple[frozenset[str], str]


class RoleMapError(ValueError):
    pass


def parse_role_map(text: str) -> tuple[Rule, ...]:
    """The rules of ``text``; RoleMapError naming the first bad part."""
    if len(text) > MAP_CHARS:
        raise RoleMapError(f"a role map is at most {MAP_CHARS} characters")
    rules: list[Rule] = []
    for part in (p.strip() for p in text.split(";")):
        if not part:
            continue
        roles, sep, target = part.partition("=")
        names = [n.strip() for n in roles.split("+")]
        if not sep or target.strip() not in TARGETS:
            raise RoleMapError(f"{part!r}: write Role=staff, Role=student or Role=none")
        bad = [n for n in names if not _NAME.match(n)]
        if bad:
            raise RoleMapError(
                f"{part!r}: {bad[0]!r} is not a role name (e.g. Instructor, TeachingAssistant)"
            )
        rules.append((frozenset(names), target.strip()))
    if not rules:
        raise RoleMapError("a role map needs at least one rule, e.g. Learner=student")
    return tuple(rules)


def map_roles(rules: Iterable[Rule], names: set[str]) -> tuple[str | None, frozenset[str]]:
    """(target or None, the roles of the rule that decided) for a member
    holding the context role ``names``."""
    for roles, target in rules:
        if roles <= names:
            return (None if target == NONE else target), roles
    return None, frozenset()
