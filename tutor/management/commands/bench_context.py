"""``manage.py bench_context``: the tutor's hot paths as ratios to a trivial
authenticated endpoint, measured in one run at realistic volumes (SPEC §10).
Details: docs/architecture.md, The benchmark.
"""

from __future__ import annotations

import argparse
import json
import logging
import time

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import OperationalError, connection, transaction
from django.test.utils import CaptureQueriesContext, override_settings
from rest_framework.authtoken.models import Token

from feedback.models import Submission
from tutor.bench.changes import KINDS, Changes
from tutor.bench.drivers import (
    THROTTLE_FREE_ENV,
    Failed,
    HttpDriver,
    InProcessDriver,
    bench_host,
    gunicorn_serving,
    unthrottled,
)
from tutor.bench.ingest import INGEST_CLIENTS, ingest_cleanup, ingest_comparison, ingest_rate
from tutor.bench.life import CourseLife, Volumes
from tutor.bench.recall import recall_figure
from tutor.bench.reviews import review_overhead
from tutor.bench.rounds import Pair, RoundFigures, median_round, run_rounds
from tutor.bench.seeding import (
    BENCH_COURSE_SLUG,
    BENCH_COURSE_TITLE,
    BENCH_STUDENT_PREFIX,
    CONTEXT_MESSAGE,
    SEEDERS,
    Bench,
    course_spec,
)
from tutor.bench.sessions import MessageSender
from tutor.commands import DomainCommand
from tutor.coursefile import course_import, validate_course
from tutor.models import Course, Task
from tutor.ops.maintenance import database_optimize

MESSAGE_CORRELATION_PREFIX = "bench-message-"


def preflight() -> None:
    """Refuse before seeding what would fail minutes later: an unmigrated
    database, or no host the in-process requests may name."""
    from django.db.migrations.executor import MigrationExecutor

    executor = MigrationExecutor(connection)
    if executor.migration_plan(executor.loader.graph.leaf_nodes()):
        raise CommandError("the database has unapplied migrations: run `manage.py migrate` first")
    bench_host()


class Command(DomainCommand):
    help = (
        "Seed a benchmark course (students; submissions with 1-3 review attempts each; one long "
        "tutor session; course facts and memories; injected lessons) and print, as ratios to GET "
        "/api/courses/ measured in the same run, the latency of GET /api/tutor/context/ (median, "
        "p99) and of POST …/messages/ (median), and the submission ingest rate with the seeded "
        "volume against a fresh 1k database. --http measures again over HTTP through gunicorn. A "
        "bench course of the same sizes is reused; without --keep the benchmark rows are deleted."
    )

    def add_arguments(self, parser):
        parser.add_argument("--submissions", type=int, default=100_000, help="submissions (default 100000)")
        parser.add_argument("--students", type=int, default=500, help="students (default 500)")
        parser.add_argument(
            "--messages", type=int, default=2000, help="messages of the session (default 2000)"
        )
        parser.add_argument(
            "--requests", type=int, default=200, help="timed requests per endpoint and round (default 200)"
        )
        parser.add_argument(
            "--warmup", type=int, default=20, help="untimed requests per endpoint (default 20)"
        )
        parser.add_argument(
            "--ingest",
            type=int,
            default=25,
            help=f"submissions per client in each ingest phase, {INGEST_CLIENTS} clients (default 25; "
            "0 leaves the ingest comparison out)",
        )
        parser.add_argument(
            "--reviews",
            type=int,
            default=50,
            help="review tasks timed per connection mode for the worker's per-attempt figure (default 50; "
            "0 leaves it out)",
        )
        parser.add_argument(
            "--first", type=int, default=100, help="students' first context requests timed (default 100)"
        )
        parser.add_argument(
            "--new-sessions", type=int, default=50, help="messages timed, each in a new session (default 50)"
        )
        parser.add_argument(
            "--changes",
            type=int,
            default=5,
            help="changes of each kind timed with the requests after them (default 5)",
        )
        parser.add_argument(
            "--mixed",
            type=int,
            default=1000,
            help="context requests of the mixed run, one change per 50 (default 1000)",
        )
        parser.add_argument(
            "--http", action="store_true", help="also measure over HTTP through gunicorn (shipped config)"
        )
        parser.add_argument("--keep", action="store_true", help="keep the benchmark rows for the next run")
        # The ingest comparison's 1k phase runs this command again on a fresh database.
        parser.add_argument("--ingest-only", action="store_true", help=argparse.SUPPRESS)
        # Seeders of other apps bring their own size option (e.g. --facts).
        for seeder in SEEDERS:
            if hasattr(seeder, "option_help"):
                parser.add_argument(
                    f"--{seeder.size}", type=int, default=seeder.default, help=seeder.option_help
                )

    def handle(self, *args, submissions, students, messages, requests, warmup, keep, **options):
        limits = {"--submissions": (submissions, 1), "--students": (students, 1), "--messages": (messages, 0)}
        limits |= {"--requests": (requests, 1), "--warmup": (warmup, 0), "--ingest": (options["ingest"], 0)}
        limits |= {"--reviews": (options["reviews"], 0), "--first": (options["first"], 1)}
        limits |= {"--new-sessions": (options["new_sessions"], 1), "--changes": (options["changes"], 1)}
        limits |= {"--mixed": (options["mixed"], 1)}
        for option, (value, minimum) in limits.items():
            if value < minimum:
                raise CommandError(f"{option} must be at least {minimum}, got {value}")
        sizes = {"students": students, "submissions": submissions, "messages": messages}
        for seeder in SEEDERS:
            if hasattr(seeder, "option_help"):
                if options[seeder.size] < 0:
                    raise CommandError(f"--{seeder.size} must be at least 0, got {options[seeder.size]}")
                sizes[seeder.size] = options[seeder.size]
        if options["ingest_only"]:  # a child run: it migrates its own database
            return self.ingest_only(sizes, per_client=options["ingest"], http=options["http"])
        preflight()
        # Eager Celery logs a line per task run in-process (the correction
        # detection of every timed message): noise between the figures.
        logging.getLogger("celery.app.trace").setLevel(logging.WARNING)
        started = time.perf_counter()
        self.write(f"Database: {connection.vendor}; DEBUG={settings.DEBUG} (SQL query log off for the run)")
        # DEBUG's query log would format and keep every statement: megabytes per
        # bulk insert while seeding, and a per-query cost while timing that
        # production never pays. CaptureQueriesContext still counts queries.
        with override_settings(DEBUG=False):
            try:
                bench = self.prepare(sizes)
                self.measure(
                    bench,
                    requests=requests,
                    warmup=warmup,
                    verbosity=options["verbosity"],
                    ingest=options["ingest"],
                    http=options["http"],
                    reviews=options["reviews"],
                    volumes=Volumes(
                        first=options["first"],
                        new_sessions=options["new_sessions"],
                        changes=options["changes"],
                        mixed=options["mixed"],
                    ),
                )
            finally:
                # Also after a failure: without --keep a half-seeded course goes too.
                ingest_cleanup()
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
        # Measure the planner's steady state, not the window after a bulk load:
        # autovacuum analyzes freshly loaded PostgreSQL tables within a minute
        # or so, and the server refreshes SQLite's statistics hourly
        # (tutor.ops.maintenance). Without them SQLite reads every fact of the
        # course through the (course, status) index rather than the few
        # candidates by key.
        if not database_optimize():
            with connection.cursor() as cursor:
                cursor.execute("ANALYZE")
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

    # --- measuring ------------------------------------------------------------------------

    def measure(
        self,
        bench: Bench,
        *,
        requests: int,
        warmup: int,
        verbosity: int,
        ingest: int,
        http: bool,
        reviews: int = 0,
        volumes: Volumes,
    ) -> None:
        student = get_user_model().objects.get(pk=bench.student_ids()[0])
        token, _ = Token.objects.get_or_create(user=student)
        task = bench.measured_task
        history = Submission.objects.filter(student=student, task=task).count()
        self.write(
            f"Measured: {student.username} on {task.course.slug}/{task.slug} ({history} submissions, "
            f"{bench.sizes['messages']} session messages); {warmup} warmup and {requests} timed requests "
            "per endpoint and round, interleaved."
        )
        sender = self.message_sender(bench)
        context_query = {"task": str(task.pk), "message": CONTEXT_MESSAGE}
        changes = Changes(bench, self.write)
        try:
            with unthrottled():
                # The subjects of both modes' changes, made before anything is timed.
                changes.prepare(volumes.changes_needed() * (2 if http else 1))
                queries = self.count_queries(token.key, sender, context_query, verbosity)
                body = InProcessDriver(token.key).get("/api/tutor/context/", context_query)[2]
                context = json.loads(body)
                history_meta = context["meta"]["sections"]["history"]
                self.write(
                    f"Context: feedback state {context['feedback']['state']}, "
                    f"{len(context['feedback']['items'])} items; {history_meta['messages']} history messages "
                    f"({history_meta['omitted']} omitted); system message {context['meta']['system_chars']} "
                    f"chars; {len(context['meta']['fact_ids'])} facts, {len(context['lessons']['recalled'])} "
                    "lessons recalled."
                )
                recall_figure(student, task, bench.sizes.get("lessons", 0), self.write)
                self.write("In-process:")
                figures = self.rounds(InProcessDriver, token.key, sender, context_query, requests, warmup)
                self.report("", figures, queries, requests)
                self.course_life(bench, InProcessDriver, volumes, changes, "")
                if http:
                    self.write("Over HTTP (gunicorn, shipped configuration, loopback):")
                    with gunicorn_serving(THROTTLE_FREE_ENV) as (base, pid):

                        def driver(key, base=base):
                            return HttpDriver(key, base)

                        http_figures = self.rounds(driver, token.key, sender, context_query, requests, warmup)
                        self.report("http ", http_figures, queries, requests)
                        self.course_life(bench, driver, volumes, changes, "http ", server_pid=pid)
        finally:
            sender.cleanup()
            changes.cleanup()
        if ingest:
            ingest_comparison(per_client=ingest, http=http, write=self.write)
        else:
            self.write("ingest 100k/1k ratio: not measured (--ingest 0)")
        if reviews:
            self.review_figures(bench, reviews)

    def review_figures(self, bench: Bench, attempts: int) -> None:
        figures = review_overhead(bench, attempts)
        ms = 1000
        self.write(
            f"Reviews: the review task as a worker runs it, offline reviewer (no model time), "
            f"{figures.attempts} attempts per connection mode, interleaved ({figures.student}):"
        )
        self.write(
            f"worker review per attempt: {figures.kept_median * ms:.2f} ms (median, kept connection; "
            f"{figures.fresh_median * ms:.2f} ms opening a connection per task)"
        )

    def course_life(
        self, bench: Bench, make_driver, volumes: Volumes, changes: Changes, prefix: str, **kw
    ) -> None:
        """What a live course does beside the steady state (``tutor.bench.life``)."""
        self.write(
            f"{prefix or 'In-process '}live course: first requests, new sessions, after changes "
            f"({', '.join(KINDS)}), mixed:"
        )
        CourseLife(bench, make_driver, volumes=volumes, changes=changes, prefix=prefix, write=self.write).run(
            **kw
        )

    def message_sender(self, bench: Bench) -> MessageSender:
        student = get_user_model().objects.get(pk=bench.student_ids()[min(1, len(bench.student_ids()) - 1)])
        return MessageSender(student=student, task=bench.measured_task)

    def rounds(
        self, make_driver, token, sender, context_query, requests, warmup
    ) -> dict[str, list[RoundFigures]]:
        reader = make_driver(token)
        writer = make_driver(sender.token)
        try:
            pairs = [
                Pair(
                    "context",
                    lambda: reader.get("/api/tutor/context/", context_query),
                    lambda: reader.get("/api/courses/"),
                ),
                Pair(
                    "message",
                    lambda: writer.post(sender.url, {"content": CONTEXT_MESSAGE}),
                    lambda: writer.get("/api/courses/"),
                    expect=(201, 200),
                ),
            ]
            return run_rounds(pairs, requests=requests, warmup=warmup, write=self.write)
        finally:
            reader.close()
            writer.close()

    def count_queries(self, token: str, sender, context_query: dict, verbosity: int) -> dict[str, int]:
        """The SQL statements of one request of each kind, on this connection."""
        driver, writer = InProcessDriver(token), InProcessDriver(sender.token)
        calls = {
            "context": (lambda: driver.get("/api/tutor/context/", context_query), 200),
            "trivial": (lambda: driver.get("/api/courses/"), 200),
            "message": (lambda: writer.post(sender.url, {"content": CONTEXT_MESSAGE}), 201),
        }
        counts = {}
        for name, (call, expected) in calls.items():
            call()  # warm the caches of the first request
            with CaptureQueriesContext(connection) as captured:
                _, status, body = call()
            if status != expected:
                raise Failed(f"{name} answered {status} (expected {expected}): {body[:300]!r}")
            counts[name] = len(captured)
            if verbosity >= 2:
                for query in captured.captured_queries:
                    self.write(f"    [{name}] {query['sql']}")
        return counts

    def report(
        self, prefix: str, figures: dict[str, list[RoundFigures]], queries: dict, requests: int
    ) -> None:
        context, message = figures["context"], figures["message"]
        mid = median_round(context, lambda r: r.median_ratio)
        tail = median_round(context, lambda r: r.p99_ratio)
        sent = median_round(message, lambda r: r.median_ratio)
        rounds = len(context)
        self.write(f"{'endpoint':<34}{'requests':>9}{'median ms':>11}{'p99 ms':>9}{'queries':>9}")
        for label, value, p99, count in (
            ("GET /api/tutor/context/", mid.median, mid.p99, queries["context"]),
            ("GET /api/courses/", mid.trivial_median, mid.trivial_p99, queries["trivial"]),
            ("POST /api/tutor/sessions/…/messages/", sent.median, sent.p99, queries["message"]),
        ):
            self.write(f"{label:<34}{requests * rounds:>9}{value * 1000:>11.2f}{p99 * 1000:>9.2f}{count:>9}")
        ms = 1000
        self.write(
            f"{prefix}context/trivial median ratio: {mid.median_ratio:.2f}x (context {mid.median * ms:.2f} "
            f"ms, trivial {mid.trivial_median * ms:.2f} ms, {queries['context']} vs {queries['trivial']} "
            f"queries; median of {rounds} rounds)"
        )
        self.write(
            f"{prefix}context/trivial p99 ratio: {tail.p99_ratio:.2f}x (context {tail.p99 * ms:.2f} ms, "
            f"trivial {tail.trivial_p99 * ms:.2f} ms; median of {rounds} rounds)"
        )
        self.write(
            f"{prefix}message/trivial median ratio: {sent.median_ratio:.2f}x (message {sent.median * ms:.2f} "
            f"ms, trivial {sent.trivial_median * ms:.2f} ms, {queries['message']} statements; "
            f"median of {rounds} rounds)"
        )

    def ingest_only(self, sizes: dict[str, int], *, per_client: int, http: bool) -> None:
        """The 1k phase itself (run by ``small_ingest_rates`` on a fresh database)."""
        call_command("migrate", verbosity=0, interactive=False)
        with override_settings(DEBUG=False):
            self.prepare(sizes)
            rates = {"in_process": ingest_rate(per_client, False)}
            if http:
                rates["http"] = ingest_rate(per_client, True)
        self.stdout.write("INGEST_RESULT " + json.dumps(rates))
