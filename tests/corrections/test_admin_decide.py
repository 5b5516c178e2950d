"""The case decision page in admin (SPEC §5 turn 3, §8): accept with staff
wording, dispute with the note the tutor is told, field errors on bad input
(400, nothing changed), and only the case's course staff get the page."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from corrections.models import CaseStatus, CorrectionCase, Fact, FactStatus
from tests.corrections.conftest import RAINFALL_500, RAINFALL_QUESTION
from tests.factories import enroll, make_course
from tutor.models import Enrollment

WORDING = "北京多年平均年降水量约为 585mm"


@pytest.fixture
def case(student, chat_for) -> CorrectionCase:
    chat = chat_for(student)
    chat.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    chat.send("不对，北京年均降雨量是 630mm 左右")
    return CorrectionCase.objects.get()


@pytest.fixture
def staff_web(staff) -> Client:
    client = Client()
    client.force_login(staff)
    return client


def decide_url(case) -> str:
    return reverse("admin:corrections_correctioncase_decide", args=[case.pk])


@pytest.mark.django_db
def test_the_queue_row_links_to_the_decision_page(case, staff_web):
    page = staff_web.get(reverse("admin:corrections_correctioncase_changelist")).content.decode()
    assert decide_url(case) in page
    form = staff_web.get(decide_url(case))
    assert form.status_code == 200
    assert "北京年均降雨量是 630mm 左右 (1)" in form.content.decode()


@pytest.mark.django_db
def test_accept_with_staff_wording_from_the_page(case, staff_web, other_student, chat_for):
    response = staff_web.post(
        decide_url(case), {"decision": "accept", "statement": WORDING, "reason": "bureau data"}
    )

    assert response.status_code == 302
    fact = Fact.objects.get(status=FactStatus.VERIFIED)
    assert (fact.statement, fact.proposed_by.username) == (WORDING, "teacher")
    classmate = chat_for(other_student)
    classmate.send(RAINFALL_QUESTION)
    assert WORDING in classmate.last_system


@pytest.mark.django_db
def test_dispute_with_a_note_from_the_page(case, staff_web, other_student, chat_for):
    note = "Figures differ by period; give the range 500-630 mm."

    response = staff_web.post(decide_url(case), {"decision": "dispute", "note": note, "reason": "unclear"})

    assert response.status_code == 302
    assert Fact.objects.get().staff_note == note
    classmate = chat_for(other_student)
    classmate.send(RAINFALL_QUESTION)
    assert f"staff note: {note}" in classmate.last_system


@pytest.mark.django_db
@pytest.mark.parametrize(
    "data, field",
    [
        ({"decision": "reject", "statement": WORDING, "reason": "r"}, "statement"),
        ({"decision": "accept", "note": "n", "reason": "r"}, "note"),
        ({"decision": "accept", "reason": ""}, "reason"),
        ({"decision": "approve", "reason": "r"}, "decision"),
        ({"decision": "accept", "proposal": "not-a-proposal", "reason": "r"}, "proposal"),
        ({"decision": "accept", "statement": "x" * 1001, "reason": "r"}, "statement"),
    ],
)
def test_bad_input_is_a_400_on_its_field_and_changes_nothing(case, staff_web, data, field):
    response = staff_web.post(decide_url(case), data)

    assert response.status_code == 400
    assert response.context["form"].errors.get(field), response.context["form"].errors
    assert CorrectionCase.objects.get().status == CaseStatus.OPEN
    assert Fact.objects.get().status == FactStatus.PROPOSED


@pytest.mark.django_db
def test_staff_of_another_course_and_students_get_no_page(case, student):
    outsider = enroll(make_course("elsewhere"), "outsider", Enrollment.Role.STAFF)
    outsider.is_staff = True
    outsider.save(update_fields=["is_staff"])
    for user in (outsider, student):
        client = Client()
        client.force_login(user)
        response = client.post(decide_url(case), {"decision": "accept", "reason": "r"})
        assert response.status_code in (302, 404)
    assert CorrectionCase.objects.get().status == CaseStatus.OPEN
