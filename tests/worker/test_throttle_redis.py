"""The throttle's counter on the real Redis of production (``tutor.ops.redis_cache``):
one atomic round trip per request, however many web threads and processes
count at once. Runs when ``REDIS_URL`` is set (``conftest.py``)."""

from __future__ import annotations

import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from tutor.ops.redis_cache import CountingRedisCache

pytestmark = pytest.mark.worker


@pytest.fixture
def redis_cache():
    cache = CountingRedisCache(os.environ["REDIS_URL"], {"KEY_PREFIX": f"throttle-test-{uuid.uuid4().hex}"})
    keys = []
    yield cache, keys
    for key in keys:
        cache.delete(key)


def test_parallel_counting_loses_no_count(redis_cache):
    cache, keys = redis_cache
    keys.append("shared")
    with ThreadPoolExecutor(8) as pool:
        counts = list(pool.map(lambda _: cache.window_hit("shared", 60)[0], range(400)))

    assert sorted(counts) == list(range(1, 401))  # each request saw its own count
    assert cache.get("shared") == 400


def test_the_window_ends_at_its_expiry(redis_cache):
    cache, keys = redis_cache
    keys.append("short")
    first, end = cache.window_hit("short", 1)
    assert first == 1 and time.time() < end <= time.time() + 1
    assert cache.window_hit("short", 1)[0] == 2
    time.sleep(1.2)
    assert cache.window_hit("short", 1)[0] == 1


def test_a_counter_without_expiry_gets_one(redis_cache):
    cache, keys = redis_cache
    keys.append("forever")
    cache.set("forever", 5, timeout=None)

    count, end = cache.window_hit("forever", 2)

    assert count == 6 and end <= time.time() + 2
    time.sleep(2.2)
    assert cache.window_hit("forever", 2)[0] == 1
