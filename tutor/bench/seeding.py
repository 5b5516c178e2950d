"""Seeding the benchmark course of ``manage.py bench_context`` (SPEC §10).

Rows come from seeders, one per kind of row, each able to count and delete
what it made: a bench course is reused when its sizes match and rebuilt when
they do not. Lessons (SPEC §10: >= 10k) come from ``tutor.bench.lessons``.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.db import transaction
from django.utils import timezone

from feedback.evidence import evidence_summary, snapshot_hash
from feedback.models import AttemptStatus, CiSource, ErrorCode, ReviewAttempt, Submission
from feedback.results import Basis, aggregate_overall
from feedback.services.retention import attempts_purge
from feedback.services.sequences import next_seq
from feedback.versions import current_versions
from tutor.bench.corrections import FactsSeeder, MemoriesSeeder
from tutor.bench.lessons import LessonsSeeder
from tutor.kernel.rubrics import Verdict
from tutor.models import Course, Enrollment, Task, TutorMessage, TutorSession

BENCH_COURSE_SLUG = "bench"
# The title marks the course as this command's: a real course that happens to
# be called "bench" is never reused nor deleted.
BENCH_COURSE_TITLE = "Benchmark course (seeded by manage.py bench_context)"
BENCH_STUDENT_PREFIX = "bench-student-"
BENCH_TASKS = 12
BENCH_RANDOM_SEED = 20260101  # the same sizes always seed the same rows
# Rows per transaction: the sequence counters stay locked for one batch only,
# so real submissions made meanwhile wait milliseconds, not the whole seeding.
BATCH_ROWS = 2000
# The measured (student, task) gets this share of all submissions: a long
# history there shows that the context's queries do not grow with it.
MEASURED_SHARE = 0.01
CONTEXT_MESSAGE = "My CI still fails on the empty-array test. What should I look at first?"
PROSE = (
    "The function returns the first element of the array, and on an empty array it returns "
    "undefined instead of throwing; callers that destructure the result must handle that case. "
)
CRITERIA = [
    {"id": "A1", "kind": "acceptance", "text": "CI passes", "check": {"type": "ci_passed"}},
    {
        "id": "A2",
        "kind": "acceptance",
        "text": "Report names the function and its edge case",
        "check": {"type": "contains", "field": "report", "all": ["first", "undefined"]},
    },
    {"id": "A3", "kind": "acceptance", "text": "Explanation is correct", "check": {"type": "semantic"}},
    {
        "id": "A4",
        "kind": "acceptance",
        "text": "Report committed",
        "check": {"type": "file_exists", "path": "REPORT.md"},
    },
    {"id": "L1", "kind": "learning", "text": "Reflects on edge cases"},
]
CI_RUNS = [
    {"status": "passed", "exit_code": 0, "log_tail": "42 passing (1s)"},
    {"status": "failed", "exit_code": 1, "log_tail": "1 failing\n  first([]) should be undefined"},
]


class Progress:
    """A stdout line each time another 10% of ``total`` is done."""

    def __init__(self, write: Callable[[str], None], label: str, total: int):
        self.write, self.label, self.total, self.next_pct = write, label, total, 10

    def update(self, done: int) -> None:
        pct = done * 100 // self.total if self.total else 100
        if pct >= self.next_pct or done == self.total:
            self.write(f"  {self.label}: {done}/{self.total} ({pct}%)")
            self.next_pct = pct // 10 * 10 + 10


@dataclass
class Bench:
    course: Course
    tasks: list[Task]  # with course and current_rubric loaded
    sizes: dict[str, int]
    write: Callable[[str], None]

    @property
    def measured_task(self) -> Task:
        return self.tasks[0]

    def student_ids(self) -> list[int]:
        """By username: the first is the measured student."""
        return list(
            Enrollment.objects.filter(course=self.course, role=Enrollment.Role.STUDENT)
            .order_by("user__username")
            .values_list("user_id", flat=True)
        )


# --- seeders: size (the option they answer), count, seed, delete ------------------


class StudentsSeeder:
    size = "students"

    def count(self, course: Course) -> int:
        return Enrollment.objects.filter(course=course, role=Enrollment.Role.STUDENT).count()

    def seed(self, bench: Bench) -> None:
        User = get_user_model()
        total = bench.sizes[self.size]
        width = max(5, len(str(total)))
        progress = Progress(bench.write, "students", total)
        for start in range(0, total, BATCH_ROWS):
            numbers = range(start + 1, min(start + BATCH_ROWS, total) + 1)
            # A user and its enrolment commit together: every bench user can be
            # found through the bench course, so deletion never misses one.
            with transaction.atomic():
                users = User.objects.bulk_create(
                    User(username=f"{BENCH_STUDENT_PREFIX}{n:0{width}d}", password=make_password(None))
                    for n in numbers
                )
                Enrollment.objects.bulk_create(
                    Enrollment(user=user, course=bench.course, role=Enrollment.Role.STUDENT) for user in users
                )
            progress.update(numbers[-1])

    def delete(self, course: Course, write: Callable[[str], None]) -> None:
        User = get_user_model()
        ids = list(
            User.objects.filter(
                enrollments__course=course, username__startswith=BENCH_STUDENT_PREFIX
            ).values_list("pk", flat=True)
        )
        progress = Progress(write, "deleting students", len(ids))
        for start in range(0, len(ids), BATCH_ROWS):
            batch = ids[start : start + BATCH_ROWS]
            User.objects.filter(pk__in=batch).delete()  # tokens and enrolments cascade
            progress.update(start + len(batch))


class SubmissionsSeeder:
    """Submissions spread over the students and tasks, each with 1-3 review
    attempts. The measured student's latest submission of the measured task
    ends with a completed FAIL: state ``current``, the costliest block."""

    size = "submissions"

    def count(self, course: Course) -> int:
        return Submission.objects.filter(task__course=course).count()

    def seed(self, bench: Bench) -> None:
        rng = random.Random(BENCH_RANDOM_SEED)
        students = bench.student_ids()
        stamps = {task.pk: current_versions(task).stamp() for task in bench.tasks}
        results = {task.pk: review_results(task) for task in bench.tasks}
        latest: dict[tuple, uuid.UUID] = {}  # (student, task) -> newest submission, for ``previous``
        total = bench.sizes[self.size]
        progress = Progress(bench.write, "submissions", total)
        for start in range(0, total, BATCH_ROWS):
            submissions, attempts = [], []
            for i in range(start, min(start + BATCH_ROWS, total)):
                last = i == total - 1
                if last or rng.random() < MEASURED_SHARE:
                    student_id, task = students[0], bench.measured_task
                else:
                    student_id, task = rng.choice(students), rng.choice(bench.tasks)
                submission = self.submission(rng, i, student_id, task, latest.get((student_id, task.pk)))
                latest[(student_id, task.pk)] = submission.pk
                submissions.append(submission)
                for outcome in ("unavailable", "fail_long") if last else attempt_outcomes(rng):
                    attempts.append(attempt(submission, stamps[task.pk], results[task.pk], outcome, rng))
            store_numbered(submissions, attempts)
            progress.update(start + len(submissions))

    @staticmethod
    def submission(rng: random.Random, i: int, student_id: int, task: Task, previous) -> Submission:
        report = f"Submission {i + 1}. " + PROSE * rng.randint(1, 4)
        evidence = {
            "report": report,
            "files": {"REPORT.md": report, "src/first.js": "export const first = (xs) => xs[0];\n"},
            "ci": rng.choice(CI_RUNS),
            "head_sha": f"{rng.getrandbits(160):040x}",
            "repo_url": f"https://git.example.edu/{student_id}/{task.slug}",
        }
        return Submission(
            id=uuid.uuid4(),
            student_id=student_id,
            task=task,
            previous_id=previous,
            evidence=evidence,
            evidence_summary=evidence_summary(evidence),  # bulk_create skips Submission.save()
            snapshot_hash=snapshot_hash(evidence),
            ci_source=CiSource.STUDENT,
            submitted_by_id=student_id,
        )

    def delete(self, course: Course, write: Callable[[str], None]) -> None:
        progress = Progress(write, "deleting submissions", self.count(course))
        done = 0
        while True:
            # Newest first: a submission left behind never names a deleted one as ``previous``.
            ids = list(
                Submission.objects.filter(task__course=course)
                .order_by("-submission_seq")
                .values_list("pk", flat=True)[:BATCH_ROWS]
            )
            if not ids:
                return
            # Terminal attempts are deleted only through the audited purge (SPEC §2).
            attempts_purge(submission_ids=ids, reason="bench_context cleanup", course=course)
            done += len(ids)
            progress.update(done)


def store_numbered(submissions: list[Submission], attempts: list[ReviewAttempt]) -> None:
    """Number the built rows from the sequence counters (gapless) and insert
    them. Rows are built before the transaction, so the counters are locked
    for the inserts only; submission before attempt, as in submission_create,
    so two writers never wait on each other's counter."""
    with transaction.atomic():
        first = next_seq("submission", len(submissions))
        for offset, submission in enumerate(submissions):
            submission.submission_seq = first + offset
        first = next_seq("attempt", len(attempts))
        for offset, row in enumerate(attempts):
            row.attempt_seq = first + offset
        Submission.objects.bulk_create(submissions)
        ReviewAttempt.objects.bulk_create(attempts)


def review_results(task: Task) -> dict[str, dict]:
    """Review results of ``task`` that keep the result contract of SPEC §2."""
    basis = {"A1": Basis.SELF_REPORT, "A3": Basis.MODEL, "L1": Basis.MODEL}

    def result(verdicts: dict[str, str], repeat: int) -> dict:
        criteria = [
            {
                "rubric_id": c["id"],
                "criterion": c["text"],
                "kind": c["kind"],
                "status": verdicts.get(c["id"], Verdict.PASS),
                "reason": f"{c['text']}: " + PROSE * repeat,
                "evidence": PROSE[: 40 * repeat],
                "basis": basis.get(c["id"], Basis.CHECK),
            }
            for c in task.current_rubric.criteria
        ]
        failing = [c["rubric_id"] for c in criteria if c["status"] != Verdict.PASS]
        step = f"Fix {failing[0]}: " + PROSE * repeat if failing else "All acceptance criteria pass."
        return {"overall": aggregate_overall(criteria), "criteria": criteria, "next_step": step}

    return {
        "pass": result({}, 1),
        "fail": result({"A1": Verdict.FAIL, "A3": Verdict.NEED_REVIEW}, 1),
        "fail_other": result({"A2": Verdict.FAIL, "A4": Verdict.FAIL}, 1),
        # Long texts: the block has to cut fields and may omit items.
        "fail_long": result(
            {"A1": Verdict.FAIL, "A2": Verdict.FAIL, "A3": Verdict.FAIL, "A4": Verdict.NEED_REVIEW}, 3
        ),
    }


def attempt_outcomes(rng: random.Random) -> list[str]:
    """1-3 attempts, oldest first: the earlier ones ended (a retry or a
    re-review followed); the newest mostly completed, sometimes unavailable or queued."""
    count = rng.choice((1, 1, 1, 2, 2, 3))
    earlier = rng.choices(("unavailable", "fail", "fail_other"), weights=(6, 3, 1), k=count - 1)
    newest = rng.choices(
        ("fail", "fail_other", "pass", "unavailable", "queued"), weights=(30, 15, 35, 10, 10)
    )
    return earlier + newest


def attempt(
    submission: Submission, stamp: dict, results: dict, outcome: str, rng: random.Random
) -> ReviewAttempt:
    now = timezone.now()
    if outcome == "queued":
        # Never dispatched: the sweep re-sends only attempts with a
        # ``dispatched_at``, so no worker (nor a paid model) reviews bench rows.
        fields = {"status": AttemptStatus.QUEUED, "dispatched_at": None}
    elif outcome == "unavailable":
        fields = {
            "status": AttemptStatus.UNAVAILABLE,
            "error_code": ErrorCode.REVIEW_UNAVAILABLE,
            "error_detail": "HTTP 503 from the model provider after 3 tries",
            "finished_at": now,
        }
    else:
        fields = {
            "status": AttemptStatus.COMPLETED,
            "result": results[outcome],
            "generation_attempts": rng.choice((1, 1, 1, 2)),
            "finished_at": now,
        }
    return ReviewAttempt(id=uuid.uuid4(), submission=submission, correlation_id="bench", **stamp, **fields)


class SessionSeeder:
    """One open tutor session of the measured student on the measured task."""

    size = "messages"

    def count(self, course: Course) -> int:
        return TutorMessage.objects.filter(session__task__course=course).count()

    def seed(self, bench: Bench) -> None:
        rng = random.Random(BENCH_RANDOM_SEED + 1)
        total = bench.sizes[self.size]
        session = TutorSession.objects.create(student_id=bench.student_ids()[0], task=bench.measured_task)
        progress = Progress(bench.write, "messages", total)
        for start in range(0, total, BATCH_ROWS):
            end = min(start + BATCH_ROWS, total)
            rows = []
            for position in range(start + 1, end + 1):
                user = position % 2 == 1
                # Long enough that the 12-message window often passes the 6000-character budget.
                length = rng.randint(60, 400) if user else rng.randint(200, 1400)
                rows.append(
                    TutorMessage(
                        session=session,
                        position=position,
                        role=TutorMessage.Role.USER if user else TutorMessage.Role.ASSISTANT,
                        content=f"{position}: " + (PROSE * 12)[:length],
                        correlation_id="bench",
                        context_meta=None if user else {"feedback_state": "current"},
                    )
                )
            with transaction.atomic():
                TutorMessage.objects.bulk_create(rows)
                TutorSession.objects.filter(pk=session.pk).update(message_count=end)
            progress.update(end)

    def delete(self, course: Course, write: Callable[[str], None]) -> None:
        deleted, _ = TutorSession.objects.filter(task__course=course).delete()  # messages cascade
        write(f"  deleting sessions: {deleted} rows")


# Seeded in this order and deleted in the reverse one: later rows point at earlier ones.
SEEDERS = (
    StudentsSeeder(),
    SubmissionsSeeder(),
    SessionSeeder(),
    FactsSeeder(),
    MemoriesSeeder(),
    LessonsSeeder(),
)


def course_spec() -> dict:
    return {
        "slug": BENCH_COURSE_SLUG,
        "title": BENCH_COURSE_TITLE,
        "tasks": [
            {
                "slug": f"t{n:02d}",
                "title": f"Task {n}: explain and test first()",
                "goal": "Write a report explaining first() and its empty-array behaviour. " + PROSE,
                "steps": [
                    "Read the source of first()",
                    "Write REPORT.md",
                    "Add tests",
                    "Run the checks in CI",
                ],
                "materials": PROSE * 8,
                "tags": ["javascript", "docs", f"week-{n}"],
                "rubric": {"version": "2026.1", "criteria": CRITERIA},
            }
            for n in range(1, BENCH_TASKS + 1)
        ],
    }
