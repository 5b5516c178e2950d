"""What a live course does beside the warm steady state, for ``manage.py
bench_context`` (issue 42): other students' first requests, messages in new
sessions, the requests right after each kind of change, and a mixed run where
changes arrive among the requests -- each timed against the trivial endpoint
(GET /api/courses/) in the same run, the two interleaved as in
``tutor.bench.rounds``.

One run of each phase (not three rounds): a change's cost is the point, and
a change cannot be made twice. Over HTTP every student has a keep-alive
connection of their own, so the requests spread over gunicorn's workers as
a live course's do; the changes are made in this process, as another
process of the deployment (a staff request, a worker) makes them.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass, field

from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token

from tutor.bench.changes import KINDS, PREFERENCE, Changes
from tutor.bench.drivers import Failed, child_pids, resident_mb
from tutor.bench.rounds import percentile
from tutor.bench.seeding import CONTEXT_MESSAGE, Bench
from tutor.bench.sessions import sessions_delete
from tutor.chat.services import session_open

TRIVIAL = "/api/courses/"
CONTEXT = "/api/tutor/context/"
CHANGE_EVERY = 50  # context requests per change in the mixed run (per course: the bench has one)
MIXED_STUDENTS = 20  # students asking in the mixed run, in turn
AFTER_CHANGE_STUDENTS = 4  # students asking right after each change, one connection each


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


@dataclass
class Timings:
    measured: list[float] = field(default_factory=list)
    trivial: list[float] = field(default_factory=list)

    def median_ratio(self) -> float:
        return statistics.median(self.measured) / statistics.median(self.trivial)


@dataclass(frozen=True)
class Volumes:
    first: int  # students' first requests
    new_sessions: int  # messages, each in a new session
    changes: int  # changes of each kind, each followed by requests
    mixed: int  # context requests of the mixed run

    def changes_needed(self) -> int:
        """Changes of one kind that one mode makes (its own pool of each)."""
        return self.changes + -(-self.mixed // CHANGE_EVERY // len(KINDS))


class Student:
    """One bench student with a driver (a connection) of their own."""

    def __init__(self, user, make_driver):
        self.user = user
        self.driver = make_driver(Token.objects.get_or_create(user=user)[0].key)

    def context(self, query: dict) -> float:
        return timed(lambda: self.driver.get(CONTEXT, query), 200, "context")

    def trivial(self) -> float:
        return timed(lambda: self.driver.get(TRIVIAL), 200, "trivial")


def timed(call, expected: int, label: str) -> float:
    elapsed, status, body = call()
    if status != expected:
        raise Failed(f"{label} answered {status} (expected {expected}): {body[:300]!r}")
    return elapsed


def pair(timings: Timings, index: int, measured: Callable[[], float], trivial: Callable[[], float]) -> None:
    """One measured and one trivial request, alternating which goes first."""
    if index % 2 == 0:
        timings.measured.append(measured())
        timings.trivial.append(trivial())
    else:
        timings.trivial.append(trivial())
        timings.measured.append(measured())


class CourseLife:
    """The live-course phases of one mode (in-process or over HTTP)."""

    def __init__(self, bench: Bench, make_driver, *, volumes: Volumes, changes: Changes, prefix: str, write):
        self.bench, self.make_driver, self.volumes = bench, make_driver, volumes
        self.changes, self.prefix, self.write = changes, prefix, write
        self.task = bench.measured_task
        self.query = {"task": str(self.task.pk), "message": CONTEXT_MESSAGE}
        ids = bench.student_ids()
        # The measured student (0) and the message sender (1) are the steady
        # state's; the first-request students come from the end, unused by the rest.
        self.regulars = ids[2 : 2 + MIXED_STUDENTS] or ids[-1:]
        fresh = ids[2 + MIXED_STUDENTS :][-volumes.first :]
        self.fresh = fresh or ids[-1:]
        self.users = {
            user.pk: user for user in get_user_model().objects.filter(pk__in=self.regulars + self.fresh)
        }
        self.students: list[Student] = []
        self.sessions: list = []

    def run(self, server_pid: int | None = None) -> None:
        try:
            self.first_requests()
            self.students = [Student(self.users[pk], self.make_driver) for pk in self.regulars]
            self.new_session_messages()
            self.after_changes()
            self.mixed()
            self.memory(server_pid)
        finally:
            for student in self.students:
                student.driver.close()
            sessions_delete(self.sessions)

    def first_requests(self) -> None:
        """Each fresh student's first context request (a driver of their own) against their trivial one."""
        timings = Timings()
        for index, pk in enumerate(self.fresh):
            student = Student(self.users[pk], self.make_driver)
            try:
                pair(timings, index, lambda s=student: s.context(self.query), student.trivial)
            finally:
                student.driver.close()
        self.write(
            f"{self.prefix}first-request context/trivial median ratio: {timings.median_ratio():.2f}x "
            f"(context {ms(statistics.median(timings.measured))}, "
            f"trivial {ms(statistics.median(timings.trivial))}; "
            f"p99 {ms(percentile(timings.measured, 99))}; {len(self.fresh)} students' first requests)"
        )

    def new_session_messages(self) -> None:
        """The first message of a new session (opened untimed, as the client opens it first)."""
        timings = Timings()
        for index in range(self.volumes.new_sessions):
            student = self.students[index % len(self.students)]
            session, _ = session_open(student=student.user, task=self.task, new=True)
            self.sessions.append(session.pk)
            url = f"/api/tutor/sessions/{session.pk}/messages/"

            def message(student=student, url=url) -> float:
                return timed(lambda: student.driver.post(url, {"content": CONTEXT_MESSAGE}), 201, "message")

            pair(timings, index, message, student.trivial)
        self.write(
            f"{self.prefix}new-session message/trivial median ratio: {timings.median_ratio():.2f}x "
            f"(message {ms(statistics.median(timings.measured))}, "
            f"trivial {ms(statistics.median(timings.trivial))}; "
            f"p90 {ms(percentile(timings.measured, 90))}, p99 {ms(percentile(timings.measured, 99))}; "
            f"{self.volumes.new_sessions} new sessions)"
        )

    def change(self, kind: str, student: Student) -> None:
        self.changes.make(kind, student.user)

    def after_changes(self) -> None:
        """Each change, then the next context request of a few students, each
        on their own connection; the first of them stored the preference."""
        after = self.students[:AFTER_CHANGE_STUDENTS]
        by_kind = {kind: Timings() for kind in KINDS}
        for number in range(self.volumes.changes):
            for kind in KINDS:
                for student in after:  # warm again after the previous change
                    student.context(self.query)
                turn = after[number % len(after) :] + after[: number % len(after)]
                self.change(kind, turn[0])
                for index, student in enumerate(turn):
                    pair(by_kind[kind], index, lambda s=student: s.context(self.query), student.trivial)
        every = Timings(
            [t for kind in KINDS for t in by_kind[kind].measured],
            [t for kind in KINDS for t in by_kind[kind].trivial],
        )
        kinds = ", ".join(f"{kind} {max(by_kind[kind].measured) * 1000:.0f} ms" for kind in KINDS)
        self.write(
            f"{self.prefix}changed context max: {max(every.measured) * 1000:.0f} ms ({kinds}; median "
            f"{ms(statistics.median(every.measured))}, trivial {ms(statistics.median(every.trivial))}; "
            f"{self.volumes.changes} changes of each kind, each followed by the next request of "
            f"{len(after)} students; {self.changes.first_hits_note()})"
        )

    def mixed(self) -> None:
        """Context requests of students in turn, a change every ``CHANGE_EVERY``, the kinds in turn."""
        timings, made = Timings(), 0
        for index in range(self.volumes.mixed):
            student = self.students[index % len(self.students)]
            if index and index % CHANGE_EVERY == 0:
                kind = KINDS[made % len(KINDS)]
                self.change(kind, student if kind == PREFERENCE else self.students[0])
                made += 1
            pair(timings, index, lambda s=student: s.context(self.query), student.trivial)
        tail = percentile(timings.measured, 99) / percentile(timings.trivial, 99)
        self.write(
            f"{self.prefix}mixed context/trivial p99 ratio: {tail:.2f}x (context "
            f"{ms(percentile(timings.measured, 99))}, trivial {ms(percentile(timings.trivial, 99))}; "
            f"median ratio {timings.median_ratio():.2f}x; {self.volumes.mixed} context requests of "
            f"{len(self.students)} students, {made} changes: one per {CHANGE_EVERY})"
        )

    def memory(self, server_pid: int | None) -> None:
        """The resident memory of one web process: this one, or gunicorn's largest worker."""
        if server_pid is None:
            rss, peak = resident_mb()
            where = "this process, after the phases above"
        else:
            workers = [(resident_mb(pid), pid) for pid in child_pids(server_pid)]
            if not workers:
                self.write(
                    f"{self.prefix}web process resident memory: not measured (no gunicorn worker found)"
                )
                return
            (rss, peak), _ = max(workers)
            where = f"the largest of {len(workers)} gunicorn workers, after the phases above"
        self.write(f"{self.prefix}web process resident memory: {rss:.0f} MB (peak {peak:.0f} MB; {where})")
