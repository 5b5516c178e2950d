"""The OpenAPI document (SPEC §1, §7, §11): served, valid, warning-free."""

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml
from rest_framework.test import APIClient

ROOT = Path(__file__).resolve().parents[2]


def test_schema_is_served_as_openapi_3_to_anyone(db):
    response = APIClient().get("/api/schema/")

    assert response.status_code == 200
    schema = yaml.safe_load(response.content)
    assert schema["openapi"].startswith("3.")
    assert schema["info"]["title"] == "Tutor feedback loop API"
    for path in ("/api/courses/", "/api/courses/{id}/", "/api/tasks/", "/api/tasks/{id}/", "/healthz"):
        assert path in schema["paths"], path


def test_schema_as_json_documents_the_real_shapes(db):
    response = APIClient().get("/api/schema/", {"format": "json"})

    assert response.status_code == 200
    schema = json.loads(response.content)
    components = schema["components"]["schemas"]
    assert set(components["Course"]["properties"]) == {"id", "slug", "title"}
    assert set(components["Task"]["properties"]) == {
        "id",
        "slug",
        "title",
        "course",
        "goal",
        "steps",
        "materials",
        "tags",
        "rubric_version",
        "criteria",
    }
    tasks = schema["paths"]["/api/tasks/"]["get"]
    # Token authentication is documented and listed first.
    assert schema["components"]["securitySchemes"]["tokenAuth"]["in"] == "header"
    assert tasks["security"][0] == {"tokenAuth": []}
    course_param = next(p for p in tasks["parameters"] if p["name"] == "course")
    assert course_param["schema"] == {"type": "string", "format": "uuid"}
    assert "400" in tasks["responses"]  # the filter's field errors are documented
    assert "401" in tasks["responses"]
    health = schema["paths"]["/healthz"]["get"]["responses"]
    assert {"200", "503"} <= set(health)


def test_swagger_ui_is_served(db):
    response = APIClient().get("/api/docs/")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    assert b"swagger-ui" in response.content
    assert b"/api/schema/" in response.content


def test_spectacular_validate_fail_on_warn_exits_zero(tmp_path):
    environ = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    environ.update(DJANGO_SETTINGS_MODULE="tutor.settings", SECRET_KEY="schema-test-key")
    out = tmp_path / "schema.yaml"

    result = subprocess.run(
        [sys.executable, "manage.py", "spectacular", "--validate", "--fail-on-warn", "--file", str(out)],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert result.returncode == 0, result.stderr
    assert "Warning" not in result.stderr
    assert yaml.safe_load(out.read_text())["openapi"].startswith("3.")


def test_an_error_of_the_document_or_its_page_is_in_the_json_error_shape(db):
    """SPEC §7: errors have one JSON shape -- also on the paths whose answer
    is a YAML document or an HTML page (they rendered their errors as YAML
    and as an HTML "405 Method Not Allowed")."""
    client = APIClient()
    cases = [
        (client.post("/api/schema/"), 405, "method_not_allowed"),
        (client.delete("/api/schema"), 405, "method_not_allowed"),
        (client.get("/api/schema/", {"format": "xml"}), 404, "not_found"),
        (client.post("/api/docs/"), 405, "method_not_allowed"),
        (client.options("/api/docs/"), 405, "method_not_allowed"),
    ]
    for response, status, code in cases:
        assert response.status_code == status, response.content
        assert response["Content-Type"] == "application/json", response.content
        body = json.loads(response.content)
        assert body["type"] == "client_error"
        assert [(e["code"], e["attr"]) for e in body["errors"]] == [(code, None)]
