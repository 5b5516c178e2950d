"""One error shape for the whole API (SPEC §7): JSON everywhere, field
messages on bad input, a JSON 404 for unrouted paths and never a 500."""

import json
import uuid

import pytest
from django.test import Client
from django.urls import get_resolver, reverse
from rest_framework.test import APIClient

from tests.factories import client_for
from tutor.views import CourseViewSet


def resolve_handler(status: int):
    """The error view Django itself would call for ``status``."""
    return get_resolver().resolve_error_handler(status)


NOT_FOUND = {
    "type": "client_error",
    "errors": [{"code": "not_found", "detail": "Not found.", "attr": None}],
}


@pytest.mark.parametrize("path", ["/api/nope/", "/nope", "/api/", "/api/tasks/1/extra/", "/healthz//"])
def test_unrouted_path_is_a_json_404(db, path):
    response = Client().get(path)

    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == NOT_FOUND


def test_unrouted_path_is_a_json_404_for_an_authenticated_client_too(student_client):
    response = student_client.get("/api/nope/")

    assert response.status_code == 404
    assert response.json() == NOT_FOUND


def test_unrouted_path_with_a_write_method_is_a_json_404(db):
    response = Client().post("/api/nope/", data="{}", content_type="application/json")

    assert response.status_code == 404
    assert response.json() == NOT_FOUND


def test_bad_filter_value_is_400_with_a_field_message(course, student_client):
    response = student_client.get("/api/tasks/", {"course": "abc"})

    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "type": "validation_error",
        "errors": [{"code": "invalid", "detail": "Enter a valid UUID.", "attr": "course"}],
    }


def test_unacceptable_accept_header_is_406_not_500(course, student_client):
    response = student_client.get("/api/courses/", HTTP_ACCEPT="application/xml")

    assert response.status_code == 406
    assert response.json()["errors"][0]["code"] == "not_acceptable"


def test_unexpected_failure_in_an_api_view_is_a_json_500(course, student, monkeypatch):
    def explode(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(CourseViewSet, "list", explode)
    client = client_for(student)
    client.raise_request_exception = False

    response = client.get("/api/courses/")

    assert response.status_code == 500
    body = response.json()
    assert body["type"] == "server_error"
    assert [e["code"] for e in body["errors"]] == ["error"]
    assert b"boom" not in response.content  # no internals leak to the client


def test_unexpected_failure_outside_the_api_is_a_json_500(db, rf):
    # Django's handler500 for views DRF never sees.
    handler = resolve_handler(500)

    response = handler(rf.get("/"))

    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert json.loads(response.content)["type"] == "server_error"


def test_admin_paths_are_still_html(db):
    # The JSON 404 is for the API; the admin keeps its own login redirect.
    response = Client().get(reverse("admin:index"))

    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_anonymous_error_shape_matches_the_rest(db):
    response = APIClient().get("/api/tasks/", {"course": "abc"})

    # Authentication runs before filtering: no field detail leaks to anonymous callers.
    assert response.status_code == 401
    assert response.json()["type"] == "client_error"


@pytest.mark.parametrize("action", ["reviews", "verdicts"])
def test_format_suffix_routes_do_not_exist(student_client, action):
    response = student_client.post(f"/api/submissions/{uuid.uuid4()}/{action}.json", {}, format="json")

    assert response.status_code == 404
    assert response.json()["errors"][0]["code"] == "not_found"


# --- many errors at once: the first ones listed, the rest counted ---------------


def test_thousands_of_unknown_evidence_keys_are_one_small_400(student_client, task):
    """A 1 MB evidence with 100,000 unknown keys (in ``evidence.ci`` and in
    ``evidence`` itself) was answered with one error per key: a 10 MB body,
    seconds of work on a web worker. The first keys are named, the rest counted."""
    from feedback.models import Submission

    for evidence in (
        {"report": "x", "ci": {f"k{i}": 0 for i in range(100_000)}},
        {"report": "x", **{f"k{i}": 0 for i in range(50_000)}},
    ):
        body = json.dumps({"task": str(task.pk), "evidence": evidence})
        response = student_client.post("/api/submissions/", body, content_type="application/json")

        assert response.status_code == 400
        assert len(response.content) < 5_000
        errors = response.json()["errors"]
        where = "evidence.ci" if "ci" in evidence else "evidence"
        assert len(errors) == 1 and errors[0]["attr"] == where, errors
        assert "unknown keys" in errors[0]["detail"] and "k0, k1, k10" in errors[0]["detail"]
        assert "allowed:" in errors[0]["detail"]
    assert not Submission.objects.exists()


def test_a_few_unknown_keys_are_each_their_own_field(student_client, task):
    body = {"task": str(task.pk), "evidence": {"report": "x", "reports": "y", "repo": "z"}}
    response = student_client.post("/api/submissions/", body, format="json")

    assert response.status_code == 400
    assert sorted(e["attr"] for e in response.json()["errors"]) == ["evidence.repo", "evidence.reports"]


def test_thousands_of_invalid_items_list_the_first_errors_and_count_the_rest(staff_client, course):
    """Any field: beyond ``MAX_LISTED_ERRORS`` the errors are counted in one last entry."""
    from lessons.models import Lesson
    from tutor.web.errors import MAX_LISTED_ERRORS

    body = {"course": course.slug, "title": "t", "body": "b", "tags": [["not text"]] * 5_000}
    response = staff_client.post("/api/lessons/", body, format="json")

    assert response.status_code == 400
    errors = response.json()["errors"]
    assert len(errors) == MAX_LISTED_ERRORS + 1
    assert [e["attr"] for e in errors[:2]] == ["tags.0", "tags.1"]
    assert errors[-1] == {
        "code": "too_many_errors",
        "detail": f"{5_000 - MAX_LISTED_ERRORS} more errors are not listed.",
        "attr": None,
    }
    assert not Lesson.objects.exists()


# --- a Host outside ALLOWED_HOSTS: the error shape, DEBUG or not ----------------


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize(
    ("method", "path"), [("get", "/api/courses/"), ("get", "/healthz"), ("post", "/api/submissions/")]
)
def test_a_host_outside_allowed_hosts_is_a_json_400(db, settings, caplog, debug, method, path):
    """Under DEBUG, Django answered with its HTML debug page (the settings
    and the request laid out); SPEC §7: an API path never answers HTML."""
    settings.DEBUG = debug
    client = Client(HTTP_HOST="evil.example")

    response = getattr(client, method)(path)

    assert response.status_code == 400
    assert response["Content-Type"] == "application/json"
    assert response.json() == {
        "type": "client_error",
        "errors": [{"code": "bad_request", "detail": "Bad request.", "attr": None}],
    }
    assert "X-Correlation-ID" in response
    assert any(r.name == "django.security.DisallowedHost" for r in caplog.records)


@pytest.mark.parametrize(
    ("header", "says"),
    [
        ("Bearer 0123456789abcdef", 'uses the "Bearer" scheme'),
        ("Basic dXNlcjpwYXNz", 'uses the "Basic" scheme'),
        ("0123456789abcdef0123456789abcdef01234567", "uses a header without a scheme"),
    ],
    ids=["bearer", "basic", "bare-key"],
)
def test_a_wrong_authorization_scheme_is_told_the_expected_one(db, header, says):
    response = APIClient().get("/api/courses/", HTTP_AUTHORIZATION=header)

    assert response.status_code == 401
    error = response.json()["errors"][0]
    assert error["code"] == "not_authenticated"
    assert says in error["detail"]
    assert "send `Authorization: Token <key>`" in error["detail"]
    assert "0123456789abcdef" not in error["detail"]  # a key is never echoed


def test_no_authorization_header_keeps_the_plain_401(db):
    response = APIClient().get("/api/courses/")

    assert response.json()["errors"][0]["detail"] == "Authentication credentials were not provided."


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded"])
def test_a_body_that_is_not_json_is_told_to_send_application_json(student_client, task, content_type):
    response = student_client.generic(
        "POST", "/api/submissions/", json.dumps({"task": str(task.pk)}), content_type=content_type
    )

    assert response.status_code == 415
    error = response.json()["errors"][0]
    assert error["code"] == "unsupported_media_type"
    expected = "send the body as JSON with `Content-Type: application/json`."
    assert error["detail"] == f'Unsupported media type "{content_type}": {expected}'


def test_the_schema_documents_what_to_send_instead(db):
    schema = Client().get("/api/schema/", HTTP_ACCEPT="application/json").json()

    responses = schema["paths"]["/api/submissions/"]["post"]["responses"]
    assert "`Authorization: Token <key>`" in responses["401"]["description"]
    assert "`Content-Type: application/json`" in responses["415"]["description"]
