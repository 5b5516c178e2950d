"""Rate limits on the write endpoints (``tutor.web.throttling``): one counter per
(scope, user) and window, counted in one atomic step of the cache, so
parallel requests never pass the rate and a request costs the same whatever
the rate."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from django.test import override_settings
from rest_framework.settings import api_settings
from rest_framework.test import APIRequestFactory

from tutor.ops.file_cache import LockedFileCache
from tutor.web.throttling import WriteThrottle, window_hit


@pytest.fixture
def file_cache(tmp_path):
    return LockedFileCache(str(tmp_path / "cache"), {"OPTIONS": {"MAX_ENTRIES": 1000}})


class _User:
    is_authenticated = True

    def __init__(self, pk):
        self.pk = pk


class _View:
    throttle_scope = "messages"


def rates(**scopes):
    return override_settings(REST_FRAMEWORK={**api_settings.user_settings, "DEFAULT_THROTTLE_RATES": scopes})


def post_as(user_id):
    request = APIRequestFactory().post("/api/tutor/sessions/x/messages/")
    request.user = _User(user_id)
    return request


def throttle_on(cache):
    throttle = WriteThrottle()
    throttle.cache = cache
    return throttle


def test_parallel_requests_never_pass_the_rate(file_cache):
    """DRF's throttle read the history and wrote it back in two steps: threads
    (as gunicorn's) that read the same history each let their request
    through (60 parallel submissions got 34-36 past 30/min)."""
    barrier = threading.Barrier(8)

    def hammer(_):
        barrier.wait()
        return [throttle_on(file_cache).allow_request(post_as(1), _View()) for _ in range(40)]

    with rates(messages="100/min"), ThreadPoolExecutor(8) as pool:
        allowed = sum(sum(results) for results in pool.map(hammer, range(8)))

    assert allowed == 100


def test_a_request_costs_the_same_whatever_the_rate(file_cache):
    """The cache holds a count, not one timestamp per request: what a
    request reads and writes does not grow with the rate or the traffic."""
    with rates(messages="1000000/min"):
        for _ in range(300):
            assert throttle_on(file_cache).allow_request(post_as(7), _View())

    assert file_cache.get("throttle_window_messages_7") == 300
    with open(file_cache._key_to_file("throttle_window_messages_7"), "rb") as stored:
        assert len(stored.read()) < 40


def test_past_the_rate_is_refused_until_the_window_ends(file_cache, monkeypatch):
    clock = [1_000_000.0]
    monkeypatch.setattr("time.time", lambda: clock[0])
    monkeypatch.setattr(WriteThrottle, "timer", lambda self: clock[0])

    def allowed(user=3):
        throttle = throttle_on(file_cache)
        return throttle.allow_request(post_as(user), _View()), throttle

    with rates(messages="2/min"):
        assert [allowed()[0] for _ in range(2)] == [True, True]
        clock[0] += 20
        refused, throttle = allowed()
        assert refused is False
        assert throttle.wait() == pytest.approx(40)  # the window opened at the first request
        assert allowed(user=4)[0] is True  # another user's count is their own
        clock[0] += 41
        assert allowed()[0] is True  # a new window


def test_reads_are_not_counted(file_cache):
    request = APIRequestFactory().get("/api/tutor/sessions/x/messages/")
    request.user = _User(5)
    with rates(messages="1/min"):
        assert all(throttle_on(file_cache).allow_request(request, _View()) for _ in range(5))
    assert file_cache.get("throttle_window_messages_5") is None


def test_any_django_cache_counts_through_add_and_incr():
    """A cache without the one-step counter (local memory here) still counts:
    ``add`` opens the window, ``incr`` counts; the window's end is unknown."""
    from django.core.cache.backends.locmem import LocMemCache

    cache = LocMemCache("throttle-test", {})
    assert [window_hit(cache, "k", 60) for _ in range(3)] == [(1, None), (2, None), (3, None)]
    throttle = throttle_on(cache)
    with rates(messages="1/min"):
        assert throttle.allow_request(post_as(9), _View()) is True
        assert throttle.allow_request(post_as(9), _View()) is False
    assert throttle.wait() == 60


def test_a_cache_that_is_down_lets_the_request_through():
    class Down:
        def window_hit(self, key, seconds):
            raise ConnectionError("redis is down")

    with rates(messages="1/min"):
        assert throttle_on(Down()).allow_request(post_as(1), _View()) is True
