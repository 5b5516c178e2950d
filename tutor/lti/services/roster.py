"""A course's roster from the platform (NRPS; SPEC §12).

Rules:
- The membership URLs are the ones launches brought (the NRPS claim); a
  course whose LMS never launched the tool has none to read.
- Every page of every context is read before anything changes: a failed
  read changes nothing, so a partial roster can never remove people.
- An active member whose roles map (``tutor.lti.roles``) is enrolled with
  that role (``enrollment_set``, audited); members whose roles do not map
  are skipped and counted.
- People of the course's platforms (an identity of the issuer) who are no
  longer active members lose the enrolment through ``enrollment_remove``;
  their submissions, sessions and audit history stay. Users enrolled by
  other means (no identity of that platform) are left alone, and so are
  service accounts.
- Running it again with the same roster changes nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.db import transaction

from tutor.audit import audit_record
from tutor.kernel.errors import InvalidInput
from tutor.lti import platform
from tutor.lti.models import Context, Identity
from tutor.lti.roles import enrollment_role
from tutor.lti.services.launch import identity_resolve
from tutor.models import AuditEvent, Course, Enrollment
from tutor.services import enrollment_remove, enrollment_set

ACTIVE = "Active"  # NRPS member status; absent means active


@dataclass
class RosterResult:
    members: int = 0
    enrolled: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: list[str] = field(default_factory=list)  # user ids whose roles do not map


def roster_sync(*, course: Course, progress: Callable[[int, int], None] | None = None) -> RosterResult:
    contexts = list(
        Context.objects.filter(registration__course=course, registration__active=True)
        .exclude(memberships_url="")
        .select_related("registration")
    )
    # A registration with bound contexts takes its roster from those alone (Context.bound).
    bound_registrations = set(
        Context.objects.filter(registration__course=course, bound=True).values_list(
            "registration_id", flat=True
        )
    )
    contexts = [c for c in contexts if c.bound or c.registration_id not in bound_registrations]
    if not contexts:
        raise InvalidInput(
            f"no roster URL is known for course {course.slug}: launch the tool once from the LMS "
            "course (the launch brings the roster service's address)"
        )
    # Read everything first (raises ServiceUnavailable, nothing changed).
    wanted: dict[tuple[str, str], tuple[str, dict]] = {}
    skipped: list[str] = []
    issuers = set()
    for context in contexts:
        issuer = context.registration.issuer
        issuers.add(issuer)
        for member in platform.roster_members(
            registration=context.registration, memberships_url=context.memberships_url
        ):
            user_id = member.get("user_id")
            if not isinstance(user_id, str) or not user_id or len(user_id) > 255:
                continue
            if member.get("status", ACTIVE) != ACTIVE:
                continue
            roles = member.get("roles") if isinstance(member.get("roles"), list) else []
            role = enrollment_role(roles)
            if role is None:
                skipped.append(user_id)
                continue
            known = wanted.get((issuer, user_id))
            # A person in two sections with different roles: staff wins.
            if known is None or role == Enrollment.Role.STAFF:
                wanted[(issuer, user_id)] = (role, member)

    result = RosterResult(members=len(wanted), skipped=sorted(set(skipped) - {u for _, u in wanted}))
    total = len(wanted)
    kept_users = set()
    with transaction.atomic():
        current = dict(Enrollment.objects.filter(course=course).values_list("user_id", "role"))
        for done, ((issuer, user_id), (role, member)) in enumerate(sorted(wanted.items()), start=1):

            def text(key: str, limit: int, member=member) -> str:
                value = member.get(key)
                return value[:limit] if isinstance(value, str) else ""

            identity = identity_resolve(
                issuer=issuer,
                subject=user_id,
                given_name=text("given_name", 150),
                family_name=text("family_name", 150),
                name=text("name", 200),
                email=text("email", 254),
            )
            before = current.get(identity.user_id)
            if before != role:
                enrollment_set(course=course, username=identity.user.get_username(), role=role, create=False)
                if before is None:
                    result.enrolled += 1
                else:
                    result.changed += 1
            else:
                result.unchanged += 1
            kept_users.add(identity.user_id)
            if progress is not None:
                progress(done, total)
        platform_users = set(Identity.objects.filter(issuer__in=issuers).values_list("user_id", flat=True))
        gone = Enrollment.objects.filter(
            course=course,
            user_id__in=platform_users - kept_users,
            role__in=[Enrollment.Role.STUDENT, Enrollment.Role.STAFF],
        ).select_related("user")
        for enrollment in gone:
            if enrollment_remove(course=course, user=enrollment.user, reason="no longer in the LMS roster"):
                result.removed += 1
        audit_record(
            actor=None,
            event=AuditEvent.Event.LTI_ROSTER_SYNCED,
            target=course,
            course=course,
            extra={
                "members": result.members,
                "enrolled": result.enrolled,
                "changed": result.changed,
                "removed": result.removed,
                "skipped": len(result.skipped),
            },
        )
    return result
