"""Calls from the tool to a platform's services (SPEC §12): a score to an AGS
line item, and the access token every call carries (the roster's pages:
``tutor.lti.nrps``).

pylti1p3 builds and signs the client-credentials assertion with the active
tool key (``ServiceConnector.get_access_token``; cached here per
registration and scope) and builds the score document (``Grade``). The
score POST itself is sent here so that the platform's exact answer (status
and body) reaches the audit trail, and so that an answer is classified once: 2xx posted; 408, 429, 5xx,
timeouts and connection errors are worth retrying; any other 4xx is a
refusal that retrying will not change. Answers are redacted and cut before
they are stored; access tokens are never logged or stored in a row.
"""

from __future__ import annotations

import hashlib
import logging
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit, urlunsplit

import requests
from django.core.cache import cache
from pylti1p3.exception import LtiServiceException
from pylti1p3.grade import Grade
from pylti1p3.service_connector import ServiceConnector

from tutor.kernel.errors import InvalidInput
from tutor.kernel.redaction import redact
from tutor.lti.adapters import platform_session, pylti_registration
from tutor.lti.models import Registration, ToolKey

log = logging.getLogger(__name__)

AGS_SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
SCORE_CONTENT_TYPE = "application/vnd.ims.lis.v1.score+json"
ANSWER_CHARS = 2000  # of a platform's answer kept in the row and the audit trail
# How platforms word "I have this score already" (AGS 2.0 §3.4.7: timestamps only move forward).
SAME_TIMESTAMP_MARKERS = ("already exists", "already been", "duplicate", "same timestamp")
NEWER_TIMESTAMP_MARKERS = ("earlier timestamp", "later point in time", "oldtimestamp", "old timestamp")
TOKEN_EXPIRY_MARGIN = 60  # seconds before its expiry a cached access token is no longer used


@dataclass(frozen=True)
class PlatformAnswer:
    ok: bool
    retry: bool  # a later try may succeed
    http_status: int | None
    text: str


def _retryable_status(status: int) -> bool:
    return status in (408, 429) or status >= 500


def _answer_text(text: str) -> str:
    return redact(text or "").text[:ANSWER_CHARS]


def _from_response(where: str, response: requests.Response) -> PlatformAnswer:
    ok = 200 <= response.status_code < 300
    return PlatformAnswer(
        ok=ok,
        retry=not ok and _retryable_status(response.status_code),
        http_status=response.status_code,
        text=_answer_text(f"{where}: {response.text}" if not ok else response.text),
    )


class CachedTokenConnector(ServiceConnector):
    """pylti1p3's connector with its access tokens kept in the shared cache
    per registration and scope until ``TOKEN_EXPIRY_MARGIN`` seconds before
    they expire (an hour on most platforms): a score post or a roster page
    does not ask for a new token each time. A token without ``expires_in``
    is not kept. The cache failing only means asking the platform."""

    def __init__(self, registration: Registration, key: ToolKey, session: requests.Session):
        super().__init__(pylti_registration(registration, key), session)
        self.registration = registration
        self.from_cache = False

    def _cache_key(self, scopes) -> str:
        reg = self.registration
        # The endpoint, client and audience are part of it: a changed registration asks anew.
        seed = "\n".join([reg.token_url, reg.client_id, reg.auth_audience, *sorted(scopes)])
        return f"lti:token:{reg.pk}:{hashlib.sha256(seed.encode()).hexdigest()[:24]}"

    def get_access_token(self, scopes) -> str:
        key = self._cache_key(scopes)
        try:
            token = cache.get(key)
        except Exception:
            token = None
        if token:
            self.from_cache = True
            return token
        self.from_cache = False
        token = super().get_access_token(scopes)
        try:
            lifetime = float(self._requests_session.last_response.json().get("expires_in"))
        except (AttributeError, TypeError, ValueError):
            lifetime = 0
        if lifetime - TOKEN_EXPIRY_MARGIN > 0 and isinstance(token, str):
            try:
                cache.set(key, token, lifetime - TOKEN_EXPIRY_MARGIN)
            except Exception:
                log.warning("lti: the access token could not be cached", exc_info=True)
        return token

    def forget_token(self, scopes) -> None:
        """Drop a cached token the platform no longer takes (a 401)."""
        self._access_tokens.clear()
        try:
            cache.delete(self._cache_key(scopes))
        except Exception:
            log.warning("lti: a cached access token could not be dropped", exc_info=True)


def connector_for(registration: Registration) -> CachedTokenConnector:
    key = ToolKey.objects.filter(status=ToolKey.Status.ACTIVE).first()
    if key is None:
        raise InvalidInput("the tool has no signing key: run `manage.py lti_keys generate`")
    return CachedTokenConnector(registration, key, platform_session())


def scores_url(lineitem_url: str) -> str:
    """The line item's score endpoint: ``{lineitem}/scores``, query kept (AGS 2.0 §3.4)."""
    parts = urlsplit(lineitem_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


def score_document(
    *,
    user_id: str,
    given: int,
    maximum: int,
    activity: str,
    grading: str,
    timestamp: datetime,
    comment: str = "",
) -> str:
    grade = (
        Grade()
        .set_user_id(user_id)
        .set_score_given(given)
        .set_score_maximum(maximum)
        .set_activity_progress(activity)
        .set_grading_progress(grading)
        .set_timestamp(timestamp.isoformat())
    )
    if comment:
        grade.set_comment(comment)
    return grade.get_value()


def already_stored(answer: PlatformAnswer) -> str | None:
    """How a 400/409 refusal says the platform holds this score already:
    ``"same"`` (a score with this very timestamp exists: Open edX's 400
    "Score already exists for the provided timestamp") or ``"newer"`` (its
    score is as new or newer: Moodle's and lti1p3platform's 409), else None."""
    if answer.http_status not in (400, 409):
        return None
    text = answer.text.lower()
    if any(marker in text for marker in SAME_TIMESTAMP_MARKERS):
        return "same"
    if answer.http_status == 409 or any(marker in text for marker in NEWER_TIMESTAMP_MARKERS):
        return "newer"
    return None


def _token_failure(exc: Exception) -> PlatformAnswer:
    if isinstance(exc, LtiServiceException):
        return _from_response("token endpoint", exc.response)
    if isinstance(exc, requests.RequestException):
        return PlatformAnswer(
            ok=False, retry=True, http_status=None, text=f"token endpoint: {type(exc).__name__}"
        )
    return PlatformAnswer(
        ok=False, retry=True, http_status=None, text="token endpoint: no access_token in the answer"
    )


TOKEN_ERRORS = (LtiServiceException, requests.RequestException, ValueError, KeyError, TypeError)


def post_score(*, registration: Registration, lineitem_url: str, document: str) -> PlatformAnswer:
    """POST one score; never raises for what the platform does. A cached
    token the platform refuses (401) is dropped and the post sent once more
    with a new one: the platform stored nothing."""
    try:
        connector = connector_for(registration)
    except InvalidInput as exc:
        return PlatformAnswer(ok=False, retry=False, http_status=None, text=exc.message)
    for _ in range(2):
        try:
            token = connector.get_access_token([AGS_SCORE_SCOPE])
        except TOKEN_ERRORS as exc:
            return _token_failure(exc)
        try:
            response = connector._requests_session.post(
                scores_url(lineitem_url),
                data=document,
                headers={"Authorization": f"Bearer {token}", "Content-Type": SCORE_CONTENT_TYPE},
            )
        except requests.RequestException as exc:
            return PlatformAnswer(
                ok=False, retry=True, http_status=None, text=f"score endpoint: {type(exc).__name__}"
            )
        if response.status_code != 401 or not connector.from_cache:
            break
        connector.forget_token([AGS_SCORE_SCOPE])
    return _from_response("score endpoint", response)
