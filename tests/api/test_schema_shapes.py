"""The OpenAPI document types what the API answers (SPEC §7): results,
evidence, the context preview, the paginated message list, the error bodies
of 409/413/503, and links between operations for stateful fuzzing. Answers
are validated against the document here too, so the two cannot drift."""

from __future__ import annotations

import json

import jsonschema
import pytest
from rest_framework.test import APIClient

from tests.factories import client_for


@pytest.fixture(scope="module")
def schema(django_db_blocker):
    with django_db_blocker.unblock():
        response = APIClient().get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    return json.loads(response.content)


def resolve(schema: dict, node: dict) -> dict:
    """The schema a node stands for: through $ref and a lone allOf (read-only fields)."""
    while "$ref" in node or len(node.get("allOf", ())) == 1:
        node = node["allOf"][0] if "allOf" in node else node
        if "$ref" in node:
            node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def response_schema(schema, path, method, status) -> dict:
    return schema["paths"][path][method]["responses"][str(status)]["content"]["application/json"]["schema"]


def validate(schema: dict, path: str, method: str, status: int, body) -> None:
    """``body`` against the documented response of ``status`` (OpenAPI 3.0's
    ``nullable`` turned into JSON Schema's null type)."""

    def convert(node):
        if isinstance(node, dict):
            node = {k: convert(v) for k, v in node.items() if k not in ("readOnly", "writeOnly", "example")}
            if node.pop("nullable", False):
                node = {"anyOf": [node, {"type": "null"}]}
            if "$ref" in node:
                node["$ref"] = node["$ref"].replace("#/components/schemas/", "#/$defs/")
            return node
        if isinstance(node, list):
            return [convert(v) for v in node]
        return node

    document = {
        **convert(response_schema(schema, path, method, status)),
        "$defs": convert(schema["components"]["schemas"]),
    }
    jsonschema.validate(body, document)


def test_attempt_result_and_submission_evidence_are_typed(schema):
    attempt = resolve(schema, {"$ref": "#/components/schemas/Attempt"})
    result = attempt["properties"]["result"]
    assert result["nullable"] is True
    review_result = resolve(schema, result["allOf"][0])
    assert set(review_result["required"]) == {"overall", "criteria", "next_step"}
    criterion = resolve(schema, review_result["properties"]["criteria"]["items"])
    assert set(criterion["properties"]) == {
        "rubric_id",
        "criterion",
        "kind",
        "status",
        "reason",
        "evidence",
        "basis",
    }

    submission = resolve(schema, {"$ref": "#/components/schemas/Submission"})
    evidence = resolve(schema, submission["properties"]["evidence"])
    assert set(evidence["properties"]) == {"report", "files", "ci", "head_sha", "repo_url"}
    assert evidence["properties"]["files"]["additionalProperties"] == {"type": "string"}
    listed = resolve(schema, response_schema(schema, "/api/submissions/", "get", 200))
    item = resolve(schema, listed["properties"]["results"]["items"])
    assert "evidence" not in item["properties"] and "evidence_summary" in item["properties"]


def test_the_message_list_is_documented_as_the_paginated_answer_it_is(schema):
    operation = schema["paths"]["/api/tutor/sessions/{session_id}/messages/"]["get"]
    page = resolve(schema, response_schema(schema, "/api/tutor/sessions/{session_id}/messages/", "get", 200))

    assert set(page["properties"]) == {"next", "previous", "results"}
    assert {p["name"] for p in operation["parameters"]} >= {"cursor", "page_size"}
    assert "400" in operation["responses"]  # a forged cursor


def test_409_413_and_503_have_bodies(schema):
    messages = schema["paths"]["/api/tutor/sessions/{session_id}/messages/"]["post"]["responses"]
    for status, code in (("409", "conflict"), ("503", "model_unavailable"), ("413", "payload_too_large")):
        body = resolve(schema, messages[status]["content"]["application/json"]["schema"])
        error = resolve(schema, body["properties"]["errors"]["items"])
        assert code in resolve(schema, error["properties"]["code"])["enum"]
    assert "409" in schema["paths"]["/api/submissions/{id}/reviews/"]["post"]["responses"]
    assert "413" in schema["paths"]["/api/submissions/"]["post"]["responses"]
    assert "413" not in schema["paths"]["/api/submissions/"]["get"]["responses"]


def test_the_context_preview_is_typed_and_offered_as_a_post(schema):
    context = resolve(schema, response_schema(schema, "/api/tutor/context/", "post", 200))
    block = resolve(schema, context["properties"]["feedback"])

    assert set(block["required"]) == {"state", "submission_id", "attempt_id"}
    assert "items" in block["properties"]
    request = schema["paths"]["/api/tutor/context/"]["post"]["requestBody"]["content"]
    assert list(request) == ["application/json"]  # JSON bodies only
    meta = resolve(schema, context["properties"]["meta"])
    assert {"correlation_id", "feedback_state", "feedback_rubric_ids", "omitted"} <= set(meta["required"])


def test_operations_are_linked_for_stateful_fuzzing(schema):
    created = schema["paths"]["/api/submissions/"]["post"]["responses"]["201"]["links"]
    assert created["GetFirstAttempt"] == {
        "operationId": "api_review_attempts_retrieve",
        "parameters": {"id": "$response.body#/attempts/0/id"},
    }
    opened = schema["paths"]["/api/tutor/sessions/"]["post"]["responses"]["201"]["links"]
    assert opened["SendMessage"]["parameters"] == {"session_id": "$response.body#/id"}


def test_health_documents_the_model_check(schema):
    health = resolve(schema, response_schema(schema, "/healthz", "get", 200))
    checks = resolve(schema, health["properties"]["checks"])
    assert set(checks["properties"]) == {"database", "broker", "worker", "model"}


@pytest.mark.django_db
def test_real_answers_match_their_documented_shapes(schema, task, student, staff, student_client, fake_llm):
    fake_llm.default = json.dumps(
        {
            "verdicts": [{"rubric_id": "A3", "status": "FAIL", "reason": "r", "evidence": "e"}],
            "next_step": "s",
        }
    )
    created = student_client.post(
        "/api/submissions/",
        {"task": task.pk, "evidence": {"report": "x", "files": {"a": "b"}}},
        format="json",
    )
    validate(schema, "/api/submissions/", "post", 201, created.json())
    submission = created.json()["id"]
    validate(schema, "/api/submissions/", "get", 200, student_client.get("/api/submissions/").json())
    attempt = created.json()["attempts"][0]["id"]
    validate(
        schema,
        "/api/review-attempts/{id}/",
        "get",
        200,
        student_client.get(f"/api/review-attempts/{attempt}/").json(),
    )
    verdict = client_for(staff).post(
        f"/api/submissions/{submission}/verdicts/",
        {"criteria": [{"rubric_id": "A3", "status": "PASS", "reason": "ok"}]},
        format="json",
    )
    validate(schema, "/api/submissions/{id}/verdicts/", "post", 201, verdict.json())
    retry = student_client.post(f"/api/submissions/{submission}/reviews/", {}, format="json")
    assert retry.status_code == 409
    validate(schema, "/api/submissions/{id}/reviews/", "post", 409, retry.json())

    session = student_client.post("/api/tutor/sessions/", {"task": task.pk}, format="json").json()
    fake_llm.default = "a reply"
    sent = student_client.post(
        f"/api/tutor/sessions/{session['id']}/messages/", {"content": "hi"}, format="json"
    )
    validate(schema, "/api/tutor/sessions/{session_id}/messages/", "post", 201, sent.json())
    history = student_client.get(f"/api/tutor/sessions/{session['id']}/messages/").json()
    validate(schema, "/api/tutor/sessions/{session_id}/messages/", "get", 200, history)
    assert history["results"][1]["context_meta"]["feedback_state"] == "current"  # A1: no CI result
    assert history["results"][0]["context_meta"] is None  # the student's own message
    bad_cursor = student_client.get(f"/api/tutor/sessions/{session['id']}/messages/", {"cursor": "cD1hYmM="})
    validate(schema, "/api/tutor/sessions/{session_id}/messages/", "get", 400, bad_cursor.json())
    for preview in (
        student_client.get("/api/tutor/context/", {"task": task.pk, "message": "hi"}),
        student_client.post("/api/tutor/context/", {"task": task.pk, "message": "hi"}, format="json"),
    ):
        validate(schema, "/api/tutor/context/", "get", 200, preview.json())

    fake_llm.default = lambda body: __import__("httpx").Response(503)
    down = student_client.post(
        f"/api/tutor/sessions/{session['id']}/messages/", {"content": "hi"}, format="json"
    )
    assert down.status_code == 503
    validate(schema, "/api/tutor/sessions/{session_id}/messages/", "post", 503, down.json())


@pytest.mark.django_db
def test_the_post_preview_equals_the_get_preview_and_has_no_side_effects(task, student, student_client):
    from tutor.models import ModelCall, TutorSession

    draft = "a draft " * 900  # 7200 characters: too long for a URL under gunicorn, fine in a body

    posted = student_client.post("/api/tutor/context/", {"task": task.pk, "message": draft}, format="json")
    got = student_client.get("/api/tutor/context/", {"task": task.pk, "message": draft})

    assert posted.status_code == got.status_code == 200
    assert {k: v for k, v in posted.json().items() if k != "meta"} == {
        k: v for k, v in got.json().items() if k != "meta"
    }
    assert posted.json()["messages"][-1] == {"role": "user", "content": draft}
    assert not TutorSession.objects.exists() and not ModelCall.objects.exists()
    for body, attr in (
        ({"message": "x"}, "task"),
        ({"task": str(task.pk), "message": "x" * 8001}, "message"),
    ):
        refused = student_client.post("/api/tutor/context/", body, format="json")
        assert refused.status_code == 400
        assert refused.json()["errors"][0]["attr"] == attr
    empty = student_client.post("/api/tutor/context/", {"task": task.pk, "message": ""}, format="json")
    assert [m["role"] for m in empty.json()["messages"]] == ["system"]
