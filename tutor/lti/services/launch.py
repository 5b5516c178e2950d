"""A verified launch becomes a signed-in, enrolled user on a task (SPEC §12).
Details: docs/architecture.md, LTI rules.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from tutor.audit import audit_record
from tutor.kernel.errors import InvalidInput, NotFound, PermissionRefused
from tutor.lti.models import Context, Deployment, Identity, LinkMember, LoginNonce, Registration, ResourceLink
from tutor.lti.roles import role_decide, role_rules
from tutor.lti.selectors import bound_context_ids
from tutor.models import AuditEvent, Enrollment, Task
from tutor.services import enrollment_set

CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
MESSAGE_TYPE = CLAIM + "message_type"
RESOURCE_LINK_REQUEST = "LtiResourceLinkRequest"
AGS_ENDPOINT = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
AGS_SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
NRPS_SERVICE = "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice"
TASK_PARAMETER = "task"  # the resource link's custom parameter naming the task slug


class LaunchRefused(PermissionRefused):
    code = "lti_launch_refused"
    default_message = "This launch from the LMS was refused."


ID_CHARS = 255  # LTI 1.3 core: sub, resource link and context ids are at most 255 characters


def _text(value: Any, limit: int) -> str:
    return value[:limit] if isinstance(value, str) else ""


def _id(value: Any) -> str:
    # Ids are never cut: two long ids with one prefix would become one person
    # or one link. An overlong one is kept whole and refused by the launch.
    return value if isinstance(value, str) else ""


def _object(value: Any) -> dict:
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class LaunchClaims:
    """The parts of a verified id_token the tool uses."""

    issuer: str
    subject: str
    deployment_id: str
    message_type: str
    roles: tuple[str, ...]
    task_slug: str
    resource_link_id: str
    resource_link_title: str
    context_id: str
    context_title: str
    memberships_url: str
    lineitem_url: str
    given_name: str
    family_name: str
    name: str
    email: str

    @classmethod
    def from_token(cls, body: dict) -> LaunchClaims:
        link = _object(body.get(CLAIM + "resource_link"))
        context = _object(body.get(CLAIM + "context"))
        custom = _object(body.get(CLAIM + "custom"))
        ags = _object(body.get(AGS_ENDPOINT))
        scopes = ags.get("scope") if isinstance(ags.get("scope"), list) else []
        roles = body.get(CLAIM + "roles")
        return cls(
            issuer=_text(body.get("iss"), 255),
            subject=_id(body.get("sub")),
            deployment_id=_text(body.get(CLAIM + "deployment_id"), 255),
            message_type=_text(body.get(MESSAGE_TYPE), 64),
            roles=tuple(r for r in roles if isinstance(r, str)) if isinstance(roles, list) else (),
            task_slug=_text(custom.get(TASK_PARAMETER), 64).strip(),
            resource_link_id=_id(link.get("id")),
            resource_link_title=_text(link.get("title"), 255),
            context_id=_id(context.get("id")),
            context_title=_text(context.get("title"), 255),
            memberships_url=_text(_object(body.get(NRPS_SERVICE)).get("context_memberships_url"), 1000),
            # Scores go back only where the platform granted the score scope.
            lineitem_url=_text(ags.get("lineitem"), 1000) if AGS_SCORE_SCOPE in scopes else "",
            given_name=_text(body.get("given_name"), 150),
            family_name=_text(body.get("family_name"), 150),
            name=_text(body.get("name"), 200),
            email=_text(body.get("email"), 254),
        )


# --- login nonces -------------------------------------------------------------------


def login_nonce_issue(*, registration: Registration, nonce: str, state: str) -> LoginNonce:
    """Remember the nonce and state of a login initiation until ``LTI_LOGIN_TTL``."""
    return LoginNonce.objects.create(
        registration=registration,
        nonce=nonce,
        state=state,
        expires_at=timezone.now() + timedelta(seconds=settings.LTI_LOGIN_TTL),
    )


def login_nonce_use(*, registration: Registration, nonce: str, state: str) -> None:
    """Use the launch's nonce, once (a conditional UPDATE: of two concurrent
    posts of one token, exactly one matches). Refused when it was used,
    expired, issued for another registration, or with another state -- the
    last one stops a token obtained in one browser from being posted with
    the state cookie of another."""
    used = LoginNonce.objects.filter(
        nonce=nonce,
        state=state,
        registration=registration,
        used_at__isnull=True,
        expires_at__gt=timezone.now(),
    ).update(used_at=timezone.now())
    if used != 1:
        raise LaunchRefused("This launch was already used or has expired. Open the link in the LMS again.")


def launch_clock_refused(*, registration: Registration, skew) -> None:
    """Record a launch refused for a clock difference (``tutor.lti.verify``):
    the course team sees which LMS and by how much, so time sync gets fixed."""
    with transaction.atomic():
        audit_record(
            actor=None,
            actor_label=registration.issuer[:150],
            event=AuditEvent.Event.LTI_LAUNCH_REFUSED,
            target=registration,
            course=registration.course_id,
            to_state="clock_skew",
            reason=skew.message,
            extra={"claim": skew.claim, "skew_seconds": skew.seconds, "leeway": settings.LTI_CLOCK_LEEWAY},
        )


def login_nonces_purge(*, now=None) -> int:
    """Delete nonces past their expiry: they can no longer be used anyway."""
    deleted, _ = LoginNonce.objects.filter(expires_at__lt=now or timezone.now()).delete()
    return deleted


# --- identities ------------------------------------------------------------------------


def lti_username(issuer: str, subject: str) -> str:
    """A stable username for (issuer, sub): the platform's ids may hold any
    character and be long, a username may not."""
    digest = hashlib.sha256(f"{issuer}\n{subject}".encode()).hexdigest()
    return f"lti-{digest[:24]}"


def identity_resolve(
    *, issuer: str, subject: str, given_name: str = "", family_name: str = "", name: str = "", email: str = ""
) -> Identity:
    """The identity of (issuer, sub), with its user made on first sight.

    Never matched by e-mail: two platforms (or two people over time) may send
    the same address. Names and e-mail are refreshed from what was sent.
    """
    identity = Identity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
    if identity is None:
        User = get_user_model()
        try:
            # A savepoint: a concurrent first launch of the same person creates
            # the same username and identity; the loser reads the winner's.
            with transaction.atomic():
                user = User(username=lti_username(issuer, subject))
                user.set_unusable_password()
                user.save()
                identity = Identity.objects.create(issuer=issuer, subject=subject, user=user)
        except IntegrityError:
            identity = Identity.objects.select_related("user").get(issuer=issuer, subject=subject)
    user = identity.user
    first, last = given_name or "", family_name or ""
    if not first and not last and name:
        first = name[:150]
    user_changes = {
        k: v
        for k, v in {"first_name": first, "last_name": last, "email": email}.items()
        if v and getattr(user, k) != v
    }
    if user_changes:
        for key, value in user_changes.items():
            setattr(user, key, value)
        user.save(update_fields=list(user_changes))
    shown = name or " ".join(p for p in (given_name, family_name) if p)
    if (shown and identity.name != shown) or (email and identity.email != email):
        identity.name = shown or identity.name
        identity.email = email or identity.email
        identity.save(update_fields=["name", "email", "last_seen_at"])
    return identity


# --- the launch -------------------------------------------------------------------------


@dataclass(frozen=True)
class LaunchOutcome:
    user: Any
    role: str
    task: Task | None
    link: ResourceLink | None


def _launch_task(registration: Registration, claims: LaunchClaims, role: str) -> Task | None:
    if not claims.task_slug:
        if role == Enrollment.Role.STAFF:
            return None  # staff land in the admin queue; no task needed
        raise InvalidInput(
            "This LMS link does not say which task to open. Ask the course team to set the "
            f"custom parameter {TASK_PARAMETER}=<task slug> on the link.",
            field=TASK_PARAMETER,
        )
    task = (
        Task.objects.filter(course_id=registration.course_id, slug=claims.task_slug)
        .select_related("course")
        .first()
    )
    if task is None:
        raise NotFound(
            f"The course {registration.course.slug} has no task {claims.task_slug!r}. Ask the course "
            f"team to fix the link's custom parameter {TASK_PARAMETER}.",
            field=TASK_PARAMETER,
        )
    return task


def context_check(registration: Registration, context_id: str) -> None:
    """A launch from an LMS course the registration is not bound to is
    refused once the registration has a bound context (``Context.bound``):
    a deployment installed for a whole LMS account launches from each of
    its courses, and only the bound ones are this course (SPEC §12: one
    course per registration). With none bound, every context is taken."""
    bound = bound_context_ids(registration)
    if bound and context_id not in bound:
        raise LaunchRefused(
            f"This LMS course is not linked to the tutor's course {registration.course.slug}. "
            f"Ask the course team to bind it (its context id is {context_id or 'missing'}).",
            code="lti_context_refused",
        )


def launch_accept(
    *, registration: Registration, deployment: Deployment, claims: LaunchClaims
) -> LaunchOutcome:
    """Turn a verified resource-link launch into a user enrolled in the
    registration's course, on the named task. Refusals (message type, role,
    task) come before any write, so a refused launch leaves nothing behind."""
    if claims.message_type != RESOURCE_LINK_REQUEST:
        raise InvalidInput(
            f"Only resource link launches are supported (got {claims.message_type or 'none'})."
        )
    for name, value in (
        ("sub", claims.subject),
        ("resource_link.id", claims.resource_link_id),
        ("context.id", claims.context_id),
    ):
        if len(value) > ID_CHARS:
            raise InvalidInput(f"The launch's {name} is longer than {ID_CHARS} characters.", field=name)
    if not claims.subject or not claims.resource_link_id:
        raise InvalidInput("The launch names no user (sub) or no resource link.")
    # Before the role and the task: a launch from another LMS course learns
    # nothing of this course's tasks (SPEC §12).
    context_check(registration, claims.context_id)
    decision = role_decide(claims.roles, role_rules(registration.role_map))
    role = decision.role
    if role is None:
        raise PermissionRefused(
            "Your role in this LMS course cannot use the tutor: it is open to learners, "
            "instructors, teaching assistants and content developers.",
            code="lti_role_refused",
        )
    task = _launch_task(registration, claims, role)
    course = registration.course

    with transaction.atomic(durable=True):
        identity = identity_resolve(
            issuer=claims.issuer,
            subject=claims.subject,
            given_name=claims.given_name,
            family_name=claims.family_name,
            name=claims.name,
            email=claims.email,
        )
        user = identity.user
        enrollment_set(course=course, username=user.get_username(), role=role, create=False, actor=user)
        context = None
        if claims.context_id:
            defaults = {"title": claims.context_title}
            if claims.memberships_url:
                defaults["memberships_url"] = claims.memberships_url
            context, _ = Context.objects.update_or_create(
                registration=registration, context_id=claims.context_id, defaults=defaults
            )
        link = None
        if task is not None:
            defaults = {"task": task, "title": claims.resource_link_title, "context": context}
            if claims.lineitem_url:
                defaults["lineitem_url"] = claims.lineitem_url
            link, _ = ResourceLink.objects.update_or_create(
                registration=registration, resource_link_id=claims.resource_link_id, defaults=defaults
            )
            member, _ = LinkMember.objects.get_or_create(
                link=link, identity=identity, defaults={"role": role}
            )
            LinkMember.objects.filter(pk=member.pk).update(
                role=role, launch_count=F("launch_count") + 1, last_launch_at=timezone.now()
            )
        audit_record(
            actor=user,
            event=AuditEvent.Event.LTI_LAUNCHED,
            target=identity,
            course=course,
            to_state=role,
            extra={
                "issuer": claims.issuer,
                "deployment_id": deployment.deployment_id,
                "resource_link_id": claims.resource_link_id,
                "context_id": claims.context_id,
                "task": task.slug if task is not None else None,
                # A launch granting staff keeps the roles claim whole (within
                # reason) and the rule that decided: who made whom staff.
                "lms_roles": list(claims.roles)[: 100 if role == Enrollment.Role.STAFF else 20],
                "role_rule": "+".join(decision.by),
                "role_map": "registration" if registration.role_map else "setting",
                "line_item": bool(link is not None and link.lineitem_url),
            },
        )
    return LaunchOutcome(user=user, role=role, task=task, link=link)
