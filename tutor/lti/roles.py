"""LTI context roles -> course enrolment (SPEC §12).

Rule: Learner -> student; Instructor, TeachingAssistant, ContentDeveloper
-> course staff; a person holding a staff role and Learner is staff. Only
*context* (membership) roles count: institution and system roles say what
someone is elsewhere in the institution, not in this course. Anything else
(Mentor, Observer, Administrator alone, no role) maps to nothing, and the
caller refuses the launch or skips the roster member.

The vocabulary (LTI 1.3 core, appendix A.2): a context role is
``http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor``, a sub-role
``http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant``,
and the simple names (``Instructor``) are accepted for older platforms.
"""

from __future__ import annotations

from collections.abc import Iterable

from tutor.models import Enrollment

MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"
LEARNER = f"{MEMBERSHIP}#Learner"
INSTRUCTOR = f"{MEMBERSHIP}#Instructor"
TEACHING_ASSISTANT = f"{MEMBERSHIP}/Instructor#TeachingAssistant"
CONTENT_DEVELOPER = f"{MEMBERSHIP}#ContentDeveloper"

STAFF_NAMES = frozenset({"Instructor", "TeachingAssistant", "ContentDeveloper"})
STUDENT_NAMES = frozenset({"Learner"})


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


def enrollment_role(roles: Iterable[str]) -> str | None:
    """The enrolment role for a member's LTI roles, or None when none maps."""
    names = {name for name in (context_role_name(r) for r in roles if isinstance(r, str)) if name}
    if names & STAFF_NAMES:
        return Enrollment.Role.STAFF
    if names & STUDENT_NAMES:
        return Enrollment.Role.STUDENT
    return None
