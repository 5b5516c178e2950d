"""Django's request guards (SPEC §7): every ``SuspiciousOperation`` -- too many
query parameters, form fields or files, a host outside ALLOWED_HOSTS, a
form too large -- is the JSON 400 (413 for the size) on every path: the API,
``/healthz``, the LTI pages, the admin, the client's pages; with one warning
line on Django's security logger and no traceback. Bad cookies are ignored."""

from __future__ import annotations

import logging
from urllib.parse import urlencode

import pytest

from tests.hostile.conftest import assert_refused, row_counts, wsgi_call

# One over Django's DATA_UPLOAD_MAX_NUMBER_FIELDS (1000).
TOO_MANY = urlencode([("a", str(i)) for i in range(1001)])
FORM = "application/x-www-form-urlencoded"

# Paths whose view reads its query string; each gets the JSON 400.
QUERY_PATHS = [
    "/healthz",
    "/api/courses/",
    "/api/tutor/context/",
    "/api/submissions/",
    "/lti/jwks/",
    "/lti/login/",
    "/login/",
    "/admin/login/",
]
# Paths that take a form; each gets the JSON 400 for 1,001 fields.
FORM_PATHS = ["/lti/launch/", "/lti/login/", "/login/", "/admin/login/"]


def no_tracebacks(caplog) -> None:
    """Nothing was logged with a traceback, and the refusal was one warning line."""
    assert not [r for r in caplog.records if r.exc_info], [r.getMessage() for r in caplog.records]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR and r.name != "django.request"]
    assert any(r.name.startswith("django.security.") for r in caplog.records)


@pytest.mark.django_db
@pytest.mark.parametrize("path", QUERY_PATHS)
@pytest.mark.parametrize("signed_in", [False, True])
def test_1001_query_parameters_are_the_json_400_on_every_path(world, caplog, path, signed_in):
    before = row_counts()

    response = wsgi_call(
        "GET", path, query=TOO_MANY, content_type=None, token=world.student_token if signed_in else None
    )

    body = assert_refused(response, before, statuses={400})
    assert body["errors"][0]["code"] == "too_many_fields"
    assert "1000" in body["errors"][0]["detail"]
    no_tracebacks(caplog)


@pytest.mark.django_db
@pytest.mark.parametrize("path", FORM_PATHS)
def test_1001_form_fields_are_the_json_400(world, caplog, path):
    before = row_counts()

    response = wsgi_call("POST", path, body=TOO_MANY.encode(), content_type=FORM)

    body = assert_refused(response, before, statuses={400})
    assert body["errors"][0]["code"] == "too_many_fields"
    no_tracebacks(caplog)


@pytest.mark.django_db
def test_1001_form_fields_on_the_api_are_refused_without_a_500(world, caplog):
    """The API takes JSON only: a form is a 415 before it is read."""
    before = row_counts()

    response = wsgi_call(
        "POST", "/api/submissions/", body=TOO_MANY.encode(), content_type=FORM, token=world.student_token
    )

    assert_refused(response, before, statuses={400, 415})


def multipart(files: int) -> tuple[bytes, str]:
    boundary = "hostileboundary"
    parts = [
        f'--{boundary}\r\nContent-Disposition: form-data; name="f{i}"; filename="f{i}.txt"\r\n'
        f"Content-Type: text/plain\r\n\r\nx\r\n"
        for i in range(files)
    ]
    return ("".join(parts) + f"--{boundary}--\r\n").encode(), f"multipart/form-data; boundary={boundary}"


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/lti/launch/", "/login/", "/admin/login/"])
def test_101_files_are_the_json_400(world, caplog, path):
    before = row_counts()
    body, content_type = multipart(101)  # DATA_UPLOAD_MAX_NUMBER_FILES is 100

    response = wsgi_call("POST", path, body=body, content_type=content_type)

    assert_refused(response, before, statuses={400})
    assert response.json()["errors"][0]["code"] == "too_many_files"
    no_tracebacks(caplog)


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/login/", "/admin/login/"])
def test_a_form_over_the_memory_limit_is_the_json_413(world, settings, caplog, path):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    before = row_counts()

    response = wsgi_call("POST", path, body=b"username=" + b"x" * 2000, content_type=FORM)

    assert_refused(response, before, statuses={413})
    no_tracebacks(caplog)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path", ["/healthz", "/api/courses/", "/lti/jwks/", "/lti/login/", "/admin/", "/login/", "/"]
)
def test_a_host_outside_allowed_hosts_is_the_json_400(world, caplog, path):
    before = row_counts()

    response = wsgi_call("GET", path, content_type=None, headers={"Host": "evil.example"})

    assert_refused(response, before, statuses={400})
    assert not [r for r in caplog.records if r.exc_info]


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/healthz", "/lti/login/", "/login/", "/admin/login/"])
def test_under_debug_a_guard_is_still_the_json_400_not_a_debug_page(world, settings, caplog, path):
    settings.DEBUG = True
    before = row_counts()

    response = wsgi_call("GET", path, query=TOO_MANY, content_type=None)
    posted = wsgi_call("POST", "/admin/login/", body=TOO_MANY.encode(), content_type=FORM)

    assert_refused(response, before, statuses={400})
    assert_refused(posted, before, statuses={400})
    no_tracebacks(caplog)


BAD_COOKIES = [
    "sessionid=not-a-session-key",
    "sessionid=" + "x" * 5000,
    "csrftoken=\x7f\x00broken",
    "messages=forged:message-cookie",
    'sessionid="unterminated',
    "=;;==;sessionid",
]


@pytest.mark.django_db
@pytest.mark.parametrize("cookie", BAD_COOKIES)
@pytest.mark.parametrize("path", ["/", "/login/", "/admin/", "/api/courses/", "/healthz", "/lti/jwks/"])
def test_a_bad_cookie_is_ignored_not_a_500(world, caplog, cookie, path):
    before = row_counts()

    response = wsgi_call("GET", path, content_type=None, headers={"Cookie": cookie})

    # /healthz answers 503 when a configured worker is down (REDIS_URL without a worker).
    answers = (200, 302, 401, 503) if path == "/healthz" else (200, 302, 401)
    assert response.status in answers, response.body[:300]
    if response.status == 503:
        assert response.json()["checks"]["worker"] == "down"
    assert row_counts() == before
    assert not [r for r in caplog.records if r.exc_info]


@pytest.mark.django_db
def test_a_signed_in_session_with_a_bad_csrf_cookie_posting_the_form_is_refused_not_a_500(world):
    response = wsgi_call(
        "POST",
        "/login/",
        body=b"username=mallory&password=x&csrfmiddlewaretoken=abc",
        content_type=FORM,
        headers={"Cookie": "csrftoken=\x7f\x00broken"},
    )

    assert response.status == 403
