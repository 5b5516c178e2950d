"""The glue between pylti1p3 and this app's rows (SPEC §12).

pylti1p3 does the protocol: OIDC login redirect, id_token format, signature
against the platform's JWKS, ``exp``, registration (``iss`` + ``aud``),
deployment and message checks, and the signed client assertion of token
requests. It asks this module where registrations live (``ToolConf``) and
where login nonces live (``NonceStore``); every platform request goes
through ``platform_session`` (requests has no default timeout, and a hung
LMS must not hold a web or Celery worker).
"""

from __future__ import annotations

import typing as t

import requests
from django.conf import settings
from django.utils import timezone
from pylti1p3.deployment import Deployment as PyltiDeployment
from pylti1p3.registration import Registration as PyltiRegistration
from pylti1p3.session import SessionService
from pylti1p3.tool_config import ToolConfAbstract

from tutor.lti.models import Deployment, LoginNonce, Registration, ToolKey

USER_AGENT = "tutor-lti/1"


class _TimeoutSession(requests.Session):
    def __init__(self, timeout: float):
        super().__init__()
        self._timeout = timeout
        self.headers["User-Agent"] = USER_AGENT

    def request(self, method, url, **kwargs):
        kwargs.setdefault("timeout", self._timeout)
        # The last answer stays readable: pylti1p3 keeps only the token of a
        # token answer, the cache needs its expires_in too.
        self.last_response = super().request(method, url, **kwargs)
        return self.last_response


def platform_session() -> requests.Session:
    """A requests session whose every call times out after ``LTI_HTTP_TIMEOUT``."""
    return _TimeoutSession(settings.LTI_HTTP_TIMEOUT)


def pylti_registration(registration: Registration, key: ToolKey | None) -> PyltiRegistration:
    """The library's view of a registration, signing with ``key`` (the active
    tool key; None before one was generated: launches still verify, token
    requests cannot be signed)."""
    reg = (
        PyltiRegistration()
        .set_issuer(registration.issuer)
        .set_client_id(registration.client_id)
        .set_auth_login_url(registration.auth_url)
        .set_auth_token_url(registration.token_url)
        .set_key_set_url(registration.jwks_url)
    )
    if registration.auth_audience:
        # Brightspace: the client assertion's aud is its OAuth2 audience, not the token URL.
        reg.set_auth_audience(registration.auth_audience)
    if key is not None:
        reg.set_tool_private_key(key.private_pem).set_tool_public_key(key.public_pem)
    return reg


class ToolConf(ToolConfAbstract):
    """Registrations from the database; one issuer may hold many client ids.

    The rows the library looked up stay on the instance (``registration``,
    ``deployment``), so the launch needs no second lookup.
    """

    def __init__(self) -> None:
        super().__init__()
        self.registration: Registration | None = None
        self.deployment: Deployment | None = None

    def check_iss_has_one_client(self, iss: str) -> bool:
        return False

    def check_iss_has_many_clients(self, iss: str) -> bool:
        return True

    def find_registration_by_issuer(self, iss: str, *args, **kwargs):
        return self.find_registration_by_params(iss, None)

    def find_registration_by_params(self, iss: str, client_id: str | None, *args, **kwargs):
        candidates = Registration.objects.filter(issuer=iss, active=True).select_related("course")
        if client_id:
            candidates = candidates.filter(client_id=client_id)
        # Without a client id (optional in a login initiation) only an issuer
        # with exactly one registration is unambiguous.
        found = list(candidates[:2])
        if len(found) != 1:
            return None
        self.registration = found[0]
        return pylti_registration(
            self.registration, ToolKey.objects.filter(status=ToolKey.Status.ACTIVE).first()
        )

    def find_deployment(self, iss: str, deployment_id: str):
        return None  # only the many-clients lookup below is ever used

    def find_deployment_by_params(self, iss: str, deployment_id: str, client_id: str, *args, **kwargs):
        self.deployment = (
            Deployment.objects.filter(
                registration__issuer=iss,
                registration__client_id=client_id,
                registration__active=True,
                deployment_id=deployment_id,
            )
            .select_related("registration")
            .first()
        )
        if self.deployment is None:
            return None
        return PyltiDeployment().set_deployment_id(deployment_id)


class NonceStore(SessionService):
    """Login nonces in the database instead of pylti1p3's session storage.

    Why: the launch is a cross-site form POST from the LMS, which does not
    carry a SameSite=Lax session cookie, and several web processes must
    agree on which nonces were issued and used. A nonce counts only while
    its row is unused and unexpired; the launch then uses it exactly once
    (``tutor.lti.services.launch.login_nonce_use``). Launch data is not
    cached: the launch turns into rows at once.
    """

    def save_nonce(self, nonce: str) -> None:
        # Stored with its state by the login view, which reads both from the
        # redirect the library built.
        return None

    def check_nonce(self, nonce: str) -> bool:
        return LoginNonce.objects.filter(
            nonce=nonce, used_at__isnull=True, expires_at__gt=timezone.now()
        ).exists()

    def save_launch_data(self, key: str, jwt_body: t.Mapping[str, t.Any]) -> None:
        return None

    def get_launch_data(self, key: str):
        return None

    def save_state_params(self, state: str, params) -> None:
        return None

    def get_state_params(self, state: str):
        return {}

    def set_state_valid(self, state: str, id_token_hash: str) -> None:
        return None

    def check_state_is_valid(self, state: str, id_token_hash: str) -> bool:
        # Never: pylti1p3 would accept a re-posted token without the state
        # cookie; the cookie is what binds the launch to the browser.
        return False
