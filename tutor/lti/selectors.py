"""Reads of the LTI app (SPEC §12)."""

from __future__ import annotations

from django.db.models import Q, QuerySet
from pylti1p3.registration import Registration as PyltiRegistration

from tutor.lti.models import LinkMember, ToolKey
from tutor.lti.services.keys import grace_cutoff
from tutor.models import Enrollment


def published_keys() -> QuerySet[ToolKey]:
    """The keys in the tool's JWKS: the active one, and retired ones still
    inside their grace period (a platform may hold tokens they signed)."""
    return ToolKey.objects.filter(
        Q(status=ToolKey.Status.ACTIVE) | Q(status=ToolKey.Status.RETIRED, retired_at__gte=grace_cutoff())
    ).order_by("-created_at")


def published_jwks() -> list[dict]:
    """The public JWKs of ``published_keys`` (never a private member)."""
    return [dict(PyltiRegistration.get_jwk(key.public_pem)) for key in published_keys().only("public_pem")]


def grade_targets(*, student_id, task_id) -> list[LinkMember]:
    """Where a student's score for a task goes: each resource link of the
    task with a line item, on an active registration, that this student
    launched as a student. One query, also when there is none (the common
    case of a task no LMS links to)."""
    return list(
        LinkMember.objects.filter(
            identity__user_id=student_id,
            link__task_id=task_id,
            link__registration__active=True,
            role=Enrollment.Role.STUDENT,
        )
        .exclude(link__lineitem_url="")
        .select_related("link", "link__registration", "identity")
    )
