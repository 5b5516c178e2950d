"""Rate limits on write endpoints (SPEC §1 ``TUTOR_THROTTLE_*``, §11).

Throttling is a courtesy, not a security boundary: when the cache (Redis) is
down the request goes through, so a submission is still stored.
"""

import logging

from rest_framework.settings import api_settings
from rest_framework.throttling import ScopedRateThrottle

log = logging.getLogger(__name__)


class FailOpenScopedRateThrottle(ScopedRateThrottle):
    @property
    def THROTTLE_RATES(self):  # noqa: N802 -- DRF's attribute name
        # Read at request time: DRF copies the rates onto the class at import,
        # which would ignore a later change of settings.
        return api_settings.DEFAULT_THROTTLE_RATES

    def allow_request(self, request, view):
        try:
            return super().allow_request(request, view)
        except Exception:
            log.warning("throttle cache unavailable; allowing the request", exc_info=True)
            return True


class WriteThrottle(FailOpenScopedRateThrottle):
    """Throttles only unsafe methods, so reads on the same view stay free."""

    def allow_request(self, request, view):
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return True
        return super().allow_request(request, view)
