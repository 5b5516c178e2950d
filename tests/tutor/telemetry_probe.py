"""Run by tests/tutor/test_telemetry.py in a process of its own: the web entry
point with error reports or traces on, and a few requests through it.

``sentry``: a request to a view that fails, with a secret in its body,
headers, cookie and query string; the events go to the test's receiver.
``otel``: traces into an in-memory exporter; prints the spans as JSON.
"""

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tutor.settings")

SECRET = "sk-live-PROBE-SECRET-0123456789abcdef"
DRAFT = "PROBE-DRAFT-TEXT"


def sentry() -> None:
    from django.conf import settings

    settings.ROOT_URLCONF = "tests.tutor.crash_urls"
    import sentry_sdk
    from django.test import Client

    import tutor.wsgi  # noqa: F401  (the web entry point starts the error reports)

    response = Client(raise_request_exception=False).post(
        f"/crash/?message={DRAFT}",
        data=json.dumps({"content": f"{DRAFT} my key is {SECRET}"}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Token {SECRET}",
        HTTP_COOKIE=f"sessionid={SECRET}",
        HTTP_X_CORRELATION_ID="probe-correlation-1",
    )
    print(response.status_code)
    sentry_sdk.flush(timeout=10)


class _Model(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        body = json.dumps({"choices": [{"message": {"role": "assistant", "content": "ok"}}]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def otel() -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tutor.ops.telemetry import telemetry_start

    exporter = InMemorySpanExporter()
    telemetry_start("web", span_exporter=exporter)
    from django.conf import settings
    from django.test import Client

    import tutor.wsgi  # noqa: F401  (started already: the entry point's call is a no-op)

    model = ThreadingHTTPServer(("127.0.0.1", 0), _Model)
    threading.Thread(target=model.serve_forever, daemon=True).start()
    settings.TUTOR_LLM_BASE_URL = f"http://127.0.0.1:{model.server_port}/v1"
    settings.TUTOR_LLM_MODEL = "probe-model"

    from tutor import llm, tasks
    from tutor.kernel.correlation import reset_correlation_id, set_correlation_id

    status = Client().get("/healthz", HTTP_X_CORRELATION_ID="probe-request-1").status_code
    token = set_correlation_id("probe-work-1")
    try:
        llm.chat([{"role": "user", "content": DRAFT}], purpose="tutor")
        tasks.purge_model_calls.delay()
    finally:
        reset_correlation_id(token)
    model.shutdown()
    spans = [
        {"name": span.name, "kind": span.kind.name, "attributes": dict(span.attributes or {})}
        for span in exporter.get_finished_spans()
    ]
    print(json.dumps({"status": status, "spans": spans}, default=str))


if __name__ == "__main__":
    {"sentry": sentry, "otel": otel}[sys.argv[1]]()
