"""LTI context roles -> course enrolment (SPEC §12): the role map decides from
the member's context roles only. Details: docs/architecture.md, LTI rules.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings

from tutor.kernel.errors import PermissionRefused
from tutor.lti.rolemap import RoleMapError, Rule, map_roles, parse_role_map

MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
LEARNER = f"{MEMBERSHIP}#Learner"
INSTRUCTOR = f"{MEMBERSHIP}#Instructor"
TEACHING_ASSISTANT = f"{MEMBERSHIP}/Instructor#TeachingAssistant"
CONTENT_DEVELOPER = f"{MEMBERSHIP}#ContentDeveloper"


def context_role_name(role: str) -> str | None:
    """The role's name if ``role`` is a context role (full URI, sub-role URI
    or simple name), else None."""
    if role.startswith(MEMBERSHIP):
        rest = role[len(MEMBERSHIP) :]
        if rest.startswith("#"):
            return rest[1:]
        if rest.startswith("/") and "#" in rest:
            return rest.split("#", 1)[1]
        return None
    if "/" in role or "#" in role or ":" in role:
        return None  # an institution or system role, or another vocabulary
    return role


def role_rules(registration_map: str = "") -> tuple[Rule, ...]:
    """The rules in force: the registration's map, else the setting's
    (both checked when saved or at start-up; a map written around those
    checks refuses rather than guesses)."""
    try:
        return parse_role_map(registration_map or settings.LTI_ROLE_MAP)
    except RoleMapError as exc:
        raise PermissionRefused(
            f"This LMS's role map is not valid ({exc}); ask the tutor's operator to fix it.",
            code="lti_role_map_invalid",
        ) from None


@dataclass(frozen=True)
class RoleDecision:
    role: str | None  # Enrollment.Role value, or None: refused
    by: tuple[str, ...]  # the role names of the rule that decided


def role_decide(roles: Iterable[str], rules: tuple[Rule, ...]) -> RoleDecision:
    names = {name for name in (context_role_name(r) for r in roles if isinstance(r, str)) if name}
    target, by = map_roles(rules, names)
    return RoleDecision(role=target, by=tuple(sorted(by)))


def enrollment_role(roles: Iterable[str], rules: tuple[Rule, ...] | None = None) -> str | None:
    """The enrolment role for a member's LTI roles, or None when none maps."""
    return role_decide(roles, rules if rules is not None else role_rules()).role
