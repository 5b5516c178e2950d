"""Erasing a student whose work became a lesson staff approved and put in
use (SPEC §13): the lesson stays without their words, and so do the
classmates' tutor requests it was recalled into -- the model-call rows kept
for the course carried the lesson as it read then."""

from __future__ import annotations

import pytest
from django.db import connection

from lessons.models import RecallTrace
from lessons.services.lifecycle import lesson_inject
from tests.factories import client_for, enroll
from tests.rights.life import chat, live
from tests.rights.test_erasure import nocap, print_residue
from tutor.models import ModelCall
from tutor.rights.erasure import student_erase

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def staff(course):
    return enroll(course, "teacher", "staff")


def test_a_lesson_from_their_work_recalled_for_a_classmate_leaves_no_residue(
    course, task, staff, registration, platform, fake_llm
):
    life = live(course=course, task=task, platform=platform, staff=staff, fake_llm=fake_llm, capture=nocap)
    lesson_inject(lesson=life.lesson, actor=staff)
    chat(client_for(life.classmate), task, "first() returns undefined for an empty array? A2 fails", nocap)
    [trace] = RecallTrace.objects.filter(student=life.classmate, recalled=life.lesson)
    calls = ModelCall.objects.filter(student=life.classmate, correlation_id=trace.correlation_id)
    assert calls.exists()

    report = student_erase(user=life.person, canaries=tuple(life.canaries))

    print_residue(report, connection.vendor)
    assert [hit.line() for hit in report.residue] == []
    assert calls.exists()  # the classmate's request stays, without the person's words
