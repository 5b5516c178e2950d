"""Submission ingest throughput at two table sizes (SPEC §10, issue "ingest
that does not slow down with volume").

Eight clients post submissions at once, each for a student of its own, to
a one-task course made for the measurement; the figure is submissions per
second over the whole phase. It runs on the benchmark's database (with the
seeded 100k submissions) and on a fresh database of the same kind holding
1k, and the ratio of the two says whether ingest slows down with volume --
it did, to 3 per second, while the review-cache lookup scanned completed
attempts instead of using ``submission_cache_idx``.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import connection, connections, transaction
from rest_framework.authtoken.models import Token

from feedback.models import Submission
from feedback.services.retention import attempts_purge
from tutor.bench.drivers import (
    PROJECT_DIR,
    THROTTLE_FREE_ENV,
    Failed,
    HttpDriver,
    InProcessDriver,
    current_database_url,
    gunicorn_server,
    unthrottled,
)
from tutor.coursefile import course_import, validate_course
from tutor.models import Course, Enrollment, Task
from tutor.services import enrollment_set

INGEST_CLIENTS = 8
BARRIER_SECONDS = 60  # for the clients to be ready together
INGEST_COURSE_SLUG = "bench-ingest"
INGEST_COURSE_TITLE = "Ingest benchmark (made and removed by manage.py bench_context)"
INGEST_STUDENT_PREFIX = "bench-ingest-"
CRITERIA = [
    {"id": "A1", "kind": "acceptance", "text": "CI passes", "check": {"type": "ci_passed"}},
    {
        "id": "A2",
        "kind": "acceptance",
        "text": "Report names first and undefined",
        "check": {"type": "contains", "field": "report", "all": ["first", "undefined"]},
    },
]


@dataclass(frozen=True)
class IngestRun:
    submissions: int
    seconds: float

    @property
    def per_second(self) -> float:
        return self.submissions / self.seconds


def ingest_setup() -> tuple[Task, list[str]]:
    """The ingest course, its task and one token per client (made fresh)."""
    ingest_cleanup()
    spec = {
        "slug": INGEST_COURSE_SLUG,
        "title": INGEST_COURSE_TITLE,
        "tasks": [{"slug": "ingest", "title": "Ingest", "rubric": {"version": "1", "criteria": CRITERIA}}],
    }
    course = course_import(spec=validate_course(spec), source="bench_context").course
    tokens = []
    for n in range(INGEST_CLIENTS):
        user, token = enrollment_set(
            course=course, username=f"{INGEST_STUDENT_PREFIX}{n}", role=Enrollment.Role.STUDENT, create=True
        )
        tokens.append(token.key)
    return Task.objects.get(course=course), tokens


def ingest_measure(task: Task, tokens: list[str], per_client: int, make_driver: Callable) -> IngestRun:
    """Every client posts ``per_client`` submissions (distinct evidence: real
    ingest, not the review cache) on a thread of its own; all start together."""
    start = threading.Barrier(len(tokens) + 1)
    errors: list[str] = []

    def client(index: int, token: str) -> None:
        try:
            driver = make_driver(token)
        except Exception as exc:
            errors.append(f"client {index} could not start: {exc}")
            start.abort()  # nobody waits for a client that will never come
            return
        try:
            start.wait(timeout=BARRIER_SECONDS)
            for i in range(per_client):
                body = {
                    "task": str(task.pk),
                    "evidence": {
                        "report": f"first() returns undefined on [] ({index}-{i}-{uuid.uuid4().hex})",
                        "ci": {
                            "status": "passed" if i % 2 else "failed",
                            "exit_code": i % 2,
                            "log_tail": "1 test",
                        },
                    },
                }
                _, status, content = driver.post("/api/submissions/", body)
                if status != 201:
                    errors.append(f"POST /api/submissions/ answered {status}: {content[:200]!r}")
                    return
        finally:
            driver.close()
            connections.close_all()  # this thread's own database connection

    threads = [threading.Thread(target=client, args=(i, t), daemon=True) for i, t in enumerate(tokens)]
    for thread in threads:
        thread.start()
    try:
        start.wait(timeout=BARRIER_SECONDS)
    except threading.BrokenBarrierError:
        for thread in threads:
            thread.join(timeout=BARRIER_SECONDS)
        raise Failed(errors[0] if errors else "the ingest clients did not start") from None
    began = time.perf_counter()
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - began
    if errors:
        raise Failed(errors[0])
    return IngestRun(submissions=per_client * len(tokens), seconds=seconds)


def ingest_cleanup() -> None:
    """Remove the ingest course with its submissions (the audited purge),
    users and tokens. Only a course this module made is touched."""
    course = Course.objects.filter(slug=INGEST_COURSE_SLUG, title=INGEST_COURSE_TITLE).first()
    if course is not None:
        while ids := list(
            Submission.objects.filter(task__course=course)
            .order_by("-submission_seq")
            .values_list("pk", flat=True)[:1000]
        ):
            attempts_purge(submission_ids=ids, reason="bench_context ingest cleanup", course=course)
        with transaction.atomic():
            Task.objects.filter(course=course).update(current_rubric=None)
            course.delete()
    get_user_model().objects.filter(username__startswith=INGEST_STUDENT_PREFIX).delete()
    Token.objects.filter(user__username__startswith=INGEST_STUDENT_PREFIX).delete()


@contextlib.contextmanager
def small_database() -> Iterator[str]:
    """A fresh, empty database of the benchmark's kind, as a DATABASE_URL,
    dropped afterwards: a SQLite file in a temporary directory, or a
    PostgreSQL database next to the configured one (the role needs CREATEDB,
    as the test suite's does)."""
    if connection.vendor == "sqlite":
        with tempfile.TemporaryDirectory(prefix="bench-1k-") as directory:
            yield f"sqlite:///{Path(directory) / 'bench.sqlite3'}"
        return
    name = f"{connection.settings_dict['NAME']}_bench_1k"[:63]
    quoted = connection.ops.quote_name(name)
    with connection.cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {quoted}")
        try:
            cursor.execute(f"CREATE DATABASE {quoted}")
        except Exception as exc:
            raise Failed(f"the ingest comparison needs a database of its own ({name}): {exc}") from None
    try:
        yield current_database_url().rsplit("/", 1)[0] + f"/{name}"
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"DROP DATABASE IF EXISTS {quoted} WITH (FORCE)")


def child_environment(database_url: str) -> dict[str, str]:
    """This process's environment for a child on ``database_url``, with the
    hosts this process accepts (a test run adds its own)."""
    from django.conf import settings

    return {**os.environ, "DATABASE_URL": database_url, "ALLOWED_HOSTS": ",".join(settings.ALLOWED_HOSTS)}


# --- the ingest comparison of bench_context: this database against a fresh 1k one ------------

SMALL_INGEST_SUBMISSIONS = 1000  # the "1k" of the ingest ratio
INGEST_RUNS = 3  # ingest runs per database and mode, the median taken
INGEST_RESULT = re.compile(r"^INGEST_RESULT (?P<json>\{.*\})$", re.MULTILINE)


def ingest_rate(per_client: int, http: bool) -> float:
    """Submissions per second of the ingest phase on this database: the
    median of ``INGEST_RUNS`` runs (one run is a few seconds, and the
    machine's neighbours move it by a fifth either way)."""
    task, tokens = ingest_setup()
    try:
        with unthrottled():
            if http:
                with gunicorn_server(THROTTLE_FREE_ENV) as base:
                    runs = [
                        ingest_measure(task, tokens, per_client, lambda key: HttpDriver(key, base))
                        for _ in range(INGEST_RUNS)
                    ]
            else:
                runs = [ingest_measure(task, tokens, per_client, InProcessDriver) for _ in range(INGEST_RUNS)]
    finally:
        ingest_cleanup()
    return statistics.median(run.per_second for run in runs)


def ingest_comparison(*, per_client: int, http: bool, write: Callable[[str], None]) -> None:
    large = Submission.objects.count()
    modes = [("", False)] + ([("http ", True)] if http else [])
    write(
        f"Ingest: {INGEST_CLIENTS} clients x {per_client} submissions, with {large} submissions stored "
        f"and in a fresh database holding {SMALL_INGEST_SUBMISSIONS}:"
    )
    small_rates = small_ingest_rates(per_client, http, write)
    for prefix, over_http in modes:
        rate = ingest_rate(per_client, over_http)
        small = small_rates[over_http]
        write(
            f"{prefix}ingest 100k/1k ratio: {rate / small:.2f}x ({large} stored: {rate:.1f}/s, "
            f"{SMALL_INGEST_SUBMISSIONS} stored: {small:.1f}/s; {INGEST_CLIENTS} clients; "
            f"median of {INGEST_RUNS} runs each)"
        )


def small_ingest_rates(per_client: int, http: bool, write: Callable[[str], None]) -> dict[bool, float]:
    """The 1k phase: bench_context again (``--ingest-only``), on a fresh database of the same kind."""
    from tutor.bench.seeding import SEEDERS

    with small_database() as url:
        command = [
            sys.executable, "manage.py", "bench_context", "--ingest-only",
            "--submissions", str(SMALL_INGEST_SUBMISSIONS), "--students", "50", "--messages", "0",
            "--ingest", str(per_client),
            *[f"--{seeder.size}=0" for seeder in SEEDERS if hasattr(seeder, "option_help")],
            *(["--http"] if http else []),
        ]  # fmt: skip
        write(
            f"  measuring a fresh {connection.vendor} database with {SMALL_INGEST_SUBMISSIONS} submissions…"
        )
        done = subprocess.run(
            command, cwd=PROJECT_DIR, env=child_environment(url), capture_output=True, text=True, timeout=1800
        )
    match = INGEST_RESULT.search(done.stdout)
    if done.returncode != 0 or match is None:
        raise CommandError(f"the 1k ingest phase failed:\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}")
    rates = json.loads(match["json"])
    return {False: rates["in_process"], True: rates.get("http", 0.0)}
