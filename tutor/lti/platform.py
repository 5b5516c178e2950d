"""Calls from the tool to a platform's services (SPEC §12): a score to an AGS
line item and the NRPS roster, each behind an access token from the
platform's token endpoint.

pylti1p3 builds and signs the client-credentials assertion with the active
tool key (``ServiceConnector.get_access_token``), builds the score document
(``Grade``) and pages through the roster. The score POST itself is sent here
so that the platform's exact answer (status and body) reaches the audit
trail, and so that an answer is classified once: 2xx posted; 408, 429, 5xx,
timeouts and connection errors are worth retrying; any other 4xx is a
refusal that retrying will not change. Answers are redacted and cut before
they are stored; access tokens never leave this module.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from urllib.parse import urlsplit, urlunsplit

import requests
from pylti1p3.exception import LtiServiceException
from pylti1p3.grade import Grade
from pylti1p3.names_roles import NamesRolesProvisioningService
from pylti1p3.service_connector import ServiceConnector

from tutor.kernel.errors import InvalidInput, ServiceUnavailable
from tutor.kernel.redaction import redact
from tutor.lti.adapters import platform_session, pylti_registration
from tutor.lti.models import Registration, ToolKey

log = logging.getLogger(__name__)

AGS_SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
NRPS_SCOPE = "https://purl.imsglobal.org/spec/lti-nrps/scope/contextmembership.readonly"
SCORE_CONTENT_TYPE = "application/vnd.ims.lis.v1.score+json"
ANSWER_CHARS = 2000  # of a platform's answer kept in the row and the audit trail


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


def _connector(registration: Registration) -> tuple[ServiceConnector, requests.Session]:
    key = ToolKey.objects.filter(status=ToolKey.Status.ACTIVE).first()
    if key is None:
        raise InvalidInput("the tool has no signing key: run `manage.py lti_keys generate`")
    session = platform_session()
    return ServiceConnector(pylti_registration(registration, key), session), session


def scores_url(lineitem_url: str) -> str:
    """The line item's score endpoint: ``{lineitem}/scores``, query kept (AGS 2.0 §3.4)."""
    parts = urlsplit(lineitem_url)
    return urlunsplit(parts._replace(path=parts.path.rstrip("/") + "/scores"))


def score_document(
    *, user_id: str, given: int, maximum: int, activity: str, grading: str, timestamp: datetime
) -> str:
    return (
        Grade()
        .set_user_id(user_id)
        .set_score_given(given)
        .set_score_maximum(maximum)
        .set_activity_progress(activity)
        .set_grading_progress(grading)
        .set_timestamp(timestamp.isoformat())
        .get_value()
    )


def post_score(*, registration: Registration, lineitem_url: str, document: str) -> PlatformAnswer:
    """POST one score; never raises for what the platform does."""
    try:
        connector, session = _connector(registration)
    except InvalidInput as exc:
        return PlatformAnswer(ok=False, retry=False, http_status=None, text=exc.message)
    try:
        token = connector.get_access_token([AGS_SCORE_SCOPE])
    except LtiServiceException as exc:
        return _from_response("token endpoint", exc.response)
    except requests.RequestException as exc:
        return PlatformAnswer(
            ok=False, retry=True, http_status=None, text=f"token endpoint: {type(exc).__name__}"
        )
    except (ValueError, KeyError, TypeError):
        return PlatformAnswer(
            ok=False, retry=True, http_status=None, text="token endpoint: no access_token in the answer"
        )
    try:
        response = session.post(
            scores_url(lineitem_url),
            data=document,
            headers={"Authorization": f"Bearer {token}", "Content-Type": SCORE_CONTENT_TYPE},
        )
    except requests.RequestException as exc:
        return PlatformAnswer(
            ok=False, retry=True, http_status=None, text=f"score endpoint: {type(exc).__name__}"
        )
    return _from_response("score endpoint", response)


def roster_members(*, registration: Registration, memberships_url: str) -> list[dict]:
    """Every member of an NRPS membership container (all pages).
    Raises ServiceUnavailable when the platform cannot be read."""
    connector, _ = _connector(registration)
    service = NamesRolesProvisioningService(connector, {"context_memberships_url": memberships_url})
    try:
        members = service.get_members()
    except LtiServiceException as exc:
        raise ServiceUnavailable(
            f"the platform's roster service answered {exc.response.status_code}; nothing was changed"
        ) from None
    except requests.RequestException as exc:
        raise ServiceUnavailable(
            f"the platform's roster service could not be reached ({type(exc).__name__}); nothing was changed"
        ) from None
    except (ValueError, KeyError, TypeError, AttributeError):
        raise ServiceUnavailable("the platform's roster answer was not a membership container") from None
    return [m for m in members if isinstance(m, dict)]
