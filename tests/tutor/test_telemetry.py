"""Error reports and traces, opt-in (SPEC §10 Operations): with ``SENTRY_DSN``
a failing request reaches a (local, fake) Sentry endpoint with the
correlation id as a tag and nothing the student sent; with
``OTEL_EXPORTER_OTLP_ENDPOINT`` Django, httpx, Celery and psycopg spans carry
the correlation id. Each runs in a process of its own
(``tests/tutor/telemetry_probe.py``): both libraries patch process-wide."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.tutor.telemetry_probe import DRAFT, SECRET
from tutor.bench.drivers import current_database_url

ROOT = Path(__file__).resolve().parents[2]


def probe(mode: str, **env: str) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "SENTRY_", "OTEL_"))}
    environ.update(
        DJANGO_SETTINGS_MODULE="tutor.settings",
        SECRET_KEY="telemetry-probe-key",
        ALLOWED_HOSTS="testserver",
        DATABASE_URL=current_database_url(),
        REDIS_URL="",
        **env,
    )
    done = subprocess.run(
        [sys.executable, "-m", "tests.tutor.telemetry_probe", mode],
        cwd=ROOT,
        env=environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


class Receiver(BaseHTTPRequestHandler):
    """A Sentry endpoint: keeps each envelope it is sent."""

    envelopes: list[bytes] = []

    def do_POST(self):  # noqa: N802
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        Receiver.envelopes.append(body)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


@pytest.fixture
def sentry_endpoint():
    Receiver.envelopes = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://publickey@127.0.0.1:{server.server_port}/42"
    server.shutdown()


def events(envelopes: list[bytes]) -> list[dict]:
    found = []
    for envelope in envelopes:
        lines = envelope.split(b"\n")
        for header, payload in zip(lines[1::2], lines[2::2], strict=False):
            if json.loads(header).get("type") == "event":
                found.append(json.loads(payload))
    return found


@pytest.mark.django_db(transaction=True)
def test_an_error_reaches_sentry_with_the_correlation_id_and_nothing_the_student_sent(sentry_endpoint):
    done = probe("sentry", SENTRY_DSN=sentry_endpoint)

    assert done.stdout.strip().splitlines()[-1] == "500"
    [event] = events(Receiver.envelopes)
    assert event["tags"]["correlation_id"] == "probe-correlation-1"
    assert event["exception"]["values"][-1]["type"] == "RuntimeError"
    assert event["transaction"] == "/crash/"
    assert not {"data", "cookies", "query_string"} & set(event.get("request", {}))
    raw = b"".join(Receiver.envelopes)
    assert SECRET.encode() not in raw and DRAFT.encode() not in raw
    assert b"sessionid" not in raw


@pytest.mark.django_db(transaction=True)
def test_spans_of_django_httpx_celery_and_the_database_carry_the_correlation_id():
    done = probe("otel")

    report = json.loads(done.stdout.strip().splitlines()[-1])
    spans = report["spans"]
    by_id = {}
    for span in spans:
        by_id.setdefault(span["attributes"].get("tutor.correlation_id"), []).append(span)
    request = [s for s in by_id.get("probe-request-1", []) if s["kind"] == "SERVER"]
    assert request and request[0]["attributes"].get("http.route", "").startswith("healthz")
    work = by_id.get("probe-work-1", [])
    assert any(s["kind"] == "CLIENT" and "POST" in s["name"] for s in work), work  # the model call (httpx)
    assert any("purge_model_calls" in s["name"] for s in work), work  # the Celery task, eager here
    if current_database_url().startswith("postgres"):
        assert any(s["attributes"].get("db.system") == "postgresql" for s in work), work
        assert any(s["attributes"].get("db.system") == "postgresql" for s in by_id["probe-request-1"])
    assert DRAFT not in done.stdout and SECRET not in done.stdout


def test_a_configured_dsn_without_the_library_is_one_clear_error(monkeypatch, settings):
    import builtins

    from tutor.ops import telemetry

    real_import = builtins.__import__

    def no_sentry(name, *args, **kwargs):
        if name.startswith("sentry_sdk"):
            raise ImportError(name=name)
        return real_import(name, *args, **kwargs)

    settings.SENTRY_DSN = "http://key@127.0.0.1:9/1"
    monkeypatch.setattr(builtins, "__import__", no_sentry)

    with pytest.raises(Exception, match=r"SENTRY_DSN is set but sentry_sdk is not installed"):
        telemetry.sentry_start("web")
