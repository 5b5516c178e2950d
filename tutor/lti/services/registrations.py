"""Platform registrations (SPEC §12): a platform (issuer, client id) with its
endpoints and deployment ids, for one course.

Rules: registering again with the same values changes nothing (idempotent);
changed endpoints are updated and new deployment ids added (a deployment in
use is never dropped silently: admin removes one); LMS contexts named are
bound to the course, and stay bound until admin unbinds them (a deployment
installed for a whole LMS account launches from each of its courses: bound
contexts say which one is this course); a registration never
moves to another course -- launches and scores would silently change course.
Endpoints must be https, except on a loopback host (a platform on the same
machine, as in development).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from django.db import transaction

from tutor.audit import audit_record
from tutor.kernel.errors import Conflict, InvalidInput
from tutor.lti.models import Context, Deployment, PendingScores, Registration
from tutor.lti.rolemap import RoleMapError, parse_role_map
from tutor.lti.selectors import bound_context_ids, outside_launchers
from tutor.models import AuditEvent, Course

FIELD_CHARS = 255  # issuer, client id and deployment id columns
URL_CHARS = 500
URL_FIELDS = ("auth_url", "token_url", "jwks_url")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check_endpoint_url(value: str, *, field_name: str) -> str:
    """An absolute https URL (http only on a loopback host)."""
    value = (value or "").strip()
    parts = urlsplit(value)
    host = parts.hostname or ""
    if parts.scheme not in ("https", "http") or not host:
        raise InvalidInput(f"{field_name} must be an absolute https:// URL; got {value!r}", field=field_name)
    if parts.scheme == "http" and not _is_loopback(host):
        raise InvalidInput(
            f"{field_name} must use https (http only on localhost); got {value!r}", field=field_name
        )
    if len(value) > URL_CHARS:
        raise InvalidInput(f"{field_name} is longer than {URL_CHARS} characters", field=field_name)
    return value


def check_role_map(value: str) -> str:
    """A registration's role map (``tutor.lti.rolemap``); empty: the setting's."""
    value = (value or "").strip()
    if value:
        try:
            parse_role_map(value)
        except RoleMapError as exc:
            raise InvalidInput(f"role_map: {exc}", field="role_map") from None
    return value


def check_audience(value: str) -> str:
    """The client assertion's audience (Brightspace names one); empty: the token URL."""
    value = (value or "").strip()
    if len(value) > URL_CHARS:
        raise InvalidInput(f"auth_audience is longer than {URL_CHARS} characters", field="auth_audience")
    if any(ch.isspace() for ch in value):
        raise InvalidInput("auth_audience must not contain spaces", field="auth_audience")
    return value


def _check_text(value: str, *, field_name: str) -> str:
    value = (value or "").strip()
    if not value:
        raise InvalidInput(f"{field_name} must not be empty", field=field_name)
    if len(value) > FIELD_CHARS:
        raise InvalidInput(f"{field_name} is longer than {FIELD_CHARS} characters", field=field_name)
    return value


@dataclass
class RegistrationResult:
    registration: Registration
    created: bool
    changed: list[str] = field(default_factory=list)
    added_deployments: list[str] = field(default_factory=list)
    other_deployments: list[str] = field(default_factory=list)
    bound_contexts: list[str] = field(default_factory=list)  # bound by this call
    all_bound_contexts: list[str] = field(default_factory=list)
    # Enrolled by launches from LMS courses this call left unbound (selectors.outside_launchers).
    outside_launchers: list[str] = field(default_factory=list)


def _unique_texts(values, *, field_name: str) -> list[str]:
    wanted: list[str] = []
    for value in values or []:
        value = _check_text(value, field_name=field_name)
        if value not in wanted:
            wanted.append(value)
    return wanted


def registration_register(
    *,
    issuer: str,
    client_id: str,
    deployment_ids: list[str],
    auth_url: str,
    token_url: str,
    jwks_url: str,
    course: Course,
    context_ids: list[str] | None = None,
    auth_audience: str | None = None,
    role_map: str | None = None,
    pending_scores: str | None = None,
    actor=None,
) -> RegistrationResult:
    """Create or update the registration of (issuer, client id) for ``course``.

    Every value is checked before anything is written. ``auth_audience``,
    ``role_map`` and ``pending_scores`` left None keep what the registration
    has ("" resets one to the default). Audited as ``lti_registered`` when
    something changed.
    """
    issuer = _check_text(issuer, field_name="issuer")
    if urlsplit(issuer).scheme not in ("https", "http"):
        raise InvalidInput(f"issuer must be the platform's issuer URL; got {issuer!r}", field="issuer")
    client_id = _check_text(client_id, field_name="client_id")
    wanted_deployments = _unique_texts(deployment_ids, field_name="deployment_id")
    wanted_contexts = _unique_texts(context_ids, field_name="context_id")
    if not wanted_deployments:
        raise InvalidInput("at least one deployment id is needed", field="deployment_id")
    values = {
        "auth_url": check_endpoint_url(auth_url, field_name="auth_url"),
        "token_url": check_endpoint_url(token_url, field_name="token_url"),
        "jwks_url": check_endpoint_url(jwks_url, field_name="jwks_url"),
    }
    if auth_audience is not None:
        values["auth_audience"] = check_audience(auth_audience)
    if role_map is not None:
        values["role_map"] = check_role_map(role_map)
    if pending_scores is not None:
        if pending_scores and pending_scores not in PendingScores.values:
            raise InvalidInput(
                f"pending_scores must be one of {', '.join(PendingScores.values)}; got {pending_scores!r}",
                field="pending_scores",
            )
        values["pending_scores"] = pending_scores

    with transaction.atomic():
        registration = (
            Registration.objects.select_for_update().filter(issuer=issuer, client_id=client_id).first()
        )
        created = registration is None
        changed: list[str] = []
        if created:
            registration = Registration.objects.create(
                issuer=issuer, client_id=client_id, course=course, **values
            )
        else:
            if registration.course_id != course.pk:
                raise Conflict(
                    f"this registration belongs to course {registration.course.slug!r}: one course per "
                    "registration (register the course with its own client id)",
                    field="course",
                )
            changed = [name for name, value in values.items() if getattr(registration, name) != value]
            if changed:
                for name in changed:
                    setattr(registration, name, values[name])
                registration.save(update_fields=[*changed, "updated_at"])
        existing = set(registration.deployments.values_list("deployment_id", flat=True))
        added = [d for d in wanted_deployments if d not in existing]
        Deployment.objects.bulk_create(
            [Deployment(registration=registration, deployment_id=d) for d in added]
        )
        bound, all_bound = _contexts_bind(registration, wanted_contexts)
        if created or changed or added or bound:
            audit_record(
                actor=actor,
                event=AuditEvent.Event.LTI_REGISTERED,
                target=registration,
                course=course,
                to_state="created" if created else "updated",
                extra={
                    "issuer": issuer,
                    "client_id": client_id,
                    "changed": changed,
                    "added_deployments": added,
                    "bound_contexts": bound,
                },
            )
    return RegistrationResult(
        registration=registration,
        created=created,
        changed=changed,
        added_deployments=added,
        other_deployments=sorted(existing - set(wanted_deployments)),
        bound_contexts=bound,
        all_bound_contexts=all_bound,
        outside_launchers=outside_launchers(registration, set(all_bound)) if bound else [],
    )


def _contexts_bind(registration: Registration, context_ids: list[str]) -> tuple[list[str], list[str]]:
    """Bind each named context (a context seen in a launch, or a new row);
    the ids that were not bound before, and every bound id now."""
    already = bound_context_ids(registration)
    newly = [c for c in context_ids if c not in already]
    for context_id in newly:  # a launch may be creating the row meanwhile: update_or_create retries
        Context.objects.update_or_create(
            registration=registration, context_id=context_id, defaults={"bound": True}
        )
    return newly, sorted(already.union(newly))


@dataclass
class BindingResult:
    registration: Registration
    changed: list[str]  # context ids whose flag this call turned
    all_bound: list[str]
    outside_launchers: list[str]


def contexts_bound_set(*, registration: Registration, context_ids, bound: bool, actor) -> BindingResult:
    """Bind (or unbind) contexts of ``registration`` already known to it (seen
    in a launch, or named by ``lti_register``); audited as ``lti_registered``
    when a flag turned. Binding narrows who may launch, not who is enrolled:
    ``outside_launchers`` says who came in from the other LMS courses
    before. Unbinding the last context opens the registration to every LMS
    course of its deployments again (``all_bound`` is then empty)."""
    with transaction.atomic():
        rows = Context.objects.select_for_update().filter(
            registration=registration, context_id__in=context_ids
        )
        changed = sorted(rows.exclude(bound=bound).values_list("context_id", flat=True))
        Context.objects.filter(registration=registration, context_id__in=changed).update(bound=bound)
        all_bound = sorted(bound_context_ids(registration))
        if changed:
            audit_record(
                actor=actor,
                event=AuditEvent.Event.LTI_REGISTERED,
                target=registration,
                course=registration.course_id,
                to_state="updated",
                extra={
                    ("bound_contexts" if bound else "unbound_contexts"): changed,
                    "all_bound_contexts": all_bound,
                    "via": "admin",
                },
            )
    return BindingResult(
        registration=registration,
        changed=changed,
        all_bound=all_bound,
        outside_launchers=outside_launchers(registration, set(all_bound)) if bound and changed else [],
    )
