"""LMS integration settings (LTI 1.3, tutor.lti; SPEC §12) and the cookies a
launch inside an LMS iframe needs."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from tutor.lti.rolemap import DEFAULT_ROLE_MAP, RoleMapError, parse_role_map
from tutor.ops.env import env_bool, env_int, env_list, env_number, env_str, env_url
from tutor.settings.base import CELERY_BEAT_SCHEDULE, CELERY_VISIBILITY_TIMEOUT

# The tool's public base URL (https://tutor.example.edu): the launch URL the
# platform posts to is {LTI_TOOL_URL}/lti/launch/. Unset: built from the request,
# which behind a TLS proxy needs TRUST_X_FORWARDED_PROTO.
LTI_TOOL_URL = env_url("LTI_TOOL_URL", ("https", "http"))
if env_bool("TRUST_X_FORWARDED_PROTO", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
LTI_HTTP_TIMEOUT = env_number("LTI_HTTP_TIMEOUT", 10.0, minimum=0.1)  # seconds per platform request
# The platform's key set is read during a launch, on a web thread: a shorter
# bound than the worker's requests (a hanging LMS fails the launch with the 503 page).
LTI_JWKS_TIMEOUT = env_number("LTI_JWKS_TIMEOUT", 5.0, minimum=0.1)
# Seconds of clock difference allowed on a launch's iat / exp / nbf (platforms
# floor iat to whole seconds, and LMS clocks drift).
LTI_CLOCK_LEEWAY = env_int("LTI_CLOCK_LEEWAY", 60)
# LMS roles -> course role, first match wins (tutor.lti.rolemap); a registration may have its own.
LTI_ROLE_MAP = env_str("LTI_ROLE_MAP", DEFAULT_ROLE_MAP)
try:
    parse_role_map(LTI_ROLE_MAP)
except RoleMapError as exc:
    raise ImproperlyConfigured(f"LTI_ROLE_MAP: {exc}") from None
# What a score posts while acceptance criteria wait for staff review; a
# registration may choose its own (tutor.lti.models.PendingScores).
LTI_PENDING_SCORES = env_str("LTI_PENDING_SCORES", "pending_manual")
if LTI_PENDING_SCORES not in ("pending_manual", "fully_graded_provisional", "hold"):
    raise ImproperlyConfigured(
        "LTI_PENDING_SCORES must be pending_manual, fully_graded_provisional or hold; "
        f"got {LTI_PENDING_SCORES!r}"
    )
# Roster sync: a read that would remove more than this share of the course's
# enrolments changes nothing unless run with --allow-mass-removal.
LTI_ROSTER_MAX_REMOVAL_SHARE = env_number("LTI_ROSTER_MAX_REMOVAL_SHARE", 0.25)
if LTI_ROSTER_MAX_REMOVAL_SHARE > 1:
    raise ImproperlyConfigured(
        f"LTI_ROSTER_MAX_REMOVAL_SHARE must be a share between 0 and 1; got {LTI_ROSTER_MAX_REMOVAL_SHARE}"
    )
LTI_ROSTER_MAX_PAGES = env_int("LTI_ROSTER_MAX_PAGES", 1000, minimum=1)  # per LMS course, a loop guard
LTI_LOGIN_TTL = env_int("LTI_LOGIN_TTL", 600, minimum=30)  # seconds from login initiation to launch
LTI_KEY_GRACE_DAYS = env_int("LTI_KEY_GRACE_DAYS", 7)  # a retired tool key stays in the JWKS this long
# pylti1p3's check page: when the browser refuses cookies inside the LMS iframe
# it offers to open the tool in a new window instead of failing the launch.
LTI_COOKIE_CHECK = env_bool("LTI_COOKIE_CHECK", True)
# Origins allowed to frame the tool (CSP frame-ancestors), e.g. https://canvas.example.edu
LTI_FRAME_ANCESTORS = env_list("LTI_FRAME_ANCESTORS", [])
# Grade passback (AGS): the queued score row is the outbox; a failed post is
# retried after LTI_SCORE_BACKOFF x 2^(tries-1) seconds (capped), at most
# LTI_SCORE_MAX_TRIES times; the sweep re-dispatches what the broker lost.
LTI_SCORE_MAX_TRIES = env_int("LTI_SCORE_MAX_TRIES", 8, minimum=1)
LTI_SCORE_BACKOFF = env_number("LTI_SCORE_BACKOFF", 30.0)
LTI_SCORE_BACKOFF_MAX = env_number("LTI_SCORE_BACKOFF_MAX", 3600.0)
LTI_SCORE_SWEEP_INTERVAL = env_int("LTI_SCORE_SWEEP_INTERVAL", 30, minimum=1)
LTI_SCORE_REDISPATCH_AFTER = env_int("LTI_SCORE_REDISPATCH_AFTER", 120, minimum=1)
# One post is two requests (token, score): both may take the whole HTTP timeout.
LTI_SCORE_SOFT_TIME_LIMIT = env_int("LTI_SCORE_SOFT_TIME_LIMIT", 60, minimum=1)
LTI_SCORE_HARD_TIME_LIMIT = env_int("LTI_SCORE_HARD_TIME_LIMIT", 90, minimum=1)
if (
    not 2 * LTI_HTTP_TIMEOUT
    < LTI_SCORE_SOFT_TIME_LIMIT
    < LTI_SCORE_HARD_TIME_LIMIT
    < CELERY_VISIBILITY_TIMEOUT
):
    raise ImproperlyConfigured(
        "LTI timeouts must nest: 2 x LTI_HTTP_TIMEOUT < LTI_SCORE_SOFT_TIME_LIMIT < "
        "LTI_SCORE_HARD_TIME_LIMIT < CELERY_VISIBILITY_TIMEOUT"
    )
CELERY_BEAT_SCHEDULE["sweep-lti-scores"] = {
    "task": "lti.tasks.sweep_scores",
    "schedule": float(LTI_SCORE_SWEEP_INTERVAL),
}
# Cookies of a launch inside an LMS iframe: the iframe is a third-party context,
# where browsers send only SameSite=None cookies, and those only with Secure
# (HTTPS). Production behind HTTPS inside an iframe: SESSION_COOKIE_SAMESITE=None,
# SESSION_COOKIE_SECURE=1, CSRF_COOKIE_SAMESITE=None, CSRF_COOKIE_SECURE=1.
_SAMESITE = {"lax": "Lax", "strict": "Strict", "none": "None"}


def _samesite(name: str, default: str) -> str:
    value = env_str(name, default)
    if value.lower() not in _SAMESITE:
        raise ImproperlyConfigured(f"{name} must be Lax, Strict or None; got {value!r}")
    return _SAMESITE[value.lower()]


SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", False)
SESSION_COOKIE_SAMESITE = _samesite("SESSION_COOKIE_SAMESITE", "Lax")
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", False)
CSRF_COOKIE_SAMESITE = _samesite("CSRF_COOKIE_SAMESITE", "Lax")
for _name, _secure in (("SESSION_COOKIE", SESSION_COOKIE_SECURE), ("CSRF_COOKIE", CSRF_COOKIE_SECURE)):
    if globals()[f"{_name}_SAMESITE"] == "None" and not _secure:
        raise ImproperlyConfigured(
            f"{_name}_SAMESITE=None needs {_name}_SECURE=1: browsers drop it otherwise"
        )
