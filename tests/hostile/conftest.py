"""Hostile input through the production WSGI application (SPEC §7, §10).

``wsgi_call`` drives ``tutor.wsgi.application`` -- the object gunicorn
serves, with its whole middleware stack (static files, trailing slashes,
correlation ids) and the request body read from ``wsgi.input`` as a server
hands it over -- with a hand-built WSGI environ. Each case asserts what
SPEC §7 promises for any input: a status below 500, a JSON error body, and
no row added or changed.
"""

from __future__ import annotations

import io
import json
import sys
import uuid
from dataclasses import dataclass

import pytest
from django.core.signals import request_finished, request_started
from django.db import close_old_connections

from feedback.models import ReviewAttempt, Submission
from tests.factories import enroll, make_course, make_task
from tutor.models import AuditEvent, Enrollment, ModelCall, TutorMessage, TutorSession

# Imported at collection, not in a test: building the WSGI application runs
# django.setup(), whose logging configuration would drop the handlers pytest
# adds for the test that happens to import it first.
from tutor.wsgi import application  # noqa: E402

COUNTED = (Submission, ReviewAttempt, TutorSession, TutorMessage, ModelCall, AuditEvent)


@dataclass
class WsgiResponse:
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self):
        return json.loads(self.body)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "")


def wsgi_call(
    method: str,
    path: str,
    *,
    body: bytes = b"",
    content_type: str | None = "application/json",
    query: str = "",
    token: str | None = None,
    headers: dict[str, str] | None = None,
) -> WsgiResponse:
    environ = {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": query,
        "SERVER_NAME": "testserver",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    if content_type is not None:
        environ["CONTENT_TYPE"] = content_type
    if token is not None:
        environ["HTTP_AUTHORIZATION"] = f"Token {token}"
    for name, value in (headers or {}).items():
        environ["HTTP_" + name.upper().replace("-", "_")] = value
    captured: dict = {}

    def start_response(status, response_headers, exc_info=None):
        captured["status"] = int(status.split(" ", 1)[0])
        captured["headers"] = {k.lower(): v for k, v in response_headers}

    # As Django's test client does: the request signals would close the test
    # transaction's connection.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        result = application(environ, start_response)
        try:
            data = b"".join(result)
        finally:
            if hasattr(result, "close"):
                result.close()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    return WsgiResponse(captured["status"], captured["headers"], data)


def row_counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in COUNTED}


def assert_refused(response: WsgiResponse, before: dict[str, int], statuses=None) -> dict:
    """Below 500, a JSON error body of the API's one shape, nothing stored."""
    assert response.status < 500, response.body[:500]
    if statuses is not None:
        assert response.status in statuses, (response.status, response.body[:500])
    assert response.content_type.startswith("application/json"), response.headers
    body = response.json()
    assert body["type"] in ("validation_error", "client_error"), body
    assert body["errors"] and all({"code", "detail", "attr"} <= set(e) for e in body["errors"]), body
    assert row_counts() == before
    return body


def token_of(user) -> str:
    from rest_framework.authtoken.models import Token

    return Token.objects.get_or_create(user=user)[0].key


@dataclass
class World:
    """A course with a student who has a reviewed submission and an open
    tutor session with one exchange, and a member of staff: real ids for
    every path and body."""

    task: object
    student: object
    staff: object
    student_token: str
    staff_token: str
    submission_id: str
    attempt_id: str
    session_id: str

    def path(self, template: str) -> str:
        return (
            template.replace("{id}", self.submission_id)
            .replace("{session_id}", self.session_id)
            .replace("{attempt_id}", self.attempt_id)
        )


@pytest.fixture
def world(db, django_capture_on_commit_callbacks) -> World:
    course = make_course("hostile-101")
    task = make_task(course)
    student = enroll(course, "mallory")
    staff = enroll(course, "trent", Enrollment.Role.STAFF)
    student_token = token_of(student)
    with django_capture_on_commit_callbacks(execute=True):
        created = wsgi_call(
            "POST",
            "/api/submissions/",
            body=json.dumps({"task": str(task.pk), "evidence": {"report": "first is undefined"}}).encode(),
            token=student_token,
        )
    assert created.status == 201, created.body
    submission = created.json()
    opened = wsgi_call(
        "POST", "/api/tutor/sessions/", body=json.dumps({"task": str(task.pk)}).encode(), token=student_token
    )
    assert opened.status == 201, opened.body
    session_id = opened.json()["id"]
    sent = wsgi_call(
        "POST",
        f"/api/tutor/sessions/{session_id}/messages/",
        body=json.dumps({"content": "what now?"}).encode(),
        token=student_token,
    )
    assert sent.status == 201, sent.body
    return World(
        task=task,
        student=student,
        staff=staff,
        student_token=student_token,
        staff_token=token_of(staff),
        submission_id=submission["id"],
        attempt_id=submission["attempts"][0]["id"],
        session_id=session_id,
    )


def valid_bodies(world: World) -> dict[tuple[str, str], tuple[dict, str]]:
    """(method, path template) -> (a body the operation accepts, who sends it)."""
    task = str(world.task.pk)
    return {
        ("POST", "/api/submissions/"): (
            {
                "task": task,
                "evidence": {
                    "report": "first() returns undefined",
                    "files": {"src/first.js": "export const first = (xs) => xs[0];"},
                    "ci": {"status": "failed", "exit_code": 1, "log_tail": "1 failing"},
                    "head_sha": "4f2c1e9",
                    "repo_url": "https://git.example.org/mallory/first",
                },
            },
            "student",
        ),
        ("POST", "/api/submissions/{id}/reviews/"): ({"force": True}, "staff"),
        ("POST", "/api/submissions/{id}/verdicts/"): (
            {
                "criteria": [{"rubric_id": "A3", "status": "PASS", "reason": "explained well"}],
                "next_step": "Go",
            },
            "staff",
        ),
        ("POST", "/api/tutor/sessions/"): ({"task": task, "new": False}, "student"),
        ("POST", "/api/tutor/sessions/{session_id}/messages/"): ({"content": "and now?"}, "student"),
        ("POST", "/api/tutor/context/"): ({"task": task, "message": "a long draft"}, "student"),
    }


def random_id() -> str:
    return str(uuid.uuid4())
