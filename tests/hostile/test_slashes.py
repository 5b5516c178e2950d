"""Every path answers the same with or without its trailing slash (SPEC §7):
never a redirect (a client re-sends a redirected POST as a GET, and the
submission was lost), never an HTML page, DEBUG or not."""

from __future__ import annotations

import json

import pytest
from drf_spectacular.generators import SchemaGenerator

from feedback.models import Submission
from tests.hostile.conftest import LMS_BROWSER_PATHS, ONE_SHOT, row_counts, valid_bodies, wsgi_call


def spellings(path: str) -> tuple[str, str]:
    return (path, path.rstrip("/")) if path.endswith("/") else (path, path + "/")


def schema_paths() -> list[str]:
    return sorted(SchemaGenerator().get_schema(request=None, public=True)["paths"])


@pytest.mark.parametrize("debug", [False, True], ids=["debug-off", "debug-on"])
def test_a_post_without_its_trailing_slash_stores_the_submission_once(world, settings, debug):
    settings.DEBUG = debug
    before = Submission.objects.count()
    body = json.dumps({"task": str(world.task.pk), "evidence": {"report": "no slash"}}).encode()

    response = wsgi_call("POST", "/api/submissions", body=body, token=world.student_token)

    assert response.status == 201, response.body[:300]
    assert response.content_type == "application/json"
    assert Submission.objects.count() == before + 1
    stored = Submission.objects.get(pk=response.json()["id"])
    assert stored.evidence["report"] == "no slash"


@pytest.mark.parametrize("path", schema_paths())
def test_get_answers_the_same_on_both_spellings_of_every_path(world, settings, path):
    settings.REDIS_URL = None  # /healthz: the embedded default, whatever broker the run has
    with_slash, other = spellings(world.path(path))
    token = world.staff_token if "review-agreement" in path else world.student_token
    query = f"task={world.task.pk}" if "context" in path else ""

    first = wsgi_call("GET", with_slash, query=query, token=token)
    second = wsgi_call("GET", other, query=query, token=token)

    assert first.status == second.status, (with_slash, first.status, other, second.status)
    assert first.status < 300 or first.status in (400, 403, 404, 405)
    assert "location" not in second.headers
    assert first.content_type == second.content_type
    if path in LMS_BROWSER_PATHS:
        return  # an HTML page for the LMS's browser
    assert first.content_type == "application/json"
    assert first.json().keys() == second.json().keys()


def test_post_answers_the_same_on_both_spellings_of_every_operation(world):
    for (method, template), (body, who) in valid_bodies(world).items():
        token = world.token(who)
        for attempt, path in enumerate(spellings(world.path(template))):
            before = row_counts()
            response = wsgi_call(method, path, body=json.dumps(body).encode(), token=token)
            expected = (409,) if attempt and template in ONE_SHOT else (200, 201)
            assert response.status in expected, (path, response.status, response.body[:300])
            assert "location" not in response.headers
            assert response.content_type == "application/json"
            if response.status == 201 and "sessions/" in path and path.endswith(("messages", "messages/")):
                assert row_counts()["TutorMessage"] == before["TutorMessage"] + 2


@pytest.mark.parametrize("debug", [False, True], ids=["debug-off", "debug-on"])
@pytest.mark.parametrize("path", ["/healthz", "/healthz/"])
def test_healthz_answers_on_both_spellings(db, settings, path, debug):
    settings.DEBUG = debug
    settings.REDIS_URL = None

    response = wsgi_call("GET", path, content_type=None)

    assert response.status == 200, response.body
    assert response.json()["status"] == "ok"


@pytest.mark.parametrize("debug", [False, True], ids=["debug-off", "debug-on"])
@pytest.mark.parametrize("method", ["GET", "POST"])
@pytest.mark.parametrize("path", ["/api/nope", "/api/nope/", "/healthz//", "/api/submissions/x/", "/nope"])
def test_an_unrouted_path_is_a_json_404_on_any_spelling_debug_or_not(world, settings, debug, method, path):
    settings.DEBUG = debug
    before = row_counts()

    response = wsgi_call(method, path, body=b"{}", token=world.student_token)

    assert response.status == 404, response.body[:300]
    assert response.content_type == "application/json"
    assert response.json()["errors"][0]["code"] == "not_found"
    assert row_counts() == before


def test_the_admin_keeps_its_own_pages(world):
    # The admin is HTML on purpose; its login redirect is a GET to a page.
    response = wsgi_call("GET", "/admin", content_type=None)

    assert response.status == 302
    assert "/admin/login/" in response.headers["location"]
