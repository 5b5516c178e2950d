"""The changes a live course makes, for ``manage.py bench_context`` (issue 42):
a fact accepted, a lesson approved (and put to use), a lesson's first hit of
the day, a preference stored -- each through the service staff or students
trigger, never through raw SQL.

What a change needs beforehand (a proposed fact, a pending lesson, a staff
member) is made in ``prepare``, before any timing, so that a timed change is
that one change alone. ``cleanup`` removes every row made here, so a kept
bench course keeps its sizes.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from rest_framework.authtoken.models import Token

from corrections.models import Correction, Fact, FactStatus, MemoryItem
from corrections.services.facts import fact_insert, fact_verify
from corrections.services.intake import correction_submit
from corrections.text import text_key
from lessons.models import Lesson, LessonStatus
from lessons.services.lifecycle import lesson_approve_and_use, lesson_create
from tutor.bench.drivers import Failed, InProcessDriver
from tutor.bench.lessons import OTHER_SYMPTOMS
from tutor.chat.services import session_open
from tutor.models import Enrollment

FACT, LESSON, FIRST_HIT, PREFERENCE = (
    "fact accepted",
    "lesson approved",
    "first hit of the day",
    "preference stored",
)
KINDS = (FACT, LESSON, FIRST_HIT, PREFERENCE)
BENCH_STAFF = "bench-changes-staff"


class Changes:
    """Makes the changes of one bench run in turn, each kind from its own pool."""

    def __init__(self, bench, write: Callable[[str], None]):
        self.bench, self.write = bench, write
        self.course, self.task = bench.course, bench.measured_task
        self.started = timezone.now()
        self.facts: list[Fact] = []
        self.lessons: list[Lesson] = []
        self.fact_ids: list = []
        self.lesson_ids: list = []
        self.students: set[int] = set()
        self.sessions = []  # (the hitting student's sessions)
        self.made = dict.fromkeys(KINDS, 0)
        self.first_hits = 0  # first-hit changes that really hit a lesson first today
        self.serial = itertools.count(1)
        self.staff = None
        self.symptoms: list[str] = []  # of lessons a first hit may reach, not hit today

    def prepare(self, per_kind: int) -> None:
        """A staff member of the course, ``per_kind`` proposed facts and
        pending lessons (staff's manual entry)."""
        User = get_user_model()
        self.staff, _ = User.objects.get_or_create(username=BENCH_STAFF)
        Enrollment.objects.get_or_create(user=self.staff, course=self.course, role=Enrollment.Role.STAFF)
        now = timezone.now()
        stamp = now.strftime("%H%M%S")
        for n in range(per_kind):
            statement = f"The bench change {stamp}-{n} says first() of an empty array is undefined."
            with transaction.atomic():
                fact = fact_insert(
                    course=self.course,
                    tokens=["bench", f"change{stamp}x{n:04d}", "array"],
                    statement=statement,
                    statement_key=f"t:{text_key(statement)}",
                    statement_unit="",
                    status=FactStatus.PROPOSED,
                    actor=self.staff,
                    now=now,
                    proposed_by=self.staff,
                )
            self.facts.append(fact)
            self.fact_ids.append(fact.pk)
            lesson = lesson_create(
                actor=self.staff,
                course=self.course,
                title=f"Bench change {stamp}-{n}: an empty array",
                body="Check what first() returns on an empty array before changing the test.",
                tags=list(self.task.tags or [])[:2],
                symptoms=["empty-array test"],
            )
            self.lessons.append(lesson)
            self.lesson_ids.append(lesson.pk)
        # Recall reaches a lesson by a symptom of the message only when it also
        # shares a tag of the task.
        task_tags = set(self.task.tags or [])
        rows = Lesson.objects.filter(
            course=self.course, status=LessonStatus.INJECTED, last_hit__lt=timezone.localdate()
        ).values_list("tags", "symptoms")
        found = {symptom for tags, symptoms in rows if task_tags & set(tags) for symptom in symptoms}
        self.symptoms = [symptom for symptom in OTHER_SYMPTOMS if symptom in found]

    def make(self, kind: str, student) -> None:
        """One change of ``kind``; ``student`` is who stores a preference."""
        {
            FACT: self.accept_fact,
            LESSON: self.approve_lesson,
            FIRST_HIT: self.first_hit,
            PREFERENCE: self.prefer,
        }[kind](student)
        self.made[kind] += 1

    def accept_fact(self, student) -> None:
        if not self.facts:
            raise Failed("no proposed bench fact left to accept (raise the pool in Changes.prepare)")
        fact_verify(fact=self.facts.pop(0), staff=self.staff, reason="bench: accepted")

    def approve_lesson(self, student) -> None:
        if not self.lessons:
            raise Failed("no pending bench lesson left to approve (raise the pool in Changes.prepare)")
        lesson_approve_and_use(lesson=self.lessons.pop(0), actor=self.staff, reason="bench: approved")

    def first_hit(self, student) -> None:
        """A student's message in a new session naming a symptom whose
        lessons have not been hit today: its recall hits one first today."""
        # With every reachable lesson hit today the message still goes, and
        # the count of real first hits (``first_hits_note``) says so.
        hit = self.hit_today()
        self.symptoms = [symptom for symptom in self.symptoms if symptom not in hit]
        symptom = self.symptoms.pop(0) if self.symptoms else OTHER_SYMPTOMS[0]
        session, _ = session_open(student=student, task=self.task, new=True)
        self.sessions.append(session.pk)
        self.students.add(student.pk)
        token = Token.objects.get_or_create(user=student)[0].key
        url = f"/api/tutor/sessions/{session.pk}/messages/"
        _, status, body = InProcessDriver(token).post(url, {"content": f"My run stops with {symptom}."})
        if status != 201:
            raise Failed(f"the first-hit message answered {status}: {body[:300]!r}")
        self.first_hits += symptom in self.hit_today()

    def hit_today(self) -> set[str]:
        """The symptoms of the course's lessons hit today (a recall ranks those first)."""
        rows = Lesson.objects.filter(course=self.course, last_hit=timezone.localdate()).values_list(
            "symptoms"
        )
        return {symptom for (symptoms,) in rows for symptom in symptoms}

    def prefer(self, student) -> None:
        n = next(self.serial)
        content = f"From now on please keep your answers short and name the step number {n} first."
        correction, _ = correction_submit(user=student, course=self.course, content=content)
        if correction is None or correction.memory is None:
            raise Failed(f"the preference was not stored as memory: {content!r}")
        self.students.add(student.pk)

    def first_hits_note(self) -> str:
        """How many first-hit changes so far really hit a lesson first today."""
        return f"{self.first_hits} of {self.made[FIRST_HIT]} first-hit messages hit a lesson first today"

    def cleanup(self) -> None:
        from tutor.bench.sessions import sessions_delete

        sessions_delete(self.sessions)
        Correction.objects.filter(user_id__in=self.students, created_at__gte=self.started).delete()
        MemoryItem.objects.filter(user_id__in=self.students, created_at__gte=self.started).delete()
        Fact.objects.filter(pk__in=self.fact_ids).delete()
        Lesson.objects.filter(pk__in=self.lesson_ids).delete()
        if self.staff is not None:
            self.staff.delete()
