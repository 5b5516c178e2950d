"""A request refused before its body was read leaves the kept-alive
connection usable (SPEC §7; behind a reverse proxy the next user's request
would otherwise fail on that connection)."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import pytest

from tutor.bench.drivers import gunicorn_server


def exchange(sock, request: bytes) -> bytes:
    """Send ``request``, read one whole response; its head."""
    sock.sendall(request)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the server closed the connection; read so far: {data[:200]!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lengths = [
        int(h.split(b":", 1)[1]) for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")
    ]
    if lengths:
        while len(body) < lengths[0]:
            body += sock.recv(65536)
    else:  # chunked: up to the last, empty chunk
        while not body.endswith(b"0\r\n\r\n"):
            body += sock.recv(65536)
    return head


@pytest.mark.django_db(transaction=True)
def test_an_anonymous_large_post_then_another_request_on_the_same_connection():
    body = b'{"task": "x", "evidence": {"report": "' + b"a" * 300_000 + b'"}}'
    # Without a broker /healthz is 200 whatever the machine runs: the
    # connection is what is tested here, not the worker.
    with gunicorn_server({"ALLOWED_HOSTS": "localhost", "REDIS_URL": ""}) as base:
        host, port = urlsplit(base).hostname, urlsplit(base).port
        with socket.create_connection((host, port), timeout=20) as sock:
            refused = exchange(
                sock,
                b"POST /api/submissions/ HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                + f"Content-Length: {len(body)}\r\n\r\n".encode()
                + body,
            )
            again = exchange(sock, b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")

    assert refused.startswith(b"HTTP/1.1 401"), refused
    assert again.startswith(b"HTTP/1.1 200"), again
