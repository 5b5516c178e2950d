"""Log lines (SPEC §10): one JSON object per line, the correlation id on every
line -- ``django.request`` and ``django.server`` lines included -- no line
twice under DEBUG, never a message's content or a query string.

The lines are read from the root logger's own handler (its stream swapped
for a buffer), so what is checked is the configured formatter and filters.
"""

from __future__ import annotations

import io
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.hostile.conftest import wsgi_call
from tutor.celery import CORRELATION_HEADER
from tutor.kernel.correlation import current_or_none, reset_correlation_id, set_correlation_id

ROOT = Path(__file__).resolve().parents[2]
LINE_KEYS = {"timestamp", "level", "logger", "message", "correlation_id"}


@pytest.fixture
def log_lines():
    """The JSON handler's output during the test, as a function returning the parsed lines."""
    [handler] = [h for h in logging.getLogger().handlers if type(h.formatter).__name__ == "JsonFormatter"]
    buffer = io.StringIO()
    previous = handler.setStream(buffer)

    def lines() -> list[dict]:
        text = buffer.getvalue()
        assert text.endswith("\n") or not text
        return [json.loads(line) for line in text.splitlines()]

    yield lines
    handler.setStream(previous)


def test_every_line_is_one_json_object_with_the_fixed_keys(log_lines):
    log = logging.getLogger("tutor.test")
    log.warning('two\nlines and a quote " in one record')
    try:
        raise ValueError("boom")
    except ValueError:
        log.exception("with a traceback")

    first, second = log_lines()

    assert set(first) == LINE_KEYS
    assert set(second) == LINE_KEYS | {"exc_info"}
    assert first["message"] == 'two\nlines and a quote " in one record'
    assert (first["level"], first["logger"]) == ("WARNING", "tutor.test")
    assert "ValueError: boom" in second["exc_info"]


def test_a_404_line_carries_the_requests_correlation_id(db, log_lines):
    response = wsgi_call("GET", "/api/submissions/not-a-uuid/", headers={"X-Correlation-ID": "log-404-id"})

    assert response.status == 404
    assert response.headers["x-correlation-id"] == "log-404-id"
    [line] = [line for line in log_lines() if line["logger"] == "django.request"]
    assert line["correlation_id"] == "log-404-id"
    assert line["status_code"] == 404
    assert line["message"] == "Not Found: /api/submissions/not-a-uuid/"


def test_an_api_4xx_line_has_the_id_and_neither_the_query_string_nor_the_request(
    db, log_lines, student_client
):
    draft = "my secret draft " + "x" * 8000
    response = student_client.get(
        "/api/tutor/context/", {"task": "not-a-uuid", "message": draft}, HTTP_X_CORRELATION_ID="log-400-id"
    )

    assert response.status_code == 400
    lines = log_lines()
    [line] = [line for line in lines if line["logger"] == "django.request"]
    assert line["correlation_id"] == "log-400-id"
    assert line["message"] == "Bad Request: /api/tutor/context/"
    assert all("secret draft" not in json.dumps(entry) for entry in lines)
    assert all("WSGIRequest" not in json.dumps(entry) for entry in lines)


@pytest.mark.django_db
def test_a_tutor_turn_logs_neither_the_message_nor_the_reply(task, student_client, fake_llm, log_lines):
    fake_llm.reply(__import__("httpx").ConnectError("refused"), "the reply text ZQX")
    session = student_client.post("/api/tutor/sessions/", {"task": task.pk}, format="json").json()

    response = student_client.post(
        f"/api/tutor/sessions/{session['id']}/messages/",
        {"content": "my password is hunter2 QWZ"},
        format="json",
        HTTP_X_CORRELATION_ID="turn-id",
    )

    assert response.status_code == 201
    text = json.dumps(log_lines())
    assert "QWZ" not in text and "hunter2" not in text and "ZQX" not in text


def test_the_development_servers_request_line_has_the_id_and_no_query_string(db, log_lines):
    wsgi_call("GET", "/healthz", headers={"X-Correlation-ID": "served-id"}, content_type=None)
    # What runserver's handler logs after the response, from the same thread.
    logging.getLogger("django.server").info(
        '"%s" %s %s',
        "GET /api/tutor/context/?task=1&message=secret%20draft HTTP/1.1",
        "200",
        "123",
        extra={"request": object(), "server_time": "now", "status_code": 200},
    )

    [line] = [line for line in log_lines() if line["logger"] == "django.server"]
    assert line["correlation_id"] == "served-id"
    assert line["message"] == '"GET /api/tutor/context/ HTTP/1.1" 200 123'


def test_a_gunicorn_access_line_has_the_id_the_response_carried(log_lines):
    atoms = {"h": "127.0.0.1", "m": "GET", "U": "/healthz", "s": "200", "{x-correlation-id}o": "gunicorn-id"}
    logging.getLogger("gunicorn.access").info("%(h)s %(m)s %(U)s %(s)s", atoms)

    [line] = [line for line in log_lines() if line["logger"] == "gunicorn.access"]
    assert (line["message"], line["correlation_id"]) == ("127.0.0.1 GET /healthz 200", "gunicorn-id")


@pytest.mark.parametrize("debug", ["1", "0"])
def test_no_line_is_printed_twice_under_debug_or_not(debug):
    code = (
        "import django, logging; django.setup();"
        "logging.getLogger('django.request').warning('request line');"
        "logging.getLogger('django.server').info('server line');"
        "logging.getLogger('django.security.csrf').warning('csrf line');"
        "logging.getLogger('feedback.pipeline').info('app line')"
    )
    # The default level (an operator's LOG_LEVEL would hide the info lines).
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL", "LOG_LEVEL")}
    env.update(DJANGO_SETTINGS_MODULE="tutor.settings", DEBUG=debug, SECRET_KEY="log-test-key")

    result = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
    )

    assert result.returncode == 0, result.stderr
    lines = [json.loads(line) for line in result.stderr.splitlines()]
    assert [line["message"] for line in lines] == ["request line", "server line", "csrf line", "app line"]


def test_a_task_carries_the_senders_correlation_id_as_a_header():
    from celery import signals

    token = set_correlation_id("sender-id")
    try:
        headers: dict = {}
        signals.before_task_publish.send(sender="feedback.tasks.review_attempt", headers=headers, body=())
    finally:
        reset_correlation_id(token)

    assert headers == {CORRELATION_HEADER: "sender-id"}


def test_a_task_runs_under_the_id_of_its_header_and_leaves_none_behind():
    from celery import signals

    class Request:
        pass

    class Task:
        request = Request()

    task = Task()
    setattr(task.request, CORRELATION_HEADER, "header-id")
    assert current_or_none() is None

    signals.task_prerun.send(sender=task, task_id="t1", task=task, args=(), kwargs={})
    during = current_or_none()
    signals.task_postrun.send(
        sender=task, task_id="t1", task=task, args=(), kwargs={}, retval=None, state="SUCCESS"
    )

    assert during == "header-id"
    assert current_or_none() is None


def test_an_eager_task_keeps_the_id_of_the_request_that_ran_it():
    from tutor.celery import app

    seen = []

    @app.task(name="tests.record_correlation_id")
    def record():
        seen.append(current_or_none())

    token = set_correlation_id("eager-id")
    try:
        record.apply()
    finally:
        reset_correlation_id(token)

    assert seen == ["eager-id"]


def test_a_security_line_has_no_traceback_whoever_logs_it(log_lines):
    """Django logs a SuspiciousOperation it handles itself with its traceback:
    the client's fault is one line (tutor.web.guards answers most first)."""
    from django.core.exceptions import TooManyFieldsSent

    try:
        raise TooManyFieldsSent("too many")
    except TooManyFieldsSent as exc:
        logging.getLogger("django.security.TooManyFieldsSent").error("too many", exc_info=exc)
        logging.getLogger("tutor.test").error("kept", exc_info=exc)

    security, other = log_lines()

    assert security["message"] == "too many" and "exc_info" not in security
    assert "TooManyFieldsSent" in other["exc_info"]
