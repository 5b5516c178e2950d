"""Gunicorn's worker, answering the requests it refuses itself in the API's
error shape (SPEC §7: never an HTML page).

Gunicorn refuses some requests before the application sees them: a request
line over ``limit_request_line`` (414), too many or too large header fields
(431), a request that is no HTTP (400), a transfer coding it does not know
(501). It answers those with a small HTML page of its own. This worker lets
gunicorn decide the status, as it does, and writes the answer as JSON:
``{"type": "client_error", "errors": [{"code", "detail", "attr": null}]}``,
the shape of every other error. The detail is the status's reason phrase --
never the refused request's text, which can be anything.
"""

from __future__ import annotations

import json
import re
import uuid
from http import HTTPStatus

from gunicorn import util
from gunicorn.workers.gthread import ThreadWorker

from tutor.kernel.correlation import HEADER

# Codes of the statuses gunicorn answers itself; another status is "error".
CODES = {
    400: "bad_request",
    403: "permission_denied",
    414: "uri_too_long",
    417: "expectation_failed",
    431: "request_header_fields_too_large",
    500: "error",
    501: "not_implemented",
}


class _Answer:
    """Where gunicorn writes its error page: kept to be read, not sent.
    At timeout 0.0 gunicorn's ``util.write_nonblock`` only calls ``sendall``."""

    def __init__(self):
        self.data = b""

    def gettimeout(self):
        return 0.0

    def sendall(self, data):
        self.data += data


def json_error(status_line: bytes, correlation_id: str) -> bytes | None:
    """The whole HTTP response for gunicorn's ``status_line`` (``HTTP/1.1
    414 URI Too Long``) in the API's error shape, with ``correlation_id``
    (SPEC §10: every answer carries one); None for a line that names no
    status."""
    parts = status_line.decode("latin-1").split(" ", 2)
    if len(parts) < 2 or not re.fullmatch(r"[0-9]{3}", parts[1]):
        return None
    code = int(parts[1])
    try:  # the status's own phrase: gunicorn keeps "Bad Request" for its 501
        reason = HTTPStatus(code).phrase
    except ValueError:
        reason = parts[2].strip() if len(parts) == 3 and parts[2].strip() else "Error"
    body = json.dumps(
        {
            "type": "server_error" if code >= 500 else "client_error",
            "errors": [{"code": CODES.get(code, "error"), "detail": f"{reason}.", "attr": None}],
        }
    ).encode()
    head = (
        f"HTTP/1.1 {code} {reason}\r\n"
        "Connection: close\r\n"
        "Content-Type: application/json\r\n"
        f"{HEADER}: {correlation_id}\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode("latin-1") + body


class JsonErrorThreadWorker(ThreadWorker):
    """gunicorn's gthread worker; its own error answers are JSON."""

    def handle_error(self, req, client, addr, exc):
        answer = _Answer()
        # Gunicorn's own handling: the status for ``exc``, the log lines, the
        # access line -- with its page written to ``answer``.
        super().handle_error(req, answer, addr, exc)
        if not answer.data:  # gunicorn could not build its page
            return
        status_line = answer.data.split(b"\r\n", 1)[0]
        correlation_id = uuid.uuid4().hex
        response = json_error(status_line, correlation_id)
        if response is None:
            response = answer.data
        else:  # the id the client is given, on a line of the log
            self.log.info("refused: %s; correlation id %s", status_line.decode("latin-1"), correlation_id)
        try:
            util.write_nonblock(client, response)
        except Exception:  # noqa: BLE001 - the client is gone, as gunicorn's own write allows
            self.log.debug("Failed to send error message.")
