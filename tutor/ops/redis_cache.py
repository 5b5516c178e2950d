"""The cache with ``REDIS_URL``: Django's Redis cache, with the throttle's
counter step (``tutor.web.throttling.window_hit``) as one atomic round trip."""

from __future__ import annotations

import time

from django.core.cache.backends.redis import RedisCache


class CountingRedisCache(RedisCache):
    def window_hit(self, key, seconds: int, version=None) -> tuple[int, float]:
        """One more request in ``key``'s window: in one MULTI/EXEC, the
        counter is created at 0 with the window's expiry unless it exists,
        then incremented, and its remaining time read. Integers are stored
        as themselves by Django's Redis serializer, so ``get`` reads the
        count too."""
        key = self.make_and_validate_key(key, version=version)
        client = self._cache.get_client(key, write=True)
        with client.pipeline(transaction=True) as pipe:
            pipe.set(key, 0, ex=seconds, nx=True)
            pipe.incr(key)
            pipe.pttl(key)
            _, count, remaining_ms = pipe.execute()
        if remaining_ms is None or remaining_ms < 0:
            # A counter without an expiry (written by something else) would
            # throttle for ever: it ends with this window.
            client.expire(key, seconds)
            remaining_ms = seconds * 1000
        return int(count), time.time() + remaining_ms / 1000
