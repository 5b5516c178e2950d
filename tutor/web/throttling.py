"""Rate limits on write endpoints (SPEC §1 ``TUTOR_THROTTLE_*``, §11): one
atomic counter per (scope, user) and window. A courtesy, not a security
boundary: with the cache down the request goes through. Details:
docs/architecture.md, Throttling and the embedded cache.
"""

from __future__ import annotations

import logging

from rest_framework.settings import api_settings
from rest_framework.throttling import ScopedRateThrottle

from tutor.ops import metrics

log = logging.getLogger(__name__)


def window_hit(cache, key: str, seconds: int) -> tuple[int, float | None]:
    """Count one request against ``key``: the requests of its window so far,
    this one included, and when the window ends (a ``time.time()`` value),
    or None when the cache cannot say. The window is opened by the first
    request, for ``seconds``.

    The project's caches do it in one atomic step (``window_hit`` of
    ``tutor.ops.file_cache.LockedFileCache`` and ``tutor.ops.redis_cache``); another
    Django cache with ``add`` and ``incr``: ``add`` opens the window, ``incr``
    counts (atomic on Redis and in local memory)."""
    hit = getattr(cache, "window_hit", None)
    if hit is not None:
        return hit(key, seconds)
    if cache.add(key, 1, timeout=seconds):
        return 1, None
    try:
        return cache.incr(key), None
    except ValueError:  # the window ended between the two: this request opens the next
        if cache.add(key, 1, timeout=seconds):
            return 1, None
        return cache.incr(key), None  # unless another request opened it first


class CountingScopedRateThrottle(ScopedRateThrottle):
    """DRF's scoped rate (``throttle_scope``, per user; the rates in
    ``DEFAULT_THROTTLE_RATES``) on a counter per window (module docstring)."""

    cache_format = "throttle_window_%(scope)s_%(ident)s"

    @property
    def THROTTLE_RATES(self):  # noqa: N802 -- DRF's attribute name
        # Read at request time: DRF copies the rates onto the class at import,
        # which would ignore a later change of settings.
        return api_settings.DEFAULT_THROTTLE_RATES

    def allow_request(self, request, view):
        self.scope = getattr(view, self.scope_attr, None)
        if not self.scope:
            return True
        self.rate = self.get_rate()
        self.num_requests, self.duration = self.parse_rate(self.rate)
        if self.rate is None:
            return True
        self.key = self.get_cache_key(request, view)
        if self.key is None:
            return True
        self.now = self.timer()
        count, self.window_end = window_hit(self.cache, self.key, self.duration)
        if count <= self.num_requests:
            return True
        metrics.throttled(self.scope)
        return False

    def wait(self):
        """Seconds until the counter's window ends (the whole window when the cache cannot say)."""
        if self.window_end is None:
            return self.duration
        return max(self.window_end - self.now, 0)


class FailOpenScopedRateThrottle(CountingScopedRateThrottle):
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
