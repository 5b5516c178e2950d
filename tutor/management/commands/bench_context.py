"""``manage.py bench_context``: the latency of the tutor context endpoint as a
ratio to a trivial authenticated endpoint, both measured in one run on
realistic volumes (SPEC §10).

Requests go through Django's test ``Client`` in this process: real URL
routing, the whole middleware stack, DRF token authentication, the views and
JSON rendering, on the configured database -- but no HTTP server or socket.
Server and network add the same cost to both endpoints, so leaving them out
keeps the ratio about the application's own work, and it lets
``CaptureQueriesContext`` count the queries of exactly one request on the
connection that ran them.

Rows come from seeders, one per kind of row, each able to count and delete
what it made: a bench course is reused when its sizes match and rebuilt when
they do not. Lessons (SPEC §10: >= 10k) come from ``lessons.bench``.
"""

from __future__ import annotations

import math
import statistics
import time
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import OperationalError, connection, transaction
from django.test import Client
from django.test.utils import CaptureQueriesContext, override_settings
from rest_framework.authtoken.models import Token

from feedback.models import ReviewAttempt, Submission
from tutor.bench.seeding import (
    BENCH_COURSE_SLUG,
    BENCH_COURSE_TITLE,
    BENCH_STUDENT_PREFIX,
    CONTEXT_MESSAGE,
    SEEDERS,
    Bench,
    course_spec,
)
from tutor.commands import DomainCommand
from tutor.coursefile import course_import, validate_course
from tutor.models import Course, Task, TutorMessage


def percentiles_ms(values: list[float]) -> tuple[float, float, float]:
    """Median, p95 (nearest rank) and minimum, in milliseconds."""
    ordered = sorted(values)
    p95 = ordered[math.ceil(0.95 * len(ordered)) - 1]
    return statistics.median(ordered) * 1000, p95 * 1000, ordered[0] * 1000


class Command(DomainCommand):
    help = (
        "Seed a benchmark course (students; submissions with 1-3 review attempts each; one long "
        "tutor session; injected lessons) and report the median and p95 latency and the SQL queries "
        "of GET /api/tutor/context/ against GET /api/courses/, measured in-process in the same run. "
        "A bench course of the same sizes is reused; without --keep the benchmark rows are deleted "
        "at the end."
    )

    def add_arguments(self, parser):
        parser.add_argument("--submissions", type=int, default=100_000, help="submissions (default 100000)")
        parser.add_argument("--students", type=int, default=500, help="students (default 500)")
        parser.add_argument(
            "--messages", type=int, default=2000, help="messages of the session (default 2000)"
        )
        parser.add_argument(
            "--requests", type=int, default=200, help="timed requests per endpoint (default 200)"
        )
        parser.add_argument(
            "--warmup", type=int, default=20, help="untimed requests per endpoint (default 20)"
        )
        parser.add_argument("--keep", action="store_true", help="keep the benchmark rows for the next run")
        # Seeders of other apps bring their own size option (e.g. --facts).
        for seeder in SEEDERS:
            if hasattr(seeder, "option_help"):
                parser.add_argument(
                    f"--{seeder.size}", type=int, default=seeder.default, help=seeder.option_help
                )

    def handle(self, *args, submissions, students, messages, requests, warmup, keep, **options):
        limits = {"--submissions": (submissions, 1), "--students": (students, 1), "--messages": (messages, 0)}
        limits |= {"--requests": (requests, 1), "--warmup": (warmup, 0)}
        for option, (value, minimum) in limits.items():
            if value < minimum:
                raise CommandError(f"{option} must be at least {minimum}, got {value}")
        sizes = {"students": students, "submissions": submissions, "messages": messages}
        for seeder in SEEDERS:
            if hasattr(seeder, "option_help"):
                if options[seeder.size] < 0:
                    raise CommandError(f"--{seeder.size} must be at least 0, got {options[seeder.size]}")
                sizes[seeder.size] = options[seeder.size]
        started = time.perf_counter()
        self.write(f"Database: {connection.vendor}; DEBUG={settings.DEBUG} (SQL query log off for the run)")
        # DEBUG's query log would format and keep every statement: megabytes per
        # bulk insert while seeding, and a per-query cost while timing that
        # production never pays. CaptureQueriesContext still counts queries.
        with override_settings(DEBUG=False):
            try:
                bench = self.prepare(sizes)
                self.measure(bench, requests=requests, warmup=warmup, verbosity=options["verbosity"])
            finally:
                # Also after a failure: without --keep a half-seeded course goes too.
                course = Course.objects.filter(slug=BENCH_COURSE_SLUG, title=BENCH_COURSE_TITLE).first()
                if not keep and course is not None:
                    self.delete_bench(course)
        if keep:
            self.write(f"Kept the bench course '{BENCH_COURSE_SLUG}' (--keep).")
        self.write(f"Wall time: {time.perf_counter() - started:.1f} s")

    def write(self, line: str) -> None:
        self.stdout.write(line)
        self.stdout.flush()

    def prepare(self, sizes: dict[str, int]) -> Bench:
        course = Course.objects.filter(slug=BENCH_COURSE_SLUG).first()
        if course is not None and course.title != BENCH_COURSE_TITLE:
            raise CommandError(
                f"a course with slug '{BENCH_COURSE_SLUG}' exists and was not made by bench_context; "
                "it is left alone: rename it, or run the benchmark on another database"
            )
        if course is not None:
            present = {seeder.size: seeder.count(course) for seeder in SEEDERS}
            if present == sizes:
                self.write(f"Reusing the seeded bench course ({self.describe(sizes)}).")
                return self.bench(course, sizes)
            self.write(f"The bench course holds {self.describe(present)}: seeding it again.")
            self.delete_bench(course)
        if get_user_model().objects.filter(username__startswith=BENCH_STUDENT_PREFIX).exists():
            raise CommandError(
                f"users named {BENCH_STUDENT_PREFIX}* exist outside the bench course; remove them first"
            )
        started = time.perf_counter()
        self.write(f"Seeding the bench course ({self.describe(sizes)}):")
        course = course_import(spec=validate_course(course_spec())).course
        bench = self.bench(course, sizes)
        for seeder in SEEDERS:
            seeder.seed(bench)
        if connection.vendor == "postgresql":
            # Autovacuum analyzes freshly loaded tables within a minute or so;
            # measure the planner's steady state, not that window.
            with connection.cursor() as cursor:
                for model in (Submission, ReviewAttempt, TutorMessage):
                    cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")
        self.write(f"Seeded in {time.perf_counter() - started:.1f} s.")
        return bench

    def bench(self, course: Course, sizes: dict[str, int]) -> Bench:
        tasks = Task.objects.filter(course=course).select_related("course", "current_rubric").order_by("slug")
        return Bench(course=course, tasks=list(tasks), sizes=sizes, write=self.write)

    @staticmethod
    def describe(sizes: dict[str, int]) -> str:
        return ", ".join(f"{value} {name}" for name, value in sizes.items())

    def delete_bench(self, course: Course) -> None:
        started = time.perf_counter()
        self.write(f"Deleting the bench course '{course.slug}':")
        for seeder in reversed(SEEDERS):
            seeder.delete(course, self.write)
        with transaction.atomic():
            # A task's current_rubric PROTECTs its rubric; both go with the course.
            Task.objects.filter(course=course).update(current_rubric=None)
            course.delete()
        # The counters are not wound back: sequence numbers are never reused (SPEC §2).
        self.write(f"Deleted in {time.perf_counter() - started:.1f} s.")
        if connection.vendor == "sqlite" and not connection.in_atomic_block:
            self.vacuum()

    def vacuum(self) -> None:
        """Give the pages the bench rows used back to the disk: SQLite keeps
        them in the file otherwise (hundreds of MB at the default sizes)."""
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA freelist_count")
            (free_pages,) = cursor.fetchone()
            cursor.execute("PRAGMA page_size")
            free_mb = free_pages * cursor.fetchone()[0] / 1e6
            try:
                cursor.execute("VACUUM")
            except OperationalError as exc:  # e.g. another process holds the database
                self.write(f"  VACUUM failed ({exc}): the file keeps {free_mb:.0f} MB of free pages.")
            else:
                self.write(f"  VACUUM returned {free_mb:.0f} MB to the disk.")

    def measure(self, bench: Bench, *, requests: int, warmup: int, verbosity: int) -> None:
        student = get_user_model().objects.get(pk=bench.student_ids()[0])
        token, _ = Token.objects.get_or_create(user=student)
        task = bench.measured_task
        history = Submission.objects.filter(student=student, task=task).count()
        self.write(
            f"Measured: {student.username} on {task.course.slug}/{task.slug} ({history} submissions, "
            f"{bench.sizes['messages']} session messages); {warmup} warmup and {requests} timed requests "
            "per endpoint, interleaved."
        )
        host = next((h.lstrip(".") for h in settings.ALLOWED_HOSTS if h.lstrip(".") not in ("", "*")), None)
        if host is None:
            raise CommandError(
                "ALLOWED_HOSTS names no host to send the requests to: set it, e.g. to localhost"
            )
        # A Host header the settings accept: requests pass ALLOWED_HOSTS as real ones do.
        client = Client(HTTP_AUTHORIZATION=f"Token {token.key}", HTTP_HOST=host)
        urls = {
            "context": "/api/tutor/context/?" + urlencode({"task": task.pk, "message": CONTEXT_MESSAGE}),
            "trivial": "/api/courses/",
        }

        def get(name: str) -> float:
            began = time.perf_counter()
            response = client.get(urls[name])
            elapsed = time.perf_counter() - began
            if response.status_code != 200:
                raise CommandError(
                    f"GET {urls[name]} answered {response.status_code}: {response.content[:300]!r}"
                )
            return elapsed

        for _ in range(warmup):
            get("context")
            get("trivial")
        queries = {}
        for name in urls:
            with CaptureQueriesContext(connection) as captured:
                get(name)
            queries[name] = len(captured)
            if verbosity >= 2:
                for query in captured.captured_queries:
                    self.write(f"    [{name}] {query['sql']}")
        body = client.get(urls["context"]).json()
        history_meta = body["meta"]["sections"]["history"]
        self.write(
            f"Context: feedback state {body['feedback']['state']}, {len(body['feedback']['items'])} "
            f"items; {history_meta['messages']} history messages ({history_meta['omitted']} omitted); "
            f"system message {body['meta']['system_chars']} chars."
        )

        samples: dict[str, list[float]] = {name: [] for name in urls}
        for i in range(requests):
            # Alternate which goes first, so neither always runs right after the other.
            for name in ("context", "trivial") if i % 2 == 0 else ("trivial", "context"):
                samples[name].append(get(name))
        rows = {name: percentiles_ms(values) for name, values in samples.items()}

        self.write(
            f"{'endpoint':<26}{'requests':>9}{'median ms':>11}{'p95 ms':>9}{'min ms':>9}{'queries':>9}"
        )
        for name, label in (("context", "GET /api/tutor/context/"), ("trivial", "GET /api/courses/")):
            median, p95, low = rows[name]
            self.write(f"{label:<26}{requests:>9}{median:>11.2f}{p95:>9.2f}{low:>9.2f}{queries[name]:>9}")
        (c_median, c_p95, _), (t_median, t_p95, _) = rows["context"], rows["trivial"]
        self.write(
            f"context/trivial median ratio: {c_median / t_median:.1f}x (context {c_median:.1f} ms, "
            f"trivial {t_median:.1f} ms, {queries['context']} vs {queries['trivial']} queries)"
        )
        self.write(f"context/trivial p95 ratio: {c_p95 / t_p95:.1f}x")
