"""``manage.py bench_context`` (SPEC §10): seeding with gapless sequence
numbers, the measured table and ratio, reuse, clean-up, and refusals."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, transaction
from rest_framework.authtoken.models import Token

from corrections.models import Correction, Fact, FactToken, MemoryItem, MemoryToken
from feedback.models import AttemptStatus, Counter, ReviewAttempt, Submission
from feedback.services.sequences import next_seq
from lessons.models import Lesson, RecallTrace
from tests.factories import client_for, make_attempt, make_course, make_submission
from tutor.models import Course, Enrollment, Rubric, Task, TutorMessage, TutorSession

ROOT = Path(__file__).resolve().parents[2]
TINY = ["--submissions", "300", "--students", "5", "--messages", "30", "--requests", "5", "--warmup", "1"]
# The corrections and lessons apps' seeders take sizes of their own.
TINY += ["--facts", "40", "--memories", "20", "--lessons", "50"]
# The ingest comparison seeds a second database, the worker figure reviews
# submissions of its own; one test below runs each.
TINY += ["--ingest", "0", "--reviews", "0"]
# The live course's phases at their smallest: one change of each kind, one in the mixed run.
TINY += ["--first", "2", "--new-sessions", "2", "--changes", "1", "--mixed", "60"]
RATIO_LINE = re.compile(
    r"^(?P<prefix>(http )?)context/trivial median ratio: \d+\.\d\dx \(context [\d.]+ ms, trivial [\d.]+ ms, "
    r"(?P<context>\d+) vs (?P<trivial>\d+) queries; median of 3 rounds\)$",
    re.MULTILINE,
)
FIGURE_LINES = (
    re.compile(
        r"^context/trivial p99 ratio: \d+\.\d\dx \(context [\d.]+ ms, trivial [\d.]+ ms; "
        r"median of 3 rounds\)$"
    ),
    re.compile(
        r"^message/trivial median ratio: \d+\.\d\dx \(message [\d.]+ ms, trivial [\d.]+ ms, \d+ statements; "
        r"median of 3 rounds\)$"
    ),
)
TABLE_ROW = re.compile(
    r"^(?P<method>GET|POST) (?P<path>\S+)\s+(?P<requests>\d+)\s+[\d.]+\s+[\d.]+\s+(?P<queries>\d+)$",
    re.MULTILINE,
)
MODELS = (Course, Task, Rubric, Enrollment, Token, Submission, ReviewAttempt, TutorSession, TutorMessage)
MODELS += (Fact, FactToken, MemoryItem, MemoryToken, Lesson, Correction, RecallTrace)


def run_bench(*args: str) -> str:
    out = StringIO()
    call_command("bench_context", *args, stdout=out)
    return out.getvalue()


def counter(name: str) -> int:
    return Counter.objects.get(name=name).value


def row_counts() -> dict[str, int]:
    counts = {model.__name__: model.objects.count() for model in MODELS}
    counts["User"] = get_user_model().objects.count()
    return counts


def test_bench_prints_the_table_and_the_ratio_with_real_query_counts(db, django_assert_num_queries):
    out = run_bench(*TINY, "--keep")

    ratio = RATIO_LINE.search(out)
    assert ratio, out
    lines = out.splitlines()
    for figure in FIGURE_LINES:
        assert any(figure.match(line) for line in lines), (figure.pattern, out)
    assert "ingest 100k/1k ratio: not measured (--ingest 0)" in lines
    rows = {m["path"]: m for m in TABLE_ROW.finditer(out)}
    assert set(rows) == {"/api/tutor/context/", "/api/courses/", "/api/tutor/sessions/…/messages/"}
    assert rows["/api/tutor/context/"]["queries"] == ratio["context"]
    assert rows["/api/courses/"]["queries"] == ratio["trivial"]
    assert {m["requests"] for m in rows.values()} == {"15"}  # 5 a round, 3 rounds
    assert "submissions: 300/300 (100%)" in out
    # The measured student's latest review is a completed FAIL: the costliest block.
    assert "Context: feedback state current" in out
    # The printed counts are what the two requests really cost.
    student = get_user_model().objects.get(username="bench-student-00001")
    task = Task.objects.get(course__slug="bench", slug="t01")
    client = client_for(student)
    with django_assert_num_queries(int(ratio["context"])):
        assert client.get("/api/tutor/context/", {"task": task.pk, "message": "hi"}).status_code == 200
    with django_assert_num_queries(int(ratio["trivial"])):
        assert client.get("/api/courses/").status_code == 200


LIFE_LINES = (
    r"mixed context/trivial p99 ratio: \d+\.\d\dx \(context [\d.]+ ms, trivial [\d.]+ ms; median ratio "
    r"\d+\.\d\dx; 60 context requests of 3 students, 1 changes: one per 50\)",
    r"changed context max: \d+ ms \(fact accepted \d+ ms, lesson approved \d+ ms, "
    r"first hit of the day \d+ ms, preference stored \d+ ms; median [\d.]+ ms, trivial [\d.]+ ms; "
    r"1 changes of each kind, each followed "
    r"by the next request of 3 students; \d+ of \d+ first-hit messages hit a lesson first today\)",
    r"first-request context/trivial median ratio: \d+\.\d\dx \(context [\d.]+ ms, trivial [\d.]+ ms; "
    r"p99 [\d.]+ ms; 1 students' first requests\)",
    r"new-session message/trivial median ratio: \d+\.\d\dx \(message [\d.]+ ms, trivial [\d.]+ ms; "
    r"p90 [\d.]+ ms, p99 [\d.]+ ms; 2 new sessions\)",
    r"web process resident memory: [1-9]\d* MB \(peak \d+ MB; ",
)


def assert_life_lines(out: str, prefix: str) -> None:
    for pattern in LIFE_LINES:
        assert re.search(rf"^{prefix}{pattern}", out, re.MULTILINE), (prefix, pattern, out)


def test_the_live_course_lines_print_and_the_changes_go_through_the_services(db):
    """First requests, new sessions, each kind of change and the mixed run
    print beside the steady-state lines; the changes were the staff's and
    the students' own actions (audited, stored), and nothing of them is left."""
    from tutor.models import AuditEvent

    before = row_counts()

    out = run_bench(*TINY)

    assert_life_lines(out, "")
    assert RATIO_LINE.search(out)
    # Both accepted facts (one after-change, one in the mixed run) and the
    # approved lesson, through the audited services.
    events = AuditEvent.objects.filter(actor_label="bench-changes-staff")
    assert events.filter(event=AuditEvent.Event.FACT_CHANGED, to_state="verified").count() == 2
    assert events.filter(event=AuditEvent.Event.LESSON_INJECTED).count() == 1
    assert row_counts() == before


WORKER_LINE = re.compile(
    r"^worker review per attempt: (?P<kept>\d+\.\d\d) ms \(median, kept connection; "
    r"(?P<fresh>\d+\.\d\d) ms opening a connection per task\)$",
    re.MULTILINE,
)


def test_seeded_sequences_are_gapless_and_the_counters_match_the_max(db, task, student):
    earlier = make_submission(student, task)  # numbers taken before the bench
    make_attempt(earlier)

    run_bench(*TINY, "--keep")

    seqs = sorted(Submission.objects.values_list("submission_seq", flat=True))
    assert seqs == list(range(1, 302))
    assert counter("submission") == seqs[-1]
    attempt_seqs = sorted(ReviewAttempt.objects.values_list("attempt_seq", flat=True))
    assert attempt_seqs == list(range(1, len(attempt_seqs) + 1))
    assert counter("attempt") == attempt_seqs[-1]
    # The next real submission continues the sequence.
    with transaction.atomic():
        assert next_seq("submission") == 302


def test_seeded_rows_are_realistic_histories(db):
    run_bench(*TINY, "--keep")

    bench = Submission.objects.filter(task__course__slug="bench")
    attempts_per_submission = {s.attempts.count() for s in bench}
    assert attempts_per_submission <= {1, 2, 3}
    assert len(attempts_per_submission) > 1
    statuses = set(ReviewAttempt.objects.values_list("status", flat=True))
    assert statuses == {AttemptStatus.COMPLETED, AttemptStatus.UNAVAILABLE, AttemptStatus.QUEUED}
    overall = {a.result["overall"] for a in ReviewAttempt.objects.filter(status=AttemptStatus.COMPLETED)}
    assert {"PASS", "FAIL"} <= overall
    # Queued bench attempts are never dispatched, so the sweep leaves them alone.
    assert not ReviewAttempt.objects.filter(status=AttemptStatus.QUEUED, dispatched_at__isnull=False).exists()
    # ``previous`` is the same student's prior submission of the same task.
    latest: dict[tuple, object] = {}
    for s in bench.order_by("submission_seq"):
        assert s.previous_id == latest.get((s.student_id, s.task_id))
        latest[(s.student_id, s.task_id)] = s.pk
    session = TutorSession.objects.get(task__course__slug="bench")
    assert session.message_count == TutorMessage.objects.filter(session=session).count() == 30
    assert Enrollment.objects.filter(course__slug="bench", role=Enrollment.Role.STUDENT).count() == 5


def planner_row_estimate(table: str) -> int | None:
    """How many rows the planner believes ``table`` has (what ANALYZE last
    saw); None when it has no statistics of it."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'")
            if not cursor.fetchone()[0]:
                return None
            cursor.execute("SELECT stat FROM sqlite_stat1 WHERE tbl = %s AND idx IS NOT NULL", [table])
            row = cursor.fetchone()
            return int(row[0].split()[0]) if row else None
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [table])
        row = cursor.fetchone()
        return int(row[0]) if row and row[0] >= 0 else None


def test_the_measured_plans_have_the_statistics_of_the_seeded_rows(db):
    """Measured after ANALYZE, as production runs (autovacuum; the hourly
    SQLite optimisation): without statistics SQLite reads every fact of the
    course through the (course, status) index."""
    run_bench(*TINY, "--keep")

    assert planner_row_estimate("corrections_fact") == Fact.objects.count() == 40
    assert planner_row_estimate("lessons_lesson") == Lesson.objects.count() == 50


def test_without_keep_nothing_is_left_behind(db):
    before = row_counts()
    submission_counter = (
        Counter.objects.filter(name="submission").values_list("value", flat=True).first() or 0
    )

    out = run_bench(*TINY)

    assert row_counts() == before
    assert "deleting submissions: 300/300 (100%)" in out
    assert "deleting students: 5/5 (100%)" in out
    assert RATIO_LINE.search(out)
    # Numbers of deleted rows are not handed out again (SPEC §2: never reused).
    assert counter("submission") == submission_counter + 300


def test_the_same_sizes_reuse_the_seeded_course(db):
    run_bench(*TINY, "--keep")
    ids = set(Submission.objects.values_list("pk", flat=True))
    counters = (counter("submission"), counter("attempt"))

    out = run_bench(*TINY, "--keep")

    assert (
        "Reusing the seeded bench course (5 students, 300 submissions, 30 messages, 40 facts, 20 memories, "
        "50 lessons)." in out
    )
    assert set(Submission.objects.values_list("pk", flat=True)) == ids
    assert (counter("submission"), counter("attempt")) == counters


def test_other_sizes_seed_the_course_again(db):
    run_bench(*TINY, "--keep")

    out = run_bench(*TINY, "--submissions", "200", "--keep")

    assert (
        "holds 5 students, 300 submissions, 30 messages, 40 facts, 20 memories, 50 lessons: seeding it again"
        in out
    )
    seqs = sorted(Submission.objects.values_list("submission_seq", flat=True))
    assert seqs == list(range(301, 501))  # the deleted 1-300 are not reused
    assert counter("submission") == 500


def test_a_course_named_bench_that_the_command_did_not_make_is_left_alone(db):
    course = make_course("bench")

    with pytest.raises(CommandError, match="not made by bench_context"):
        run_bench(*TINY)

    assert Course.objects.get(slug="bench").title == course.title
    assert Task.objects.filter(course=course).exists()


def test_users_named_like_bench_students_are_refused(db):
    get_user_model().objects.create_user(username="bench-student-00001")

    with pytest.raises(CommandError, match="bench-student-"):
        run_bench(*TINY)

    assert not Course.objects.filter(slug="bench").exists()


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--submissions", "0", "--submissions must be at least 1, got 0"),
        ("--students", "0", "--students must be at least 1, got 0"),
        ("--messages", "-1", "--messages must be at least 0, got -1"),
        ("--requests", "0", "--requests must be at least 1, got 0"),
        ("--warmup", "-5", "--warmup must be at least 0, got -5"),
        ("--submissions", "many", "invalid int value: 'many'"),
    ],
)
def test_bad_options_are_refused_before_anything_is_written(db, option, value, message):
    before = row_counts()

    with pytest.raises(CommandError, match=re.escape(message)):
        run_bench(*TINY, option, value)

    assert row_counts() == before


@pytest.mark.parametrize(("args", "code"), [(["--submissions", "0"], 1), (["--requests", "x"], 2)])
def test_bad_options_exit_non_zero_from_the_command_line(args, code):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    done = subprocess.run(
        [sys.executable, "manage.py", "bench_context", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == code
    assert args[0] in done.stderr
    assert done.stdout == ""


def test_an_unmigrated_database_is_refused_before_anything_is_seeded(tmp_path):
    database = tmp_path / "empty.sqlite3"
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env |= {"DATABASE_URL": f"sqlite:///{database}", "SECRET_KEY": "bench-test", "ALLOWED_HOSTS": "localhost"}
    done = subprocess.run(
        [sys.executable, "manage.py", "bench_context", "--submissions", "10"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )

    assert done.returncode == 1
    assert "unapplied migrations: run `manage.py migrate` first" in done.stderr
    assert "Seeding" not in done.stdout


@pytest.mark.django_db(transaction=True)
def test_over_http_and_with_the_ingest_comparison_every_figure_line_is_printed():
    """gunicorn with the shipped configuration serves the same figures, the
    ingest phase runs here and on a fresh 1k database, and the worker figure
    times real review tasks; nothing is left."""
    from tutor.models import AuditEvent

    before = row_counts()

    out = run_bench(*TINY, "--requests", "2", "--warmup", "0", "--ingest", "1", "--http", "--reviews", "2")

    lines = out.splitlines()
    for prefix in ("", "http "):
        assert any(RATIO_LINE.match(line) and line.startswith(prefix) for line in lines), out
        assert any(line.startswith(f"{prefix}context/trivial p99 ratio: ") for line in lines), out
        assert any(line.startswith(f"{prefix}message/trivial median ratio: ") for line in lines), out
        assert any(
            re.match(
                rf"^{prefix}ingest 100k/1k ratio: \d+\.\d\dx "
                r"\(\d+ stored: [\d.]+/s, 1000 stored: [\d.]+/s; 8 clients; median of 3 runs each\)$",
                line,
            )
            for line in lines
        ), out
    for prefix in ("", "http "):
        assert_life_lines(out, prefix)
    assert re.search(
        r"^http web process resident memory: .*the largest of \d+ gunicorn workers", out, re.M
    ), out
    figure = WORKER_LINE.search(out)
    assert figure and float(figure["kept"]) > 0 and float(figure["fresh"]) > 0, out
    recall = re.search(
        r"^lessons recall: ([\d.]+) ms from the snapshot, ([\d.]+) ms by its statement ", out, re.M
    )
    assert recall and float(recall[1]) < float(recall[2]), out  # the snapshot skips the statement
    # 5 warm-up reviews and 2 of each mode, each a completed review task (the
    # command stops on any other ending), purged through the audited path.
    purge = AuditEvent.objects.filter(event="attempts_purged", reason="bench_context cleanup")
    assert (9, 9) in [(event.extra["submissions"], event.extra["attempts"]) for event in purge]
    assert row_counts() == before
