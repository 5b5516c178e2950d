"""Harness for tests that need a real Celery worker on a real Redis.

Why: eager Celery hides commit races and redelivery (SPEC §11), so the
reliability guarantees of SPEC §2 -- a killed worker, a broker outage, a
duplicate delivery -- are checked against a real ``celery -A tutor worker``
(prefork, one child) on a real Redis, reviewing through real HTTP against a
fake OpenAI-compatible server (``tests/worker/fakellm.py``).

When they run: tests marked ``worker`` run only when ``REDIS_URL`` is set;
``.ci/run`` sets it after starting its own Redis and PostgreSQL. Without it
they are *deselected* by ``pytest_collection_modifyitems``: pytest counts them
as "N deselected" and this module prints the reason in the header and the
summary, so they are never silently skipped. Tests that stop and restart Redis
(fixture ``redis_server``) also need ``REDIS_CI_CONF`` and ``REDIS_SERVER_BIN``
(the config file the server was started from and its binary, exported by
``.ci/run``); without them those tests are deselected the same way.

REDIS_URL must point at a Redis database the test run owns: before each
worker starts, the fixture purges the task queue and kombu's record of
unacknowledged messages. The rest of the suite may run eagerly; while a
worker runs, the test process publishes to the real broker.

The database: the worker process gets a ``DATABASE_URL`` naming the very test
database pytest-django created (PostgreSQL, or the SQLite file of
``tests/settings.py``). Worker tests therefore use
``@pytest.mark.django_db(transaction=True)``: rows must be committed for the
worker to see them, and the attempt's dispatch runs on commit.

Time limits are small (``WORKER_LIMITS``) so that a hung provider or a lost
worker resolves in seconds; ``tutor/settings/base.py`` checks that they nest. The
same values are set in the test process, where the sweep reads them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote, urlparse

import pytest

from tests.worker.fakellm import FakeLLM

PROJECT_DIR = Path(__file__).resolve().parents[2]

# Nesting (tutor/settings/base.py): REVIEW_MAX_GENERATIONS x (RETRIES+1) x TIMEOUT
# = 2 s < soft 6 s < hard 8 s < the default visibility timeout.
WORKER_LIMITS = {
    "TUTOR_LLM_TIMEOUT": 1,
    "TUTOR_LLM_RETRIES": 0,
    "TUTOR_LLM_BACKOFF": 0,
    "REVIEW_MAX_GENERATIONS": 2,
    "REVIEW_SOFT_TIME_LIMIT": 6,
    "REVIEW_HARD_TIME_LIMIT": 8,
}
FAKE_MODEL = "fake-model"
FAKE_API_KEY = "fake-key-for-tests"
WORKER_START_TIMEOUT = 45  # seconds: Django set-up and the first broker connection
WORKER_STOP_TIMEOUT = 15

_deselected_reasons = pytest.StashKey[dict[str, int]]()


# --- selection -------------------------------------------------------------------------


def _deselect_reason(item: pytest.Item) -> str | None:
    if item.get_closest_marker("worker") is None:
        return None
    if not os.environ.get("REDIS_URL"):
        return "REDIS_URL is not set (bash .ci/run starts Redis, PostgreSQL and runs them)"
    if "redis_server" in getattr(item, "fixturenames", ()) and not (
        os.environ.get("REDIS_CI_CONF") and os.environ.get("REDIS_SERVER_BIN")
    ):
        return "they stop and restart Redis: REDIS_CI_CONF and REDIS_SERVER_BIN are not set"
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    reasons: dict[str, int] = {}
    kept, dropped = [], []
    for item in items:
        reason = _deselect_reason(item)
        if reason is None:
            kept.append(item)
        else:
            dropped.append(item)
            reasons[reason] = reasons.get(reason, 0) + 1
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    config.stash[_deselected_reasons] = reasons


def _reason_lines(config: pytest.Config) -> list[str]:
    return [
        f"worker tests: {count} deselected because {reason}"
        for reason, count in config.stash.get(_deselected_reasons, {}).items()
    ]


def pytest_report_collectionfinish(config: pytest.Config, start_path, items) -> list[str]:
    return _reason_lines(config)


def pytest_terminal_summary(terminalreporter, exitstatus, config: pytest.Config) -> None:
    for line in _reason_lines(config):
        terminalreporter.write_line(line, yellow=True)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call):
    # Keep each phase's report on the item so fixtures can print the worker's
    # log when the test failed.
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


# --- helpers ----------------------------------------------------------------------------


def wait_for(predicate: Callable[[], object], *, timeout: float, interval: float = 0.1, message) -> object:
    """Poll ``predicate`` until it returns a truthy value; fail after ``timeout``
    seconds with ``message`` (a string, or a callable giving one)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            text = message() if callable(message) else message
            raise AssertionError(f"after {timeout}s: {text}")
        time.sleep(interval)


def database_url(settings_dict: dict) -> str:
    """A DATABASE_URL naming the database behind ``settings_dict`` (the test
    database, once pytest-django has set it up)."""
    engine = settings_dict["ENGINE"]
    name = str(settings_dict["NAME"])
    if engine == "django.db.backends.sqlite3":
        if name == ":memory:" or name.startswith("file:") or not os.path.isabs(name):
            raise AssertionError(f"a worker process cannot share the SQLite database {name!r}")
        return f"sqlite:///{name}"
    if engine == "django.db.backends.postgresql":
        user = quote(settings_dict.get("USER") or "", safe="")
        password = quote(settings_dict.get("PASSWORD") or "", safe="")
        host = quote(settings_dict.get("HOST") or "localhost", safe="")
        port = settings_dict.get("PORT") or 5432
        auth = f"{user}:{password}@" if password else (f"{user}@" if user else "")
        return f"postgres://{auth}{host}:{port}/{quote(name, safe='')}"
    raise AssertionError(f"no DATABASE_URL for engine {engine}")


def child_pids(pid: int) -> list[int]:
    """Live (not zombie) children of ``pid``, read from /proc (no psutil)."""
    children = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        # After the command name (which may hold spaces): state, then the parent pid.
        state, ppid = stat.rsplit(")", 1)[1].split()[:2]
        if int(ppid) == pid and state != "Z":
            children.append(int(entry))
    return sorted(children)


def celery_app():
    from tutor.celery import app

    return app


# --- the fake model server ----------------------------------------------------------


@pytest.fixture
def fake_llm():
    server = FakeLLM().start()
    yield server
    server.stop()


# --- the Celery worker ------------------------------------------------------------------


class CeleryWorker:
    def __init__(self, env: dict[str, str], log_path: Path):
        self.nodename = f"pytest-{uuid.uuid4().hex[:8]}@{socket.gethostname()}"
        self.log_path = log_path
        self._log = log_path.open("wb")
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "tutor",
                "worker",
                "--pool=prefork",
                "--concurrency=1",
                "--loglevel=INFO",
                "--without-gossip",
                "--without-mingle",
                f"--hostname={self.nodename}",
            ],
            cwd=PROJECT_DIR,
            env=env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            start_new_session=True,  # its own process group: stop() ends the pool children too
        )
        self.pid = self.process.pid
        rundir = os.environ.get("TUTOR_CI_RUNDIR")
        # .ci/run kills what a killed pytest could not stop.
        self._pidfile = Path(rundir) / f"worker-{self.pid}.pid" if rundir else None
        if self._pidfile is not None:
            self._pidfile.write_text(str(self.pid))

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no worker log)"
        return "\n".join(text.splitlines()[-lines:])

    def ping(self, timeout: float = 0.5) -> bool:
        try:
            replies = celery_app().control.ping(destination=[self.nodename], timeout=timeout)
        except Exception:  # the broker may be down or restarting
            return False
        return any(self.nodename in reply for reply in replies or [])

    def wait_ready(self, timeout: float = WORKER_START_TIMEOUT) -> None:
        def ready():
            if self.process.poll() is not None:
                raise AssertionError(
                    f"the Celery worker exited with code {self.process.returncode} "
                    f"before answering ping:\n{self.log_tail()}"
                )
            return self.ping()

        wait_for(ready, timeout=timeout, interval=0.2, message=lambda: f"no ping reply:\n{self.log_tail()}")

    def pool_children(self) -> list[int]:
        return child_pids(self.pid)

    def stop(self) -> None:
        if self.process.poll() is None:
            try:
                os.killpg(self.pid, signal.SIGTERM)  # warm shutdown: the running task may finish
                self.process.wait(timeout=WORKER_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.pid, signal.SIGKILL)  # and any pool child left behind
        self.process.wait(timeout=WORKER_STOP_TIMEOUT)
        self._log.close()
        if self._pidfile is not None:
            self._pidfile.unlink(missing_ok=True)


def worker_env(fake: FakeLLM) -> dict[str, str]:
    from django.db import connection

    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    env.update(
        {
            # The production settings module: the worker runs as it would in production.
            "DJANGO_SETTINGS_MODULE": "tutor.settings",
            "SECRET_KEY": "worker-test-secret-key",
            "DATABASE_URL": database_url(connection.settings_dict),
            "REDIS_URL": os.environ["REDIS_URL"],
            "TUTOR_LLM_BASE_URL": fake.base_url,
            "TUTOR_LLM_MODEL": FAKE_MODEL,
            "TUTOR_LLM_API_KEY": FAKE_API_KEY,
            "LOG_LEVEL": "INFO",
            "PYTHONUNBUFFERED": "1",
            **{name: str(value) for name, value in WORKER_LIMITS.items()},
        }
    )
    return env


@pytest.fixture
def worker_limits(settings, fake_llm):
    """The worker's limits and model, also in the test process (the sweep and
    the versions stamped on new attempts read them here)."""
    for name, value in WORKER_LIMITS.items():
        setattr(settings, name, value)
    settings.TUTOR_LLM_BASE_URL = fake_llm.base_url
    settings.TUTOR_LLM_MODEL = FAKE_MODEL
    settings.TUTOR_LLM_API_KEY = FAKE_API_KEY
    return WORKER_LIMITS


def _forget_earlier_messages() -> None:
    """Messages published by earlier tests (whose rows are gone) and kombu's
    bookkeeping of messages a killed worker never acknowledged must not reach
    this worker."""
    import redis

    celery_app().control.purge()
    client = redis.Redis.from_url(os.environ["REDIS_URL"])
    try:
        client.delete("unacked", "unacked_index", "unacked_mutex")
    finally:
        client.close()


@pytest.fixture
def celery_worker(request, transactional_db, settings, worker_limits, fake_llm, tmp_path):
    """A real ``celery -A tutor worker`` on the test database, ready to consume.

    While it runs, the test process publishes to the real broker even if the
    test settings make the rest of the suite eager.
    """
    app = celery_app()
    was_eager = app.conf.task_always_eager
    app.conf.task_always_eager = False
    settings.CELERY_TASK_ALWAYS_EAGER = False
    _forget_earlier_messages()
    worker = CeleryWorker(worker_env(fake_llm), tmp_path / "celery-worker.log")
    try:
        worker.wait_ready()
        yield worker
    finally:
        worker.stop()
        app.conf.task_always_eager = was_eager
        failed = any(
            getattr(getattr(request.node, f"report_{w}", None), "failed", False) for w in ("setup", "call")
        )
        if failed:
            print(f"--- Celery worker log ({worker.log_path}) ---\n{worker.log_tail(200)}")


# --- Redis control -------------------------------------------------------------------------


class RedisServer:
    """Stops and restarts the Redis of REDIS_URL (the one .ci/run started)."""

    def __init__(self) -> None:
        url = urlparse(os.environ["REDIS_URL"])
        self.port = url.port or 6379
        ci_port = os.environ.get("REDIS_CI_PORT")
        if ci_port and int(ci_port) != self.port:
            raise AssertionError(f"REDIS_URL uses port {self.port} but REDIS_CI_PORT is {ci_port}")
        self.host = url.hostname or "127.0.0.1"
        self.conf = os.environ["REDIS_CI_CONF"]
        self.server_bin = os.environ["REDIS_SERVER_BIN"]

    def _client(self):
        import redis

        return redis.Redis(host=self.host, port=self.port, socket_connect_timeout=0.5, socket_timeout=2)

    def is_up(self) -> bool:
        client = self._client()
        try:
            return bool(client.ping())
        except Exception:
            return False
        finally:
            client.close()

    def stop(self) -> None:
        client = self._client()
        try:
            client.shutdown(nosave=True)
        except Exception:  # the connection drops as the server exits
            pass
        finally:
            client.close()
        wait_for(lambda: not self.is_up(), timeout=10, message=f"Redis on port {self.port} did not stop")

    def start(self) -> None:
        subprocess.run([self.server_bin, self.conf], check=True, stdout=subprocess.DEVNULL)
        wait_for(self.is_up, timeout=10, message=f"Redis on port {self.port} did not start from {self.conf}")


@pytest.fixture
def redis_server():
    server = RedisServer()
    assert server.is_up(), f"Redis on port {server.port} is not running before the test"
    yield server
    if not server.is_up():  # a failed test must not leave the rest of the run without a broker
        server.start()
