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
from datetime import timedelta

import pytest
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, transaction
from django.utils import timezone

from feedback.models import ReviewAttempt, Submission
from tests.factories import enroll, make_course, make_task
from tutor.models import AuditEvent, Enrollment, ModelCall, TutorMessage, TutorSession
from tutor.rights.notice import notice_version

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
    # What the server left of the request body on the connection.
    unread: int = 0

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
    server: dict | None = None,
) -> WsgiResponse:
    """One request through the WSGI application; ``server`` sets (or, with
    None, removes) variables a server puts in the environ."""
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
    for name, value in (server or {}).items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value
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
    stream = environ["wsgi.input"]
    return WsgiResponse(captured["status"], captured["headers"], data, len(body) - stream.tell())


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
    # One open correction case per decision, so that each operation finds one to decide.
    case_ids: dict[str, str]
    # A second student whose reviewed submission stays the latest: no other
    # operation submits for them, so a regrade request on it can succeed.
    regrader_token: str
    regrade_submission_id: str
    # A lesson in the state each lifecycle operation starts from.
    lesson_ids: dict[str, str]

    def token(self, who: str) -> str:
        return {"staff": self.staff_token, "regrader": self.regrader_token}.get(who, self.student_token)

    def path(self, template: str) -> str:
        if template == "/api/submissions/{id}/regrade-requests/":
            return template.replace("{id}", self.regrade_submission_id)
        for action, case_id in self.case_ids.items():
            if template == f"/api/correction-cases/{{id}}/{action}/":
                return template.replace("{id}", case_id)
        for action, lesson_id in self.lesson_ids.items():
            if template == f"/api/lessons/{{id}}/{action}/":
                return template.replace("{id}", lesson_id)
        return (
            template.replace("{id}", self.submission_id)
            .replace("{session_id}", self.session_id)
            .replace("{attempt_id}", self.attempt_id)
            .replace("{course_id}", str(self.task.course_id))
        )


# Topics of the open cases: a verified fact each, then a conflicting correction.
CASE_TOPICS = {
    "claim": ("北京年均降雨量", "630", "580"),
    "accept": ("上海年均降雨量", "1100", "1200"),
    "reject": ("广州年均降雨量", "1700", "1800"),
    "dispute": ("深圳年均降雨量", "1900", "2000"),
}


def open_cases(course, student) -> dict[str, str]:
    """A correction case per decision operation, made through the real
    detection: one student states a number, another a conflicting one."""
    from corrections.models import CorrectionCase
    from corrections.services.intake import correction_submit

    other = enroll(course, "eve")
    ids = {}
    for action, (topic, first, second) in CASE_TOPICS.items():
        correction_submit(user=student, course=course, content=f"不对，{topic}是 {first}mm 左右")
        correction_submit(user=other, course=course, content=f"实际上{topic}是 {second}mm")
        case = CorrectionCase.objects.filter(course=course, topic__contains=topic[:2]).latest("created_at")
        ids[action] = str(case.pk)
    assert len(set(ids.values())) == len(CASE_TOPICS), ids
    return ids


# The LMS's browser endpoints: LTI 1.3 has the platform's page post a form
# there, and they answer HTML pages (tests/lti covers their refusals). The
# JSON-only transport rules are the API's.
LMS_BROWSER_PATHS = ("/lti/login/", "/lti/launch/")


# The state each lesson transition starts from (SPEC §6 lifecycle).
LESSON_STARTS = {
    "approve": "pending",
    "reject": "pending",
    "inject": "approved",
    "quarantine": "injected",
    "retire": "injected",
}


def lessons_in_each_state(course) -> dict[str, str]:
    from lessons.services.store import lesson_insert

    ids = {}
    for action, status in LESSON_STARTS.items():
        with transaction.atomic():
            lesson = lesson_insert(
                course_id=course.pk,
                title=f"Escape the comparison output ({action})",
                body="Print both values before comparing them.",
                tags=["javascript"],
                symptoms=[f"assertion output unreadable {action}"],
                kind="note",
                source="manual",
                status=status,
                review_by=timezone.localdate() + timedelta(days=60),
                tokens=40,
            )
        ids[action] = str(lesson.pk)
    return ids


# Operations that change something once: the same POST again is a 409 (the
# request reached the view on either spelling of its path).
ONE_SHOT = {
    *(f"/api/lessons/{{id}}/{action}/" for action in LESSON_STARTS),
    "/api/submissions/{id}/regrade-requests/",
    "/api/correction-cases/{id}/accept/",
    "/api/correction-cases/{id}/reject/",
    "/api/correction-cases/{id}/dispute/",
}


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
    regrader = enroll(course, "oscar")
    with django_capture_on_commit_callbacks(execute=True):
        reviewed = wsgi_call(
            "POST",
            "/api/submissions/",
            body=json.dumps({"task": str(task.pk), "evidence": {"report": "first is undefined"}}).encode(),
            token=token_of(regrader),
        )
    assert reviewed.status == 201, reviewed.body
    return World(
        case_ids=open_cases(course, student),
        regrader_token=token_of(regrader),
        regrade_submission_id=reviewed.json()["id"],
        lesson_ids=lessons_in_each_state(course),
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
        ("POST", "/api/submissions/{id}/regrade-requests/"): (
            {"rubric_id": "A3", "reason": "I explained the empty-array case"},
            "regrader",
        ),
        ("POST", "/api/courses/{course_id}/ai-notice/"): ({"version": notice_version()}, "student"),
        ("POST", "/api/corrections/"): ({"content": "不对，杭州年均降雨量是 1400mm 左右"}, "student"),
        ("POST", "/api/correction-cases/{id}/claim/"): ({}, "staff"),
        ("POST", "/api/correction-cases/{id}/accept/"): ({"reason": "the source says so"}, "staff"),
        ("POST", "/api/correction-cases/{id}/reject/"): ({"reason": "no source given"}, "staff"),
        ("POST", "/api/correction-cases/{id}/dispute/"): ({"reason": "sources disagree"}, "staff"),
        ("POST", "/api/lessons/"): (
            {
                "course": world.task.course.slug,
                "title": "Name the empty-array case",
                "body": "Say what first([]) returns.",
                "tags": ["javascript"],
                "symptoms": ["first([]) is undefined"],
            },
            "staff",
        ),
        ("POST", "/api/lessons/{id}/approve/"): ({}, "staff"),
        ("POST", "/api/lessons/{id}/reject/"): ({"reason": "duplicate"}, "staff"),
        ("POST", "/api/lessons/{id}/inject/"): ({}, "staff"),
        ("POST", "/api/lessons/{id}/quarantine/"): ({"reason": "misleading"}, "staff"),
        ("POST", "/api/lessons/{id}/retire/"): ({"reason": "outdated"}, "staff"),
        ("POST", "/api/lessons/deltas/"): (
            {
                "signal_attempt": world.attempt_id,
                "deltas": [
                    {
                        "op": "add",
                        "title": "Check the report names undefined",
                        "body": "The contains check looks for the word undefined.",
                        "tags": ["docs"],
                        "symptoms": ["report does not mention undefined"],
                    }
                ],
            },
            "staff",
        ),
    }


def random_id() -> str:
    return str(uuid.uuid4())
