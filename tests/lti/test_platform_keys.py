"""The platform's key set during launches (SPEC §12): cached per registration
as its Cache-Control says, fetched again for an unknown kid at most once in a
while, bounded in time, and a 5xx or a hang is the 503 "try again" page."""

from __future__ import annotations

import time
import types

import pytest

from tests.lti.conftest import Browser
from tests.lti.platform import FakePlatform
from tests.lti.test_launch import assert_refused, counts
from tutor.lti import keyset
from tutor.lti.models import Identity

pytestmark = pytest.mark.django_db


@pytest.fixture
def clock(monkeypatch):
    """The key set cache's clock, moved by hand: ``clock.later(seconds)``."""
    offset = {"s": 0.0}
    monkeypatch.setattr(keyset, "time", types.SimpleNamespace(time=lambda: time.time() + offset["s"]))

    class Clock:
        def later(self, seconds: float) -> None:
            offset["s"] += seconds

    return Clock()


def launch(platform: FakePlatform, **claims):
    return Browser(platform).launch(**claims)


def forged_launch(platform: FakePlatform, kid: str):
    return Browser(platform).launch(sign={"kid": kid})


@pytest.mark.parametrize("status", [500, 502, 503])
def test_a_key_set_answering_5xx_is_the_try_again_page_not_a_malformed_launch(
    registration, browser, platform, status
):
    platform.jwks_status = status
    before = counts()

    response = browser.launch()

    assert_refused(response, 503, "Try again in a moment")
    assert "malformed" not in response.content.decode()
    assert counts() == before


def test_platform_key_set_unreachable_is_a_503_page(registration, browser, platform):
    login = browser.login()
    token = platform.id_token(nonce=login.nonce)
    platform.stop()

    response = browser.post_launch(token, login.state)

    assert_refused(response, 503, "could not be reached")
    assert platform.base_url not in response.content.decode()
    assert not Identity.objects.exists()


def test_launches_share_one_fetch_of_the_key_set(registration, platform, task):
    for sub in ("s1", "s2", "s3"):
        assert launch(platform, sub=sub).status_code == 302

    assert platform.jwks_fetches() == 1


def test_forged_posts_with_unknown_kids_do_not_fetch_the_key_set_each_time(registration, platform, task):
    assert launch(platform, sub="s1").status_code == 302

    for n in range(5):
        assert_refused(forged_launch(platform, f"forged-{n}"), 403, "not one of the LMS")

    assert platform.jwks_fetches() == 1  # the set was fetched moments ago: an unknown kid is refused


def test_an_unknown_kid_fetches_the_set_again_after_a_while_so_a_rotated_key_works(
    registration, platform, task, clock
):
    assert launch(platform, sub="s1").status_code == 302
    platform.rotate_key()
    clock.later(keyset.KEYSET_MIN_AGE + 1)

    assert launch(platform, sub="s2").status_code == 302
    assert platform.jwks_fetches() == 2
    # A burst of forged kids right after that refresh costs nothing more.
    for n in range(3):
        forged_launch(platform, f"forged-{n}")
    assert platform.jwks_fetches() == 2


@pytest.mark.parametrize(
    ("cache_control", "kept"),
    [
        ("max-age=120", 120),
        ("public, max-age=600, must-revalidate", 600),
        ("", keyset.KEYSET_DEFAULT_AGE),
        ("no-store", keyset.KEYSET_MIN_AGE),  # floored: forged POSTs must not fetch each time
        ("max-age=99999999", keyset.KEYSET_MAX_AGE),
    ],
)
def test_the_key_set_is_kept_as_long_as_its_cache_control_says(
    registration, platform, task, clock, cache_control, kept
):
    if cache_control:
        platform.jwks_headers = {"Cache-Control": cache_control}
    assert launch(platform, sub="s1").status_code == 302

    clock.later(kept - 5)
    assert launch(platform, sub="s2").status_code == 302
    assert platform.jwks_fetches() == 1

    clock.later(10)
    assert launch(platform, sub="s3").status_code == 302
    assert platform.jwks_fetches() == 2


def test_a_hanging_key_set_fails_within_the_timeout_and_holds_no_thread_per_launch(
    registration, platform, task, settings
):
    settings.LTI_JWKS_TIMEOUT = 0.3
    platform.jwks_delay = 3

    started = time.monotonic()
    assert_refused(launch(platform, sub="s1"), 503, "Try again")
    first = time.monotonic() - started
    started = time.monotonic()
    for sub in ("s2", "s3", "s4"):
        assert_refused(launch(platform, sub=sub), 503, "Try again")
    rest = time.monotonic() - started

    assert first < 2.5  # the bounded fetch, not the platform's 3 s
    assert rest < 1.5  # remembered: no launch waits on the hanging LMS again
    assert platform.jwks_fetches() == 1


def test_a_stale_key_set_keeps_verifying_while_the_platform_is_down(registration, platform, task, clock):
    assert launch(platform, sub="s1").status_code == 302
    clock.later(keyset.KEYSET_DEFAULT_AGE + 1)
    platform.jwks_status = 500

    assert launch(platform, sub="s2").status_code == 302

    assert platform.jwks_fetches() == 2  # it tried, and fell back to the keys it had


def test_a_registration_with_another_key_set_url_starts_afresh(registration, platform, task):
    assert launch(platform, sub="s1").status_code == 302
    other = FakePlatform().start()
    try:
        other.key, other.kid = platform.key, platform.kid
        registration.jwks_url = other.jwks_url
        registration.save(update_fields=["jwks_url"])

        assert launch(platform, sub="s2").status_code == 302

        assert other.jwks_fetches() == 1
    finally:
        other.stop()


@pytest.mark.parametrize(
    ("header", "age"),
    [
        ("max-age=300", 300),
        ("s-maxage=10, max-age=900", 900),
        ('max-age="45"', 45),
        ("private, no-cache", keyset.KEYSET_MIN_AGE),
        ("MAX-AGE=3600", 3600),
        ("max-age=1", keyset.KEYSET_MIN_AGE),
        ("garbage", keyset.KEYSET_DEFAULT_AGE),
    ],
)
def test_max_age_reads_cache_control(header, age):
    assert keyset.max_age(header) == age
