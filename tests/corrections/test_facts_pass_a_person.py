"""A person between a student and the class (SPEC §5 turn 3, issue 36 item 1):
a student's factual correction is a proposal in the staff queue, the
author's own context carries it meanwhile, and classmates' model requests
carry nothing of it until staff accept it -- as written, in staff's wording,
or disputed with a note -- or the course's opt-in corroboration rule does."""

from __future__ import annotations

import json

import pytest

from corrections.models import CaseStatus, CorrectionCase, Fact, FactStatus, MemoryItem
from tests.corrections.conftest import RAINFALL_500, RAINFALL_630, RAINFALL_QUESTION
from tutor.models import AuditEvent

CORRECTION = "不对，北京年均降雨量是 630mm 左右"
STUDENT_WORDS = "北京年均降雨量是 630mm 左右"


def request_text(chat) -> str:
    """The whole JSON the tutor's last model request carried."""
    return json.dumps(chat.fake_llm.requests[-1], ensure_ascii=False)


@pytest.fixture
def proposed(student, chat_for):
    """Alice corrects the tutor: 630 mm."""
    author = chat_for(student)
    author.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    author.send(CORRECTION)
    return author


@pytest.mark.django_db
def test_a_students_correction_is_a_proposal_in_the_queue_and_the_authors_memory(proposed, student):
    fact = Fact.objects.get()
    case = CorrectionCase.objects.get()

    assert (fact.status, fact.statement, fact.proposed_by) == (FactStatus.PROPOSED, STUDENT_WORDS, student)
    assert not Fact.objects.filter(status=FactStatus.VERIFIED).exists()
    assert (case.status, case.kind, case.active_fact_id, fact.case_id) == ("open", "fact", fact.pk, case.pk)
    assert [(p.statement, p.supporter_count) for p in case.proposals.all()] == [(STUDENT_WORDS, 1)]
    assert MemoryItem.objects.get(user=student, tier="user").content == STUDENT_WORDS
    # The author's next request carries it, as their own memory, not as a course fact.
    proposed.send(RAINFALL_QUESTION)
    assert "630mm" in proposed.last_system
    meta = proposed.context(RAINFALL_QUESTION)["meta"]
    assert meta["fact_ids"] == [] and meta["memory_ids"]


@pytest.mark.django_db
def test_no_classmate_sees_a_proposal_until_staff_accept_it(proposed, other_student, chat_for, staff_client):
    classmate = chat_for(other_student)
    classmate.send(RAINFALL_QUESTION)
    assert "630" not in request_text(classmate)
    assert classmate.context(RAINFALL_QUESTION)["meta"]["fact_ids"] == []

    case = CorrectionCase.objects.get()
    response = staff_client.post(f"/api/correction-cases/{case.pk}/accept/", {"reason": "bureau data"})

    assert response.status_code == 200, response.content
    fact = Fact.objects.get()  # verified in place: the proposal as written
    assert (fact.status, fact.decided_by.username, fact.case_id) == (FactStatus.VERIFIED, "teacher", case.pk)
    assert response.json()["result_fact"] == str(fact.pk)
    classmate.send(RAINFALL_QUESTION)
    assert STUDENT_WORDS in classmate.last_system
    assert AuditEvent.objects.filter(
        event="fact_changed", from_state="proposed", to_state="verified", actor__username="teacher"
    ).exists()


@pytest.mark.django_db
def test_a_classmate_saying_the_same_joins_the_one_case_and_verifies_nothing(
    proposed, other_student, third_student, chat_for
):
    second = chat_for(other_student)
    second.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    second.send("不对，北京年均降雨量是 630 毫米")
    third = chat_for(third_student)
    third.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    third.send("实际上北京年均降雨量是 580mm")

    fact = Fact.objects.get()
    case = CorrectionCase.objects.get()  # one case per topic
    assert (fact.status, fact.supporter_count) == (FactStatus.PROPOSED, 2)
    assert sorted((p.statement_key, p.supporter_count) for p in case.proposals.all()) == [
        ("n:580", 1),
        ("n:630", 2),
    ]
    third.send(RAINFALL_QUESTION)
    assert "630" not in third.last_system  # the third student's own 580 only
    assert "580mm" in third.last_system


@pytest.mark.django_db
def test_staff_wording_is_the_verified_fact_the_class_is_told(
    proposed, other_student, chat_for, staff_client
):
    case = CorrectionCase.objects.get()
    wording = "北京多年平均年降水量约为 585mm（气象局 1991-2020 数据）"

    response = staff_client.post(
        f"/api/correction-cases/{case.pk}/accept/", {"reason": "the bureau's figure", "statement": wording}
    )

    assert response.status_code == 200, response.content
    fact = Fact.objects.get(status=FactStatus.VERIFIED)
    assert (fact.statement, fact.statement_key, fact.proposed_by.username, fact.decided_by.username) == (
        wording,
        "n:585",
        "teacher",
        "teacher",
    )
    assert Fact.objects.get(status=FactStatus.SUPERSEDED).statement == STUDENT_WORDS
    created = AuditEvent.objects.get(event="fact_changed", to_state="verified", from_state="")
    assert (created.actor.username, created.extra["staff_wording"]) == ("teacher", True)
    assert AuditEvent.objects.get(event="case_accepted").extra["staff_statement"] == wording

    classmate = chat_for(other_student)
    classmate.send(RAINFALL_QUESTION)
    assert wording in classmate.last_system
    assert STUDENT_WORDS not in request_text(classmate)


@pytest.mark.django_db
def test_a_dispute_note_is_what_the_tutor_is_told(proposed, other_student, chat_for, staff_client):
    case = CorrectionCase.objects.get()
    note = "Sources differ (500-630 mm by period); say the range and cite the bureau."

    response = staff_client.post(
        f"/api/correction-cases/{case.pk}/dispute/", {"reason": "sources differ", "note": note}
    )

    assert response.status_code == 200, response.content
    assert response.json()["active_fact"]["staff_note"] == note
    fact = Fact.objects.get()
    assert (fact.status, fact.staff_note, fact.disputed_with) == (FactStatus.DISPUTED, note, [])
    classmate = chat_for(other_student)
    classmate.send(RAINFALL_QUESTION)
    assert f"DISPUTED, staff note: {note}; statements: {STUDENT_WORDS}" in classmate.last_system
    item = next(i for i in classmate.context(RAINFALL_QUESTION)["facts"] if i["kind"] == "fact")
    assert item["staff_note"] == note


@pytest.mark.django_db
def test_a_rejected_proposal_never_reaches_the_class(proposed, other_student, chat_for, staff_client):
    case = CorrectionCase.objects.get()

    response = staff_client.post(f"/api/correction-cases/{case.pk}/reject/", {"reason": "wrong"})

    assert response.status_code == 200, response.content
    fact = Fact.objects.get()
    assert (fact.status, fact.decided_by.username) == (FactStatus.SUPERSEDED, "teacher")
    assert fact.valid_to is not None
    classmate = chat_for(other_student)
    classmate.send(RAINFALL_QUESTION)
    assert "630" not in request_text(classmate)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "body, field",
    [
        ({"reason": "ok", "statement": 585}, "statement"),
        ({"reason": "ok", "statement": ""}, "statement"),
        ({"reason": "ok", "statement": "x" * 1001}, "statement"),
        ({"statement": "北京年均降雨量约为 585mm"}, "reason"),
    ],
)
def test_bad_staff_wording_is_a_400_on_its_field_and_changes_nothing(proposed, staff_client, body, field):
    case = CorrectionCase.objects.get()

    response = staff_client.post(f"/api/correction-cases/{case.pk}/accept/", body, format="json")

    assert response.status_code == 400
    assert field in json.dumps(response.json())
    assert Fact.objects.get().status == FactStatus.PROPOSED
    assert CorrectionCase.objects.get().status == CaseStatus.OPEN


@pytest.mark.django_db
def test_a_bad_dispute_note_is_a_400_on_note(proposed, staff_client):
    case = CorrectionCase.objects.get()

    response = staff_client.post(
        f"/api/correction-cases/{case.pk}/dispute/", {"reason": "r", "note": ["a"]}, format="json"
    )

    assert response.status_code == 400
    assert "note" in json.dumps(response.json())
    assert Fact.objects.get().status == FactStatus.PROPOSED


@pytest.mark.django_db
def test_a_proposed_fact_with_a_case_is_decided_in_the_case(proposed, staff):
    from corrections.services.facts import fact_verify
    from tutor.kernel.errors import Conflict

    with pytest.raises(Conflict):
        fact_verify(fact=Fact.objects.get(), staff=staff, reason="ok")
    assert Fact.objects.get().status == FactStatus.PROPOSED


# --- opt-in corroboration -----------------------------------------------------------


def _second_student_agrees(other_student, chat_for):
    second = chat_for(other_student)
    second.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    second.send("不对，北京年均降雨量是 630 毫米")


@pytest.mark.django_db
def test_corroboration_off_two_students_agreeing_verify_nothing(proposed, other_student, chat_for):
    _second_student_agrees(other_student, chat_for)

    assert Fact.objects.get().status == FactStatus.PROPOSED
    assert CorrectionCase.objects.get().status == CaseStatus.OPEN


@pytest.mark.django_db
def test_corroboration_on_two_distinct_students_verify_it_audited(
    settings, student, other_student, third_student, chat_for
):
    settings.CORRECTIONS_AUTO_VERIFY_SUPPORTERS = 2
    author = chat_for(student)
    author.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    author.send(CORRECTION)
    author.send(CORRECTION)  # the same student again counts once
    assert Fact.objects.get().status == FactStatus.PROPOSED
    onlooker = chat_for(third_student)
    onlooker.send(RAINFALL_QUESTION)
    assert "630" not in request_text(onlooker)

    _second_student_agrees(other_student, chat_for)

    fact = Fact.objects.get()
    case = CorrectionCase.objects.get()
    assert (fact.status, fact.supporter_count, fact.decided_by) == (FactStatus.VERIFIED, 2, None)
    assert (case.status, case.result_fact_id, case.decided_by) == (CaseStatus.ACCEPTED, fact.pk, None)
    assert AuditEvent.objects.filter(
        event="fact_changed", from_state="proposed", to_state="verified", actor=other_student
    ).exists()
    assert AuditEvent.objects.get(event="case_accepted").extra == {"corroborated": True, "supporters": 2}
    onlooker.send(RAINFALL_QUESTION)
    assert STUDENT_WORDS in onlooker.last_system


@pytest.mark.django_db
def test_corroboration_waits_for_staff_when_students_disagree(
    settings, proposed, other_student, third_student, chat_for
):
    settings.CORRECTIONS_AUTO_VERIFY_SUPPORTERS = 2
    third = chat_for(third_student)
    third.send(RAINFALL_QUESTION, reply=RAINFALL_630)
    third.send("实际上北京年均降雨量是 580mm")

    _second_student_agrees(other_student, chat_for)

    assert Fact.objects.get().status == FactStatus.PROPOSED
    assert CorrectionCase.objects.get().status == CaseStatus.OPEN


@pytest.mark.django_db
def test_a_process_case_accepted_in_staff_wording_is_the_course_rule(
    student, other_student, chat_for, staff_client
):
    chat_for(student).send("First write the tests, then the code.")
    case = CorrectionCase.objects.get()
    wording = "Write a failing test first, then the code that makes it pass."

    response = staff_client.post(
        f"/api/correction-cases/{case.pk}/accept/", {"reason": "course practice", "statement": wording}
    )

    assert response.status_code == 200, response.content
    classmate = chat_for(other_student)
    classmate.send("what now?")
    assert wording in classmate.last_system
    assert "First write the tests" not in classmate.last_system
