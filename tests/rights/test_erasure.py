"""Erasing a student across the three loops (SPEC §13), proven by the
residue check: after a whole life, nothing of the person is left in any
table the project owns -- on whichever database the suite runs (SQLite by
default, PostgreSQL with DATABASE_URL)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.contrib.sessions.models import Session
from django.db import connection

from corrections.models import Correction, Fact, MemoryItem
from feedback.models import ReviewAttempt, Submission
from lessons.models import Lesson, LessonRevision, LessonStatus, RecallTrace
from tests.factories import enroll
from tests.rights.life import live
from tutor.lti.models import Identity, ScorePost
from tutor.models import AuditEvent, ModelCall, TutorMessage, TutorSession
from tutor.rights.erasure import student_erase
from tutor.rights.residue import residue_scan

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def staff(course):
    return enroll(course, "teacher", "staff")


def print_residue(report, vendor: str) -> None:
    print(f"residue check ({vendor}) after erasing {report.pseudonym}: {len(report.residue)} hits")
    for hit in report.residue:
        print("  " + hit.line())
    for label, counts in report.counts.items():
        print(f"  {label}: {counts['deleted']} deleted, {counts['pseudonymised']} pseudonymised")


def test_a_whole_life_erased_leaves_no_residue_and_the_course_keeps_its_records(
    course, task, staff, registration, platform, fake_llm
):
    from django.test.utils import CaptureQueriesContext  # noqa: F401

    life = live(course=course, task=task, platform=platform, staff=staff, fake_llm=fake_llm, capture=nocap)
    person = life.person
    # The life left the person everywhere the check looks.
    before = residue_scan(
        user_id=person.pk,
        names={person.username: "username", life.email: "e-mail", life.sub: "LTI sub"},
        canaries=tuple(life.canaries),
    )
    assert {hit.what for hit in before} >= {"username", "e-mail", "LTI sub", "user id"}
    assert {hit.what for hit in before if hit.what.startswith("canary")} == {
        f"canary {i}" for i in range(1, len(life.canaries) + 1)
    }
    assert ScorePost.objects.filter(identity__user=person).exists()
    assert Session.objects.exists()
    classmates = (
        Submission.objects.filter(student=life.classmate).count(),
        TutorMessage.objects.filter(session__student=life.classmate).count(),
    )

    report = student_erase(user=person, canaries=tuple(life.canaries))

    print_residue(report, connection.vendor)
    assert report.residue == []
    assert not get_user_model().objects.filter(pk=person.pk).exists()
    assert not Identity.objects.filter(subject=life.sub).exists()
    assert not TutorSession.objects.filter(student_id=person.pk).exists()
    assert not Correction.objects.filter(user_id=person.pk).exists()
    assert not MemoryItem.objects.filter(user_id=person.pk).exists()
    assert not RecallTrace.objects.filter(student_id=person.pk).exists()
    # What the course keeps: the verdicts under the pseudonym, the approved lesson.
    stand_in = get_user_model().objects.get(username=report.pseudonym)
    assert not stand_in.is_active and not stand_in.has_usable_password()
    kept = Submission.objects.filter(pk__in=life.submissions).order_by("submission_seq")
    assert [s.student_id for s in kept] == [stand_in.pk, stand_in.pk]
    assert [
        a.result["overall"] for a in ReviewAttempt.objects.filter(submission__in=kept).order_by("attempt_seq")
    ] == [
        "FAIL",
        "PASS",
    ]
    lesson = Lesson.objects.get(pk=life.lesson.pk)
    assert lesson.status == LessonStatus.APPROVED and lesson.source_submission_id is None
    assert LessonRevision.objects.filter(lesson=lesson).count() == 2  # captured, then staff's edit
    # The classmate's rows are untouched.
    assert classmates == (
        Submission.objects.filter(student=life.classmate).count(),
        TutorMessage.objects.filter(session__student=life.classmate).count(),
    )
    assert ModelCall.objects.filter(student=life.classmate).exists()
    event = AuditEvent.objects.get(event="student_erased")
    assert event.target_repr == report.pseudonym and event.correlation_id == report.correlation_id
    assert not Fact.objects.filter(proposed_by_id=person.pk).exists()


class _Capture:
    """``django_capture_on_commit_callbacks`` for a transactional test: the
    callbacks run at each commit anyway."""

    def __call__(self, execute=True):
        import contextlib

        return contextlib.nullcontext()


nocap = _Capture()


def test_a_copy_planted_in_a_new_table_is_found(course, task, staff, registration, platform, fake_llm):
    """A table added later (here: a model made by the test in the tutor app)
    is scanned without any edit of the check, and a copy of what the person
    wrote there is reported -- the erasure says it is not complete."""
    from django.apps import apps
    from django.db import models

    life = live(course=course, task=task, platform=platform, staff=staff, fake_llm=fake_llm, capture=nocap)

    class PlantedCopy(models.Model):
        note = models.TextField()
        data = models.JSONField(default=dict)

        class Meta:
            app_label = "tutor"

        def __str__(self) -> str:
            return self.note

    try:
        with connection.schema_editor() as editor:
            editor.create_model(PlantedCopy)
        PlantedCopy.objects.create(note=f"copied: {life.canaries[4]}", data={"student": life.person.pk})

        report = student_erase(user=life.person, canaries=tuple(life.canaries))

        print_residue(report, connection.vendor)
        table = PlantedCopy._meta.db_table
        assert {(h.table, h.column, h.what) for h in report.residue} == {
            (table, "note", "canary 5"),
            (table, "data", "user id"),
        }
        event = AuditEvent.objects.get(event="erasure_residue")
        assert {hit["table"] for hit in event.extra["hits"]} == {table}
        assert life.canaries[4] not in str(event.extra)
    finally:
        with connection.schema_editor() as editor:
            editor.delete_model(PlantedCopy)
        del apps.all_models["tutor"]["plantedcopy"]
        apps.clear_cache()


def test_a_course_only_erasure_leaves_the_other_course_intact(
    course, task, staff, registration, platform, fake_llm
):
    from tests.factories import make_course, make_task
    from tutor.models import Enrollment
    from tutor.services import enrollment_set

    life = live(course=course, task=task, platform=platform, staff=staff, fake_llm=fake_llm, capture=nocap)
    other_course = make_course("se-202")
    other_task = make_task(other_course)
    enrollment_set(course=other_course, username=life.person.username, role="student", create=False)
    from tests.factories import client_for
    from tests.rights.life import chat, submit

    client = client_for(life.person)
    kept_words = "canary-kept-in-the-other-course"
    submit(client, other_task, f"my other course's report {kept_words}", {}, "", nocap)
    chat(client, other_task, f"A question in the other course {kept_words}", nocap)

    def held() -> dict:
        person = life.person
        return {
            "submissions": Submission.objects.filter(student=person, task__course=other_course).count(),
            "messages": TutorMessage.objects.filter(
                session__student=person, session__task__course=other_course
            ).count(),
            "calls": ModelCall.objects.filter(student=person, course=other_course).count(),
        }

    before = held()
    assert min(before.values()) > 0

    report = student_erase(user=life.person, course=course, canaries=tuple(life.canaries))

    print_residue(report, connection.vendor)
    assert report.residue == []
    assert get_user_model().objects.filter(pk=life.person.pk).exists()
    assert Identity.objects.filter(subject=life.sub).exists()  # the person stays, with their LMS identity
    enrolled = Enrollment.objects.filter(user=life.person).values_list("course__slug", flat=True)
    assert list(enrolled) == ["se-202"]
    assert before == held()
    assert not Submission.objects.filter(student=life.person, task__course=course).exists()
    assert not TutorSession.objects.filter(student=life.person, task__course=course).exists()
    # Over the whole database the person is found in the other course only: their
    # rows there, and a model call there that carried their user memory (memory
    # of the user tier reaches every course of the user, SPEC §5).
    left = residue_scan(user_id=life.person.pk, names={}, canaries=(kept_words, *life.canaries))
    assert "canary 1" in {h.what for h in left}
    for hit in left:
        if hit.what.startswith("canary") and hit.what != "canary 1":
            assert hit.table == "tutor_modelcall", hit.line()
            assert ModelCall.objects.get(pk=hit.pk).course == other_course
