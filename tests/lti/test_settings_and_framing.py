"""LTI settings (cookies for launches inside an LMS iframe, nested timeouts)
and framing by the LMS (SPEC §12)."""

from __future__ import annotations

import json

import pytest
from django.test import Client

from tests.tutor.test_settings import start

PRINT_COOKIES = (
    "import django, json; django.setup(); from django.conf import settings as s; "
    "print(json.dumps([s.SESSION_COOKIE_SAMESITE, s.SESSION_COOKIE_SECURE, "
    "s.CSRF_COOKIE_SAMESITE, s.CSRF_COOKIE_SECURE, s.SECURE_PROXY_SSL_HEADER]))"
)


def test_cookie_defaults_suit_plain_http_development():
    result = start(PRINT_COOKIES)

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == ["Lax", False, "Lax", False, None]


def test_production_iframe_cookies_are_set_from_the_environment():
    result = start(
        PRINT_COOKIES,
        SESSION_COOKIE_SAMESITE="none",
        SESSION_COOKIE_SECURE="1",
        CSRF_COOKIE_SAMESITE="None",
        CSRF_COOKIE_SECURE="1",
        TRUST_X_FORWARDED_PROTO="1",
    )

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == ["None", True, "None", True, ["HTTP_X_FORWARDED_PROTO", "https"]]


@pytest.mark.parametrize(
    "env, message",
    [
        ({"SESSION_COOKIE_SAMESITE": "None"}, "SESSION_COOKIE_SAMESITE=None needs SESSION_COOKIE_SECURE=1"),
        ({"CSRF_COOKIE_SAMESITE": "None"}, "CSRF_COOKIE_SAMESITE=None needs CSRF_COOKIE_SECURE=1"),
        ({"SESSION_COOKIE_SAMESITE": "sometimes"}, "SESSION_COOKIE_SAMESITE must be Lax, Strict or None"),
        ({"LTI_HTTP_TIMEOUT": "40"}, "LTI timeouts must nest"),
        ({"LTI_SCORE_HARD_TIME_LIMIT": "30"}, "LTI timeouts must nest"),
        ({"LTI_TOOL_URL": "tutor.example.edu"}, "LTI_TOOL_URL must be a URL"),
    ],
)
def test_bad_lti_settings_stop_start_up(env, message):
    result = start(**env)

    assert result.returncode != 0
    assert message in result.stderr


def test_frames_are_refused_without_lms_origins(db, settings):
    settings.LTI_FRAME_ANCESTORS = []

    response = Client().get("/admin/login/")

    assert response["X-Frame-Options"] == "DENY"
    assert "Content-Security-Policy" not in response


def test_lms_origins_may_frame_the_tool(db, settings):
    settings.LTI_FRAME_ANCESTORS = ["https://canvas.example.edu", "https://moodle.example.edu"]

    response = Client().get("/admin/login/")

    assert "X-Frame-Options" not in response
    assert response["Content-Security-Policy"] == (
        "frame-ancestors 'self' https://canvas.example.edu https://moodle.example.edu"
    )
