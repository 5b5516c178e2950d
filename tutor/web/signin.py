"""Sign-in protection on the password forms: the client's ``/login/`` and the
admin's (SPEC §7). Failed sign-ins are counted per username and per address in
the shared cache; at the limit the form answers 429. Details:
docs/architecture.md, Sign-in protection.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from datetime import UTC, datetime

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import authenticate, get_user_model
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import transaction

from tutor.ops import metrics
from tutor.web.throttling import window_hit

log = logging.getLogger(__name__)
SCOPES = ("username", "address")


def client_address(request) -> str:
    """The client's address: ``REMOTE_ADDR``, or behind the project's proxy
    (``TRUST_X_FORWARDED_FOR``) the last address of ``X-Forwarded-For`` --
    the one the proxy added; those before it are the client's to forge."""
    if settings.TRUST_X_FORWARDED_FOR:
        forwarded = request.META.get("HTTP_X_FORWARDED_FOR", "")
        last = forwarded.rsplit(",", 1)[-1].strip()
        if last:
            return last[:64]
    return request.META.get("REMOTE_ADDR", "")[:64]


def _key(kind: str, scope: str, value: str) -> str:
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"signin_{kind}_{scope}_{digest}"


class SigninGuard:
    """The counts of one sign-in try: its username and its address."""

    def __init__(self, request, username: str):
        self.request = request
        self.username = username.strip()
        self.address = client_address(request)
        self.values = {"username": self.username.casefold(), "address": self.address}
        self.limits = {
            "username": settings.SIGNIN_FAILURE_LIMIT,
            "address": settings.SIGNIN_ADDRESS_FAILURE_LIMIT,
        }

    def locked_until(self) -> float | None:
        """When the later of the username's and the address's lock ends
        (a ``time.time()`` value), or None when neither is locked."""
        try:
            locks = cache.get_many([_key("lock", scope, self.values[scope]) for scope in SCOPES])
        except Exception:
            log.warning("sign-in cache unavailable; the try is not checked", exc_info=True)
            return None
        until = [value for value in locks.values() if isinstance(value, (int, float)) and value > time.time()]
        return max(until) if until else None

    def failed(self) -> float | None:
        """Count a failure for the username and the address; lock those that
        reach their limit. When the try is now locked out, until when."""
        locked = None
        for scope in SCOPES:
            try:
                count, _ = window_hit(
                    cache, _key("count", scope, self.values[scope]), settings.SIGNIN_COOLOFF
                )
                if count < self.limits[scope]:
                    continue
                until = time.time() + settings.SIGNIN_COOLOFF
                # add: the first try to reach the limit locks and is audited; parallel ones find it locked.
                if cache.add(_key("lock", scope, self.values[scope]), until, timeout=settings.SIGNIN_COOLOFF):
                    self._audit(scope, count, until)
                locked = max(locked or 0, until)
            except Exception:
                log.warning("sign-in cache unavailable; the failure is not counted", exc_info=True)
        return locked

    def succeeded(self) -> None:
        try:
            cache.delete(_key("count", "username", self.values["username"]))
        except Exception:
            log.warning("sign-in cache unavailable; the count is not reset", exc_info=True)

    def _audit(self, scope: str, count: int, until: float) -> None:
        from tutor.audit import audit_record
        from tutor.models import AuditEvent

        # Counted case-folded: the account of that spelling, else of any case.
        users = get_user_model().objects.filter(username__iexact=self.username)
        user = users.filter(username=self.username).first() or users.order_by("pk").first()
        log.warning("sign-in locked out by %s for %ss", scope, settings.SIGNIN_COOLOFF)
        with transaction.atomic():
            audit_record(
                actor=None,
                actor_label=f"sign-in from {self.address}",
                event=AuditEvent.Event.SIGNIN_LOCKED_OUT,
                target=user,
                reason=f"{count} failed sign-ins for this {scope} within {settings.SIGNIN_COOLOFF}s",
                to_state="locked",
                extra={
                    "scope": scope,
                    "username": self.username[:150],
                    "address": self.address,
                    "until": datetime.fromtimestamp(until, tz=UTC).isoformat(),
                },
            )


LOCKED_OUT_MESSAGE = (
    "Too many failed sign-ins for this account or from this address. "
    "Try again in %(minutes)s minutes; until then no password is accepted."
)


class GuardedAuthenticationMixin:
    """An authentication form's ``clean`` with the guard around ``authenticate``."""

    def clean(self):
        username = self.cleaned_data.get("username")
        password = self.cleaned_data.get("password")
        if username is not None and password:
            guard = SigninGuard(self.request, username)
            until = guard.locked_until()
            if until is None:
                self.user_cache = authenticate(self.request, username=username, password=password)
                if self.user_cache is not None:
                    self.confirm_login_allowed(self.user_cache)
                    guard.succeeded()
                    return self.cleaned_data
                until = guard.failed()
                if until is None:
                    raise self.get_invalid_login_error()
            metrics.signin_refused()
            self.request.signin_locked_until = until
            minutes = max(1, math.ceil((until - time.time()) / 60))
            raise ValidationError(LOCKED_OUT_MESSAGE, code="locked_out", params={"minutes": minutes})
        return self.cleaned_data


class GuardedAuthenticationForm(GuardedAuthenticationMixin, AuthenticationForm):
    pass


class GuardedAdminAuthenticationForm(GuardedAuthenticationMixin, AdminAuthenticationForm):
    pass


def locked_out_status(request, response):
    """A form answered to a locked-out try: 429 with ``Retry-After``."""
    until = getattr(request, "signin_locked_until", None)
    if until is not None and response.status_code == 200:
        response.status_code = 429
        response["Retry-After"] = str(max(1, math.ceil(until - time.time())))
    return response


def admin_login(request):
    """The admin's sign-in (``admin.site.login`` with the guarded form), 429 when locked out."""
    return locked_out_status(request, admin.site.login(request))
