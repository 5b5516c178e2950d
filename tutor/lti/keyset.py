"""The platform's public key set, cached per registration (SPEC §12). A launch
is verified with the key its token names (``kid``). Details:
docs/architecture.md, LTI rules.
"""

from __future__ import annotations

import hashlib
import logging
import re
import time

import requests
from django.conf import settings
from django.core.cache import cache

from tutor.kernel.errors import ServiceUnavailable
from tutor.lti.adapters import USER_AGENT

log = logging.getLogger(__name__)

KEYSET_DEFAULT_AGE = 300  # seconds, when the platform sends no max-age
KEYSET_MIN_AGE = 30  # floor of any max-age, and of refetches for an unknown kid
KEYSET_MAX_AGE = 86400  # a rotated-out key is dropped within a day at the latest
KEYSET_FAILURE_AGE = 10  # seconds an unreadable key set answers 503 without a fetch
KEEP_STALE = 7 * 86400  # how long a set stays in the cache to verify through an outage
_MAX_AGE = re.compile(r"(?:^|,)\s*(?:s-)?max-age\s*=\s*\"?(\d+)", re.IGNORECASE)


class KeySetUnavailable(ServiceUnavailable):
    code = "lti_platform_keys_unavailable"
    default_message = "The LMS could not be reached to verify this launch. Try again in a moment."


def _key(registration, what: str) -> str:
    # The URL is part of the key: a registration given a new key set URL starts afresh.
    url = hashlib.sha256(registration.jwks_url.encode()).hexdigest()[:16]
    return f"lti:keyset:{registration.pk}:{url}:{what}"


def _cache_get(key: str):
    try:
        return cache.get(key)
    except Exception:  # the cache is a help, never a reason to refuse
        return None


def _cache_set(key: str, value, timeout: float) -> None:
    try:
        cache.set(key, value, timeout)
    except Exception:
        log.warning("lti key set: the cache could not be written", exc_info=True)


def max_age(cache_control: str) -> int:
    """Seconds to keep a key set answered with ``cache_control``."""
    lowered = cache_control.lower()
    if "no-store" in lowered or "no-cache" in lowered:
        age = 0
    else:
        match = _MAX_AGE.search(cache_control)
        age = int(match.group(1)) if match else KEYSET_DEFAULT_AGE
    return min(max(age, KEYSET_MIN_AGE), KEYSET_MAX_AGE)


def _fetch(registration) -> dict:
    """Read the key set over HTTP and cache it; KeySetUnavailable when it
    cannot be read (remembered for KEYSET_FAILURE_AGE)."""
    try:
        response = requests.get(
            registration.jwks_url,
            timeout=settings.LTI_JWKS_TIMEOUT,
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
        )
        if not 200 <= response.status_code < 300:
            raise ValueError(f"HTTP {response.status_code}")
        keys = response.json().get("keys")
        if not isinstance(keys, list):
            raise ValueError("no keys list")
    except (requests.RequestException, ValueError, AttributeError) as exc:
        reason = str(exc) if isinstance(exc, ValueError) else type(exc).__name__
        log.warning("lti launch: the platform's key set could not be read: %s", reason[:100])
        _cache_set(_key(registration, "failed"), reason[:100], KEYSET_FAILURE_AGE)
        raise KeySetUnavailable() from None
    now = time.time()
    entry = {
        "keys": [k for k in keys if isinstance(k, dict)],
        "fetched_at": now,
        "fresh_until": now + max_age(response.headers.get("Cache-Control", "")),
    }
    _cache_set(_key(registration, "set"), entry, KEEP_STALE)
    return entry


def _kids(entry: dict) -> set:
    return {k.get("kid") for k in entry["keys"]}


def platform_keys(registration, *, kid: str) -> list[dict]:
    """The platform's keys to verify a token signed with ``kid`` (see the
    module's rules). The caller looks the kid up in them."""
    entry = _cache_get(_key(registration, "set"))
    now = time.time()
    if entry is not None:
        fresh = now < entry["fresh_until"]
        known = kid in _kids(entry)
        recently = now - entry["fetched_at"] < KEYSET_MIN_AGE
        if (fresh and known) or (not known and recently):
            return entry["keys"]
    if _cache_get(_key(registration, "failed")) is not None:
        if entry is not None and kid in _kids(entry):
            return entry["keys"]  # stale, but the platform is down: its keys still verify
        raise KeySetUnavailable()
    try:
        return _fetch(registration)["keys"]
    except KeySetUnavailable:
        if entry is not None and kid in _kids(entry):
            return entry["keys"]
        raise
