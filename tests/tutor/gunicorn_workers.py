"""Keep-alive connections to known gunicorn workers, for tests that must show
state shared between a server's worker processes.

The worker serving a connection is found from the kernel's tables: the
server side of the TCP connection (``/proc/net/tcp``) is a socket inode, and
the process holding that inode among its open files is the worker that
accepted it (Linux only).
"""

from __future__ import annotations

import http.client
import os
from dataclasses import dataclass, field
from http.cookies import SimpleCookie
from pathlib import Path
from urllib.parse import urlencode, urlsplit


@dataclass
class Answer:
    status: int
    text: str


@dataclass
class WorkerConnection:
    """One keep-alive connection, with its cookies, and the pid of the worker serving it."""

    connection: http.client.HTTPConnection
    host: str
    pid: int = 0
    cookies: dict[str, str] = field(default_factory=dict)

    def _request(self, method: str, path: str, body: bytes | None, headers: dict) -> Answer:
        headers = {"Host": self.host, **headers}
        if self.cookies:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        self.connection.request(method, path, body=body, headers=headers)
        response = self.connection.getresponse()
        text = response.read().decode("utf-8", "replace")
        for header in response.headers.get_all("Set-Cookie") or []:
            for name, morsel in SimpleCookie(header).items():
                self.cookies[name] = morsel.value
        return Answer(response.status, text)

    def get(self, path: str, headers: dict | None = None) -> Answer:
        return self._request("GET", path, None, headers or {})

    def post(self, path: str, form: dict) -> int:
        body = urlencode(form).encode()
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        return self._request("POST", path, body, headers).status


def _server_socket_inode(server_port: int, client_port: int) -> str | None:
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, inode = fields[1], fields[2], fields[9]
            if (
                int(local.rsplit(":", 1)[1], 16) == server_port
                and int(remote.rsplit(":", 1)[1], 16) == client_port
            ):
                return inode
    return None


def serving_pid(connection: http.client.HTTPConnection, server_port: int) -> int:
    inode = _server_socket_inode(server_port, connection.sock.getsockname()[1])
    target = f"socket:[{inode}]"
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            for fd in (proc / "fd").iterdir():
                if os.readlink(fd) == target:
                    return int(proc.name)
        except OSError:  # a process that ended, or one not ours to read
            continue
    raise AssertionError(f"no process serves the connection (inode {inode})")


def two_workers(base: str, tries: int = 40) -> tuple[WorkerConnection, WorkerConnection]:
    """Connections to two different workers of the server at ``base``."""
    parts = urlsplit(base)
    found: dict[int, WorkerConnection] = {}
    for _ in range(tries):
        connection = WorkerConnection(
            http.client.HTTPConnection(parts.hostname, parts.port, timeout=60), "127.0.0.1"
        )
        assert connection.get("/healthz").status in (200, 503)
        connection.pid = serving_pid(connection.connection, parts.port)
        if connection.pid in found:
            connection.connection.close()
            continue
        found[connection.pid] = connection
        if len(found) == 2:
            return tuple(found.values())
    raise AssertionError(f"{tries} connections all went to the same worker")
