"""A course's roster from the platform (NRPS; SPEC §12): read whole before
anything changes, else nothing changes (``lti_roster_refused``); running it
again with the same roster changes nothing. Details: docs/architecture.md,
LTI rules.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from tutor.audit import audit_record
from tutor.kernel.errors import Conflict, DomainError, InvalidInput
from tutor.lti.models import Context, Identity
from tutor.lti.nrps import RosterIncomplete, RosterRead, roster_read
from tutor.lti.platform import connector_for
from tutor.lti.roles import enrollment_role, role_rules
from tutor.lti.services.launch import identity_resolve
from tutor.models import AuditEvent, Course, Enrollment
from tutor.services import enrollment_remove, enrollment_set

ACTIVE = "Active"  # NRPS member status; absent means active


class MassRemovalRefused(Conflict):
    code = "lti_roster_mass_removal"


@dataclass
class RosterResult:
    members: int = 0
    enrolled: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    pages: int = 0
    differences: bool = False  # applied as membership differences
    skipped: list[str] = field(default_factory=list)  # user ids whose roles do not map


def _contexts(course: Course) -> list[Context]:
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
    return contexts


def roster_refused(*, course: Course, error: DomainError, reason: str, extra: dict) -> DomainError:
    """Audit a sync that changed nothing (``lti_roster_refused``); the error to raise."""
    with transaction.atomic():
        audit_record(
            actor=None,
            event=AuditEvent.Event.LTI_ROSTER_REFUSED,
            target=course,
            course=course,
            to_state=reason,
            reason=error.message,
            extra=extra,
        )
    return error


def _read_all(course: Course, contexts: list[Context]) -> list[tuple[Context, RosterRead]]:
    reads: list[tuple[Context, RosterRead]] = []
    for context in contexts:
        try:
            read = roster_read(
                connector=connector_for(context.registration), memberships_url=context.memberships_url
            )
        except RosterIncomplete as exc:
            raise roster_refused(
                course=course,
                error=exc,
                reason=exc.reason,
                extra={"context_id": context.context_id, "contexts_read": len(reads)},
            ) from None
        if read.differences and context.roster_synced_at is None:
            error = RosterIncomplete(
                f"the LMS course {context.context_id} answered with membership differences only, and its "
                "roster was never read whole here; nothing was changed",
                reason="differences_without_full_sync",
            )
            raise roster_refused(
                course=course,
                error=error,
                reason=error.reason,
                extra={"context_id": context.context_id, "pages": read.pages},
            )
        reads.append((context, read))
    return reads


def roster_sync(
    *,
    course: Course,
    allow_mass_removal: bool = False,
    progress: Callable[[int, int], None] | None = None,
) -> RosterResult:
    contexts = _contexts(course)
    reads = _read_all(course, contexts)  # nothing changed yet
    whole = not any(read.differences for _, read in reads)

    wanted: dict[tuple[str, str], tuple[str, dict]] = {}
    leaving: set[tuple[str, str]] = set()  # marked gone by a differences read
    skipped: list[str] = []
    issuers = set()
    for context, read in reads:
        issuer = context.registration.issuer
        issuers.add(issuer)
        rules = role_rules(context.registration.role_map)
        for member in read.members:
            user_id = member.get("user_id")
            if not isinstance(user_id, str) or not user_id or len(user_id) > 255:
                continue
            if member.get("status", ACTIVE) != ACTIVE:
                leaving.add((issuer, user_id))
                continue
            roles = member.get("roles") if isinstance(member.get("roles"), list) else []
            role = enrollment_role(roles, rules)
            if role is None:
                skipped.append(user_id)
                continue
            known = wanted.get((issuer, user_id))
            # A person in two sections with different roles: staff wins.
            if known is None or role == Enrollment.Role.STAFF:
                wanted[(issuer, user_id)] = (role, member)

    result = RosterResult(
        members=len(wanted),
        pages=sum(read.pages for _, read in reads),
        differences=not whole,
        skipped=sorted(set(skipped) - {u for _, u in wanted}),
    )
    known = list(Identity.objects.filter(issuer__in=issuers).values_list("user_id", "issuer", "subject"))
    if whole:
        staying = {user for user, issuer, subject in known if (issuer, subject) in wanted}
        gone_users = {user for user, _, _ in known} - staying
    else:
        gone_users = {user for user, issuer, subject in known if (issuer, subject) in leaving - set(wanted)}
    removable = Enrollment.objects.filter(
        course=course, user_id__in=gone_users, role__in=[Enrollment.Role.STUDENT, Enrollment.Role.STAFF]
    )
    _check_removal_share(course, removable.count(), allow_mass_removal, result)

    total = len(wanted)
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
            if progress is not None:
                progress(done, total)
        for enrollment in removable.select_related("user"):
            if enrollment_remove(course=course, user=enrollment.user, reason="no longer in the LMS roster"):
                result.removed += 1
        if whole:
            Context.objects.filter(pk__in=[c.pk for c, _ in reads]).update(roster_synced_at=timezone.now())
        audit_record(
            actor=None,
            event=AuditEvent.Event.LTI_ROSTER_SYNCED,
            target=course,
            course=course,
            to_state="differences" if not whole else "whole",
            extra={
                "members": result.members,
                "enrolled": result.enrolled,
                "changed": result.changed,
                "removed": result.removed,
                "skipped": len(result.skipped),
                "pages": result.pages,
                "mass_removal_allowed": allow_mass_removal,
            },
        )
    return result


def _check_removal_share(course: Course, removing: int, allowed: bool, result: RosterResult) -> None:
    """More than LTI_ROSTER_MAX_REMOVAL_SHARE of the course's enrolments
    leaving at once is more likely a broken roster than a term ending."""
    enrolled = Enrollment.objects.filter(
        course=course, role__in=[Enrollment.Role.STUDENT, Enrollment.Role.STAFF]
    ).count()
    share = settings.LTI_ROSTER_MAX_REMOVAL_SHARE
    if allowed or not removing or removing <= share * enrolled:
        return
    error = MassRemovalRefused(
        f"the roster would remove {removing} of the {enrolled} people enrolled in {course.slug} "
        f"(more than LTI_ROSTER_MAX_REMOVAL_SHARE={share:g}); nothing was changed. If that is right, "
        "run it again with --allow-mass-removal"
    )
    raise roster_refused(
        course=course,
        error=error,
        reason="mass_removal",
        extra={
            "would_remove": removing,
            "enrolled": enrolled,
            "members": result.members,
            "pages": result.pages,
        },
    )
