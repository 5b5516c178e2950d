"""How the benchmark sends its requests: in-process through Django's test
client, or over HTTP to gunicorn started with the shipped configuration.

In-process requests go through the real URL routing, middleware, token
authentication, views and rendering, but no server or socket: both
endpoints of a ratio pay the same for those, so leaving them out shows the
application's own work. ``--http`` adds them back (gunicorn's gthread
workers, loopback TCP, keep-alive connections), as a deployment runs.
"""

from __future__ import annotations

import contextlib
import functools
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import httpx
from django.conf import settings
from django.core.management.base import CommandError
from django.test import Client
from django.test.client import ClientHandler

PROJECT_DIR = Path(__file__).resolve().parents[2]
SERVER_START_SECONDS = 60
HTTP_TIMEOUT_SECONDS = 120
# Throttles are a courtesy, not a capacity (tutor.web.throttling): the benchmark
# sends more than a student would -- in this process, and to the server it starts.
UNTHROTTLED = {"submissions": "1000000/min", "messages": "1000000/min", "regrade_requests": "1000000/min"}
THROTTLE_FREE_ENV = {"TUTOR_THROTTLE_SUBMISSIONS": "1000000/min", "TUTOR_THROTTLE_MESSAGES": "1000000/min"}


class Failed(CommandError):
    pass


def bench_host() -> str:
    host = next((h.lstrip(".") for h in settings.ALLOWED_HOSTS if h.lstrip(".") not in ("", "*")), None)
    if host is None:
        raise CommandError("ALLOWED_HOSTS names no host to send the requests to: set it, e.g. to localhost")
    return host


def with_query(path: str, query: dict | None) -> str:
    """``path`` with ``query`` encoded as its query string."""
    return f"{path}?{urlencode(query)}" if query else path


class InProcessDriver:
    """One client (one token) in this process. Every client's requests go
    through the one handler of the process (``_handler``), as a server's do:
    Django's test client builds a handler of its own, which loads the
    middleware stack on its first request -- a static-file index and all,
    about 15 ms a student that a server pays once per process."""

    def __init__(self, token: str):
        # A Host header the settings accept: requests pass ALLOWED_HOSTS as real ones do.
        self.client = Client(HTTP_AUTHORIZATION=f"Token {token}", HTTP_HOST=bench_host())
        self.client.handler = _handler()

    def get(self, path: str, query: dict | None = None) -> tuple[float, int, bytes]:
        # The query string is encoded before the clock starts: the client's
        # own work is not the server's, and the trivial endpoint has none.
        target = with_query(path, query)
        began = time.perf_counter()
        response = self.client.get(target)
        return time.perf_counter() - began, response.status_code, response.content

    def post(self, path: str, body: dict) -> tuple[float, int, bytes]:
        began = time.perf_counter()
        response = self.client.post(path, body, content_type="application/json")
        return time.perf_counter() - began, response.status_code, response.content

    def close(self) -> None:
        """Nothing to close: requests run on this thread's database connection."""


@functools.cache
def _handler() -> ClientHandler:
    handler = ClientHandler(enforce_csrf_checks=False)
    handler.load_middleware()  # now, not by the first of several threads sending at once
    return handler


class HttpDriver:
    """One keep-alive HTTP connection (one token) to ``base_url``."""

    def __init__(self, token: str, base_url: str):
        self.client = httpx.Client(
            base_url=base_url,
            headers={"Authorization": f"Token {token}", "Host": bench_host()},
            timeout=HTTP_TIMEOUT_SECONDS,
        )

    def get(self, path: str, query: dict | None = None) -> tuple[float, int, bytes]:
        target = with_query(path, query)  # encoded before the clock starts (InProcessDriver.get)
        began = time.perf_counter()
        response = self.client.get(target)
        return time.perf_counter() - began, response.status_code, response.content

    def post(self, path: str, body: dict) -> tuple[float, int, bytes]:
        began = time.perf_counter()
        response = self.client.post(path, json=body)
        return time.perf_counter() - began, response.status_code, response.content

    def close(self) -> None:
        self.client.close()


def unthrottled():
    """Settings under which this process's requests are never throttled."""
    from django.test.utils import override_settings

    return override_settings(
        REST_FRAMEWORK={**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": UNTHROTTLED}
    )


def resident_mb(pid: int | str = "self") -> tuple[float, float]:
    """(resident, peak resident) memory of a process in MB, from /proc (0 where there is none)."""
    try:
        fields = dict(
            line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
        )
    except OSError:
        return 0.0, 0.0

    def mb(name: str) -> float:
        return int(fields.get(name, "0 kB").split()[0]) / 1024

    return mb("VmRSS"), mb("VmHWM")


def child_pids(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (gunicorn's workers)."""
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                children.append(int(entry.name))
    return children


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def current_database_url() -> str:
    """A DATABASE_URL naming the database this process uses (also a test
    database), for a server started from here."""
    from urllib.parse import quote

    from django.db import connection

    config = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{config['NAME']}"
    user, password = quote(config.get("USER") or ""), quote(config.get("PASSWORD") or "")
    auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
    host, port = config.get("HOST") or "localhost", config.get("PORT") or 5432
    return f"postgres://{auth}{host}:{port}/{config['NAME']}"


@contextlib.contextmanager
def gunicorn_server(env: dict[str, str] | None = None) -> Iterator[str]:
    """Gunicorn with ``tutor/ops/gunicorn_conf.py`` on a free loopback port, for
    the duration of the block; yields its base URL."""
    with gunicorn_serving(env) as (base, _):
        yield base


@contextlib.contextmanager
def gunicorn_serving(env: dict[str, str] | None = None) -> Iterator[tuple[str, int]]:
    """``gunicorn_server`` yielding (base URL, the master's pid). Its log goes
    to a temporary file, shown when it fails to start."""
    port = free_port()
    environ = {
        **os.environ,
        "DATABASE_URL": current_database_url(),
        **(env or {}),
        "WEB_BIND": f"127.0.0.1:{port}",
        "LOG_LEVEL": "WARNING",
    }
    environ.setdefault("SECRET_KEY", settings.SECRET_KEY)
    environ.setdefault("ALLOWED_HOSTS", ",".join(settings.ALLOWED_HOSTS) or bench_host())
    with tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False) as log:
        log_path = log.name
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "--config",
                "python:tutor.ops.gunicorn_conf",
                "tutor.wsgi:application",
            ],
            cwd=PROJECT_DIR,
            env=environ,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + SERVER_START_SECONDS
        while True:
            if server.poll() is not None:
                raise Failed(
                    f"gunicorn exited with status {server.returncode}:\n{Path(log_path).read_text()[-2000:]}"
                )
            try:
                httpx.get(f"{base}/healthz", headers={"Host": bench_host()}, timeout=2)
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise Failed(f"gunicorn did not answer within {SERVER_START_SECONDS}s") from None
                time.sleep(0.2)
        yield base, server.pid
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        Path(log_path).unlink(missing_ok=True)
