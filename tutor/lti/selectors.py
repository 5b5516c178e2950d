"""Reads of the LTI app (SPEC §12)."""

from __future__ import annotations

from django.db.models import Q, QuerySet
from pylti1p3.registration import Registration as PyltiRegistration

from tutor.lti.models import Context, LinkMember, Registration, ToolKey
from tutor.lti.services.keys import grace_cutoff
from tutor.models import AuditEvent, Enrollment


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


def bound_context_ids(registration: Registration) -> set[str]:
    """The LMS courses (context ids) the registration is bound to; empty:
    it takes launches from any (SPEC §12, ``Context.bound``)."""
    return set(
        Context.objects.filter(registration=registration, bound=True).values_list("context_id", flat=True)
    )


def outside_launchers(registration: Registration, bound: set[str]) -> list[str]:
    """Who is still enrolled in the registration's course although every
    launch of theirs through it came from an LMS course outside ``bound``:
    let in before the binding, they keep their enrolment until a roster sync
    (``lti_sync_roster``) or staff remove it. Read from the launches' audit
    rows, the one record of the context each came from. Usernames, sorted;
    none while nothing is bound."""
    if not bound:
        return []
    # This registration's launches: its issuer and one of its deployments (two
    # registrations of one platform for one course keep apart), each person's
    # contexts once.
    launches = (
        AuditEvent.objects.filter(
            event=AuditEvent.Event.LTI_LAUNCHED,
            course_id=registration.course_id,
            actor_id__isnull=False,
            extra__issuer=registration.issuer,
            extra__deployment_id__in=list(registration.deployments.values_list("deployment_id", flat=True)),
        )
        .values_list("actor_id", "extra__context_id")
        .distinct()
    )
    contexts: dict[int, set[str]] = {}
    for actor_id, context_id in launches:
        contexts.setdefault(actor_id, set()).add(str(context_id or ""))
    outside = [actor_id for actor_id, seen in contexts.items() if not seen & bound]
    return sorted(
        Enrollment.objects.filter(course_id=registration.course_id, user_id__in=outside).values_list(
            "user__username", flat=True
        )
    )
