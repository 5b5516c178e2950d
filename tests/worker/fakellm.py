"""A fake OpenAI-compatible chat-completions server for the worker and browser tests.

It listens on 127.0.0.1 on a free port, in a thread of the test process, so
the Celery worker (another process) or the live server behind a browser
reaches it over real HTTP exactly as it would reach a provider. Each test scripts its answers in order
(``fake.script(Reply(...), Hang(5), Gate(Reply(...)))``) and reads back every request it
received (``fake.requests``): the model call is checked at the HTTP boundary,
as the exact JSON the client sent.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    received_at: float

    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


@dataclass(frozen=True)
class Reply:
    """Answer with ``content`` as ``choices[0].message.content`` (status 200),
    or with an OpenAI-style error body when ``status`` is not 200."""

    content: str = ""
    status: int = 200


@dataclass(frozen=True)
class Hang:
    """Hold the request open without answering for ``seconds`` (or until the
    server stops), then drop the connection."""

    seconds: float


@dataclass(frozen=True)
class Call:
    """Run ``action(request)`` in the server thread the moment the request
    arrives -- e.g. kill the worker process that sent it -- then behave as
    ``then``."""

    action: Callable[[RecordedRequest], None]
    then: Reply | Hang = field(default_factory=lambda: Hang(30))


@dataclass(frozen=True)
class Gate:
    """Hold the request until the test calls ``open()`` (at most ``seconds``),
    then behave as ``then``. Unlike ``Call``, the request counts as received
    the moment it arrives, so a test can watch what happens while it is held
    (an attempt ``running``, a reply still pending)."""

    then: Reply
    seconds: float = 30
    opened: threading.Event = field(default_factory=threading.Event, compare=False)

    def open(self) -> None:
        self.opened.set()


Step = Reply | Hang | Call | Gate

UNSCRIPTED = Reply('{"error": "the test did not script this request"}', status=500)


def review_answer(verdicts: dict[str, str], next_step: str = "Add a test for the empty array.") -> str:
    """The review model's answer: one verdict per semantic criterion id."""
    return json.dumps(
        {
            "verdicts": [
                {
                    "rubric_id": rubric_id,
                    "status": status,
                    "reason": f"fake model says {status} for {rubric_id}",
                    "evidence": "first() returns undefined",
                }
                for rubric_id, status in verdicts.items()
            ],
            "next_step": next_step,
        }
    )


def chat_completion(content: str, model: str) -> dict:
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20},
    }


class FakeLLM:
    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._seen = 0  # requests whose Call action, if any, has run
        self._steps: deque[Step] = deque()
        self._then: Step = UNSCRIPTED
        self._changed = threading.Condition()
        self._stopping = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle -------------------------------------------------------------
    def start(self) -> FakeLLM:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):  # noqa: N802 -- http.server's naming
                fake._handle(self)

            def do_GET(self):  # noqa: N802
                fake._handle(self)

            def log_message(self, format, *args):  # noqa: A002 -- keep test output quiet
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="fake-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()  # releases hanging requests
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def port(self) -> int:
        assert self._server is not None, "start() the fake server first"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    # --- scripting ---------------------------------------------------------------
    def script(self, *steps: Step, then: Step = UNSCRIPTED) -> None:
        """Answer the next requests with ``steps`` in order, and every request
        after them with ``then`` (by default a 500 that no test expects)."""
        with self._changed:
            self._steps = deque(steps)
            self._then = then

    def wait_for_requests(self, count: int, timeout: float) -> list[RecordedRequest]:
        """Wait until ``count`` requests have arrived and their ``Call`` actions have run."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while self._seen < count:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError(
                        f"the fake model server received {self._seen} request(s) "
                        f"within {timeout}s; expected {count}"
                    )
                self._changed.wait(left)
            return list(self.requests)

    def _mark_seen(self) -> None:
        with self._changed:
            self._seen += 1
            self._changed.notify_all()

    # --- serving -------------------------------------------------------------------
    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        request = RecordedRequest(
            method=handler.command,
            path=handler.path,
            headers={k.lower(): v for k, v in handler.headers.items()},
            body=body,
            received_at=time.monotonic(),
        )
        with self._changed:
            self.requests.append(request)
            step = self._steps.popleft() if self._steps else self._then
        if isinstance(step, Call):
            try:
                step.action(request)
            finally:
                step = step.then
                self._mark_seen()
        else:
            self._mark_seen()
        if isinstance(step, Gate):
            deadline = time.monotonic() + step.seconds
            while not step.opened.wait(0.05):
                if self._stopping.is_set() or time.monotonic() >= deadline:
                    break
            step = step.then
        if isinstance(step, Hang):
            self._stopping.wait(step.seconds)
            handler.close_connection = True
            return
        self._send(handler, step, request)

    @staticmethod
    def _send(handler: BaseHTTPRequestHandler, reply: Reply, request: RecordedRequest) -> None:
        if reply.status == 200:
            try:
                model = request.json().get("model", "")
            except ValueError:
                model = ""
            payload = chat_completion(reply.content, model)
        else:
            payload = {"error": {"message": reply.content, "type": "fake_error", "code": reply.status}}
        data = json.dumps(payload).encode()
        handler.send_response(reply.status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        with contextlib.suppress(OSError):  # the client went away (killed worker, client timeout)
            handler.wfile.write(data)
