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
