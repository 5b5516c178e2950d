"""The shipped web server (SPEC §10 Production): gunicorn's configuration is
derived from the model settings and start-up refuses timeouts that do not
nest; ``manage.py serve`` (``make run``) is gunicorn and holds 50 concurrent
clients; whitenoise serves the admin's and Swagger UI's files offline.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from http import HTTPStatus
from pathlib import Path

import pytest

from tests.hostile.conftest import wsgi_call
from tests.tutor.test_settings import SETTINGS_VARIABLES, start

ROOT = Path(__file__).resolve().parents[2]


def test_the_worker_timeout_exceeds_the_tutor_requests_worst_case():
    code = (
        "import json; from tutor.ops import gunicorn_conf as g; from django.conf import settings as s;"
        "from gunicorn.util import load_class; from gunicorn.workers.gthread import ThreadWorker;"
        "print(json.dumps({'timeout': g.timeout, 'budget': s.TUTOR_REQUEST_BUDGET,"
        "'worker_class': g.worker_class, 'workers': g.workers, 'threads': g.threads,"
        "'format': g.access_log_format, 'bind': g.bind,"
        "'gthread': issubclass(load_class(g.worker_class), ThreadWorker)}))"
    )

    result = start(code, REDIS_URL="redis://127.0.0.1:1/0", TUTOR_LLM_TIMEOUT="25", TUTOR_LLM_RETRIES="2")

    assert result.returncode == 0, result.stderr
    conf = json.loads(result.stdout.strip().splitlines()[-1])
    # 3 tries x 25 s + 0.5 s + 1 s backoff + the request's own 10 s.
    assert conf["budget"] == 86.5
    assert conf["timeout"] > conf["budget"]
    assert (conf["gthread"], conf["workers"], conf["threads"]) == (True, 2, 8)
    assert conf["bind"] == ["127.0.0.1:8000"]
    # The path without its query string: a draft message never reaches the access log.
    assert "%(U)s" in conf["format"] and "%(r)s" not in conf["format"] and "%(q)s" not in conf["format"]


def test_without_a_broker_the_budget_covers_an_eager_review_in_the_request():
    code = "from django.conf import settings as s; print(s.WEB_REQUEST_BUDGET, s.WEB_TIMEOUT)"

    result = start(code, TUTOR_LLM_BASE_URL="http://llm.invalid/v1", TUTOR_LLM_MODEL="m")

    assert result.returncode == 0, result.stderr
    budget, timeout = result.stdout.split()
    # REVIEW_MAX_GENERATIONS (3) x (3 tries x 30 s + 1.5 s backoff) + 10 s.
    assert float(budget) == 284.5
    assert int(timeout) > float(budget)


def test_start_up_refuses_a_web_timeout_below_the_tutor_request_budget():
    result = start(WEB_TIMEOUT="60", REDIS_URL="redis://127.0.0.1:1/0")

    assert result.returncode != 0
    assert "WEB_TIMEOUT (60s) must exceed the worst-case web request 102s" in result.stderr


def test_gunicorn_itself_refuses_to_start_with_timeouts_that_do_not_nest():
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS_VARIABLES}
    env.update(DJANGO_SETTINGS_MODULE="tutor.settings", SECRET_KEY="gunicorn-test", WEB_TIMEOUT="5")

    result = subprocess.run(
        [sys.executable, "-m", "gunicorn", "--check-config", "tutor.wsgi"],
        cwd=ROOT,  # gunicorn reads ./gunicorn.conf.py, as `gunicorn tutor.wsgi` in the README does
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode != 0
    assert "WEB_TIMEOUT" in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("env", "line"),
    [
        ({"SECRET_KEY": None}, "tutor: cannot start: SECRET_KEY must be set when DEBUG is off"),
        (
            {"DATABASE_URL": "postgres://tutor:tutor@127.0.0.1:1/tutor"},
            "tutor: cannot start: the database of DATABASE_URL cannot be reached: ",
        ),
        (
            {"WEB_TIMEOUT": "5"},
            "tutor: cannot start: WEB_TIMEOUT (5s) must exceed the worst-case web request",
        ),
        ({"DEBUG": "maybe"}, "tutor: cannot start: DEBUG must be one of"),
    ],
)
def test_a_start_up_problem_is_one_line_and_an_exit_before_gunicorn_listens(tmp_path, env, line):
    """As the systemd unit starts it (deploy/systemd/tutor-web.service): each
    problem is one line on stderr and exit status 2; gunicorn never listens
    (before, a missing SECRET_KEY showed as "Worker failed to boot")."""
    environ = {
        k: v for k, v in os.environ.items() if k not in SETTINGS_VARIABLES and k != "PYTEST_CURRENT_TEST"
    }
    environ.update(
        DJANGO_SETTINGS_MODULE="tutor.settings",
        SECRET_KEY="start-up-test-key",
        DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}",
        WEB_BIND=f"127.0.0.1:{free_port()}",
    )
    for name, value in env.items():
        if value is None:
            environ.pop(name, None)
        else:
            environ[name] = value

    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "gunicorn",
            "--config",
            "python:tutor.ops.gunicorn_conf",
            "tutor.wsgi:application",
        ],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 2
    [printed] = (result.stdout + result.stderr).strip().splitlines()
    assert printed.startswith(line), printed
    assert "Listening" not in result.stdout + result.stderr


def test_static_files_are_served_by_the_production_app_with_debug_off(db, settings):
    assert settings.DEBUG is False

    css = wsgi_call("GET", "/static/admin/css/base.css", content_type=None)
    docs = wsgi_call("GET", "/api/docs/", content_type=None)

    assert css.status == 200 and css.content_type.startswith("text/css")
    assert docs.status == 200
    assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', docs.body.decode())
    assert any(a.endswith("swagger-ui-bundle.js") for a in assets)
    assert not re.search(r'(?:src|href)="https?://', docs.body.decode())  # no CDN: works offline
    for asset in assets:
        response = wsgi_call("GET", asset, content_type=None)
        assert response.status == 200, asset
        assert len(response.body) > 100, asset


# --- manage.py serve -----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """``manage.py serve`` on the embedded default: its own SQLite file, the
    demo data, DEBUG off, on a free port of the loopback."""
    workdir = tmp_path_factory.mktemp("serve")
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS_VARIABLES and not k.startswith("PYTEST_")}
    env.update(
        DJANGO_SETTINGS_MODULE="tutor.settings",
        SECRET_KEY="serve-test-secret",
        ALLOWED_HOSTS="127.0.0.1",
        DATABASE_URL=f"sqlite:///{workdir / 'serve.sqlite3'}",
        CACHE_DIR=str(workdir / "cache"),
        TUTOR_THROTTLE_SUBMISSIONS="100000/min",
        TUTOR_THROTTLE_MESSAGES="100000/min",
    )
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "--noinput"], cwd=ROOT, env=env, check=True, capture_output=True)
    demo = subprocess.run([*manage, "demo"], cwd=ROOT, env=env, check=True, capture_output=True, text=True)
    tokens = dict(re.findall(r"^\s*(\w[\w-]*)\s+student\s+(\w+)$", demo.stdout, re.MULTILINE))
    port = free_port()
    log_path = workdir / "serve.log"
    with log_path.open("wb") as log:
        server = subprocess.Popen(
            [*manage, "serve", f"127.0.0.1:{port}"], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
        )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                urllib.request.urlopen(f"{base}/healthz", timeout=2)
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):  # not up yet, or still starting
                if server.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"serve did not start:\n{log_path.read_text()}") from None
                time.sleep(0.2)
    except BaseException:
        server.kill()  # a server that never came up must not outlive the test
        server.wait()
        raise
    yield {"base": base, "tokens": tokens, "log": log_path, "env": env}
    server.send_signal(signal.SIGTERM)
    try:
        server.wait(timeout=30)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


def call(base, method, path, token=None, body=None, headers=None):
    request = urllib.request.Request(
        base + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={
            "Content-Type": "application/json",
            **({"Authorization": f"Token {token}"} if token else {}),
            **(headers or {}),
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.loads(response.read() or b"null"), dict(response.headers)
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null"), dict(error.headers)


def test_serve_is_gunicorn_and_holds_50_concurrent_submissions(served):
    base, token = served["base"], served["tokens"]["alice"]
    status, tasks, headers = call(base, "GET", "/api/tasks/", token)
    assert status == 200 and headers["Server"].startswith("gunicorn")
    task = tasks["results"][0]["id"]
    barrier = threading.Barrier(50)

    def submit(i):
        barrier.wait()  # all 50 at once
        return call(
            base, "POST", "/api/submissions", token, {"task": task, "evidence": {"report": f"take {i}"}}
        )

    with ThreadPoolExecutor(max_workers=50) as pool:
        results = list(pool.map(submit, range(50)))

    assert [status for status, _, _ in results] == [201] * 50
    seqs = sorted(body["submission_seq"] for _, body, _ in results)
    assert seqs == list(range(seqs[0], seqs[0] + 50))  # distinct and gapless


def test_serve_holds_50_concurrent_readers(served):
    base, token = served["base"], served["tokens"]["bob"]
    barrier = threading.Barrier(50)

    def read(_):
        barrier.wait()
        return call(base, "GET", "/api/courses/", token)[0]

    with ThreadPoolExecutor(max_workers=50) as pool:
        assert list(pool.map(read, range(50))) == [200] * 50


def test_serve_logs_json_access_lines_with_the_id_and_without_the_query_string(served):
    base, token = served["base"], served["tokens"]["alice"]
    _, tasks, _ = call(base, "GET", "/api/tasks/", token)
    path = f"/api/tutor/context/?task={tasks['results'][0]['id']}&message=SECRET-DRAFT-TEXT"

    status, _, headers = call(base, "GET", path, token, headers={"X-Correlation-ID": "serve-access-id"})
    assert status == 200
    time.sleep(0.5)

    lines = [json.loads(line) for line in served["log"].read_text().splitlines() if line.startswith("{")]
    [access] = [
        line
        for line in lines
        if line["correlation_id"] == "serve-access-id" and line["logger"] == "gunicorn.access"
    ]
    assert '"GET /api/tutor/context/ HTTP/1.1" 200' in access["message"]
    assert "SECRET-DRAFT-TEXT" not in served["log"].read_text()
    assert headers["X-Correlation-ID"] == "serve-access-id"


# Two web processes of the embedded mode, each posting as the same user: the
# rate is one count for both, as gunicorn's workers must share it.
THROTTLED_POSTS = """
import json, sys, django
django.setup()
from django.test import Client
client = Client(HTTP_AUTHORIZATION="Token " + sys.argv[1], HTTP_HOST="127.0.0.1")
print(json.dumps([client.post("/api/submissions", {}, content_type="application/json").status_code
                  for _ in range(2)]))
"""


def test_without_redis_the_web_processes_share_one_throttle_count(served, tmp_path):
    env = {**served["env"], "CACHE_DIR": str(tmp_path / "cache"), "TUTOR_THROTTLE_SUBMISSIONS": "3/min"}

    def posts() -> list[int]:
        done = subprocess.run(
            [sys.executable, "-c", THROTTLED_POSTS, served["tokens"]["bob"]],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        return json.loads(done.stdout.splitlines()[-1])

    # An empty body is a 400 that still counts: nothing is stored either way.
    assert posts() == [400, 400]
    assert posts() == [400, 429]


def raw_exchange(base: str, request: bytes) -> tuple[int, dict[str, str], bytes]:
    """Send ``request`` as bytes on a new connection; the status, headers and
    body of the answer (the server closes the connection after an error)."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(request)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    status_line, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.lower(): v.strip() for k, v in (line.split(":", 1) for line in lines)}
    return int(status_line.split(" ")[1]), headers, body


@pytest.mark.parametrize(
    ("request_bytes", "status", "code"),
    [
        (
            b"GET /api/courses/?q=" + b"a" * 9000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
            414,
            "uri_too_long",
        ),
        (
            b"GET /api/courses/ HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"b" * 9000 + b"\r\n\r\n",
            431,
            "request_header_fields_too_large",
        ),
        (b"NOT HTTP AT ALL\r\n\r\n", 400, "bad_request"),
        (
            b"POST /api/submissions/ HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: brotli\r\n\r\n",
            501,
            "not_implemented",
        ),
    ],
    ids=["request-line", "header-field", "no-http", "transfer-coding"],
)
def test_what_gunicorn_refuses_itself_is_answered_in_the_json_error_shape(
    served, request_bytes, status, code
):
    """SPEC §7: never an HTML page -- also for the requests the server refuses
    before the application sees them; the refused text is not echoed."""
    got, headers, body = raw_exchange(served["base"], request_bytes)

    assert got == status
    assert headers["content-type"] == "application/json"
    assert int(headers["content-length"]) == len(body)
    assert re.fullmatch(r"[0-9a-f]{32}", headers["x-correlation-id"])
    assert headers["x-correlation-id"] in served["log"].read_text()  # the id a client reports is logged
    error = json.loads(body)
    assert error["type"] == ("server_error" if status >= 500 else "client_error")
    assert [(e["code"], e["attr"]) for e in error["errors"]] == [(code, None)]
    assert error["errors"][0]["detail"] == f"{HTTPStatus(status).phrase}."
    assert b"aaaa" not in body and b"bbbb" not in body


def chunked_post(base: str, path: str, token: str, body: bytes, piece: int = 7) -> bytes:
    """A POST whose body is sent in chunks of ``piece`` bytes (no Content-Length)."""
    chunks = b"".join(
        b"%x\r\n%s\r\n" % (len(body[i : i + piece]), body[i : i + piece]) for i in range(0, len(body), piece)
    )
    return (
        (
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Token {token}\r\n"
            "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        ).encode()
        + chunks
        + b"0\r\n\r\n"
    )


def test_a_chunked_body_is_read_like_one_with_a_length(served):
    """A client streaming its JSON (Transfer-Encoding: chunked, no
    Content-Length) is answered on what it sent, not as an empty body."""
    base, token = served["base"], served["tokens"]["bob"]
    task = call(base, "GET", "/api/tasks/", token)[1]["results"][0]["id"]

    status, _, body = raw_exchange(
        base, chunked_post(base, "/api/tutor/sessions/", token, json.dumps({"task": task}).encode())
    )

    assert status == 201, body
    session = json.loads(body)
    assert session["task"] == task
    # The same session, asked for again with a plain body: it was stored.
    assert call(base, "POST", "/api/tutor/sessions/", token, {"task": task})[:2] == (200, session)


def test_serve_refuses_a_bad_address():
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS_VARIABLES}
    env.update(DJANGO_SETTINGS_MODULE="tutor.settings", SECRET_KEY="x")

    result = subprocess.run(
        [sys.executable, "manage.py", "serve", "localhost"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert result.returncode == 1
    assert "addrport must be HOST:PORT" in result.stderr
