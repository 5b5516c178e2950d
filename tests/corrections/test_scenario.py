"""Seed 002's scenario end to end through the HTTP API (SPEC §5, seed 002 §1, §4.4).

The tutor said 500 mm; a student corrects it to 630 mm (a number: 0.9, a
proposed system fact in the staff queue, turn 3); a second student asking
about Beijing's rainfall gets nothing of it until staff accept it, then
630 mm in the exact model request; a third says 580 mm: one open case, the
fact unchanged, the third student's own context carries their correction;
staff accept: the old fact is superseded with provenance, and the tutor now
says 580 mm.
"""

from __future__ import annotations

import pytest

from corrections.models import (
    CaseStatus,
    Correction,
    CorrectionCase,
    Fact,
    FactStatus,
    FactSupporter,
    MemoryItem,
)
from tests.corrections.conftest import RAINFALL_500, RAINFALL_630, RAINFALL_QUESTION
from tests.factories import enroll
from tutor.models import AuditEvent

STATED_630 = "北京年均降雨量是 630mm 左右"


@pytest.mark.django_db
def test_seed_002_scenario_end_to_end(
    task, student, other_student, third_student, staff_client, chat_for, fake_llm
):
    alice, bob, carol = chat_for(student), chat_for(other_student), chat_for(third_student)

    # 1. The tutor says 500 mm; alice corrects it with a number.
    alice.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    alice.send("不对，北京年均降雨量是 630mm 左右")

    correction = Correction.objects.get(user=student)
    assert correction.type == "factual"
    assert correction.confidence >= 0.85
    assert correction.topic_tokens == ["北京", "年均", "降雨量"]
    assert correction.original_statement == "北京年均降雨量约为 500mm"
    assert correction.corrected_statement == "北京年均降雨量是 630mm 左右"
    assert correction.tiers == ["system", "user", "case"]
    fact = Fact.objects.get()
    assert (fact.status, fact.statement, fact.supporter_count) == (
        FactStatus.PROPOSED,
        "北京年均降雨量是 630mm 左右",
        1,
    )
    assert correction.fact_id == fact.pk
    first_case = CorrectionCase.objects.get()
    assert correction.case_id == first_case.pk

    # 2. Bob, another student of the course, asks: nothing of it until staff accept;
    # then the model request carries 630 mm.
    bob.send(RAINFALL_QUESTION, reply=RAINFALL_630)
    assert "630" not in bob.last_system
    response = staff_client.post(f"/api/correction-cases/{first_case.pk}/accept/", {"reason": "checked"})
    assert response.status_code == 200, response.content
    bob.send(RAINFALL_QUESTION, reply=RAINFALL_630)
    system = bob.last_system
    fenced = f"<<<BEGIN COURSE_FACTS>>>\n- 北京 年均 降雨量: {STATED_630}\n<<<END COURSE_FACTS>>>"
    assert fenced in system
    assert "500mm" not in system
    assert Correction.objects.filter(user=other_student).count() == 0  # a question is no correction

    # 3. Carol says 580 mm: one open case, the fact unchanged, her own memory.
    carol.send(RAINFALL_QUESTION, reply=RAINFALL_630)
    carol.send("实际上是 580mm")
    dave = chat_for(enroll(task.course, "dave"))
    dave.send(RAINFALL_QUESTION, reply=RAINFALL_630)
    dave.send("实际上北京年均降雨量是 580mm")

    case = CorrectionCase.objects.get(status=CaseStatus.OPEN)
    assert case.active_fact_id == fact.pk
    proposal = case.proposals.get()
    assert proposal.supporter_count == 2  # carol and dave, one statement
    fact.refresh_from_db()
    assert (fact.status, fact.statement, fact.valid_to) == (FactStatus.VERIFIED, STATED_630, None)
    carols = Correction.objects.get(user=third_student)
    assert carols.tiers == ["user", "case"] and carols.case_id == case.pk
    assert MemoryItem.objects.get(user=third_student).content == "北京年均降雨量约为 580mm"

    carol.send(RAINFALL_QUESTION, reply=RAINFALL_630)
    assert "北京年均降雨量约为 580mm" in carol.last_system
    assert "北京年均降雨量是 630mm 左右" in carol.last_system  # the course fact, and her own correction
    bob.send("北京年均降雨量多少？", reply=RAINFALL_630)
    assert "580" not in bob.last_system  # a student's memory reaches only that student

    # 4. Staff accept: the old fact is superseded, with provenance.
    listed = staff_client.get("/api/correction-cases/", {"status": "open"}).json()["results"]
    assert [c["id"] for c in listed] == [str(case.pk)]
    assert listed[0]["proposals"][0]["supporters"] == ["carol", "dave"]
    response = staff_client.post(
        f"/api/correction-cases/{case.pk}/accept/", {"reason": "Meteorological Bureau, 1991-2020 normal"}
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["status"] == "accepted" and body["decided_by"] == "teacher"

    fact.refresh_from_db()
    new = Fact.objects.get(status=FactStatus.VERIFIED)
    assert fact.status == FactStatus.SUPERSEDED and fact.valid_to is not None
    assert new.supersedes_id == fact.pk and new.case_id == case.pk
    assert new.statement == "北京年均降雨量约为 580mm"
    assert new.decision_reason == "Meteorological Bureau, 1991-2020 normal"
    assert new.decided_by.username == "teacher"
    assert sorted(FactSupporter.objects.filter(fact=new).values_list("user__username", flat=True)) == [
        "carol",
        "dave",
    ]
    events = list(AuditEvent.objects.filter(event__in=["case_accepted", "fact_changed"]).order_by("id"))
    assert [(e.event, e.from_state, e.to_state, e.actor_label) for e in events] == [
        ("fact_changed", "", "proposed", "alice"),
        ("case_accepted", "open", "accepted", "teacher"),
        ("fact_changed", "proposed", "verified", "teacher"),
        ("case_accepted", "open", "accepted", "teacher"),
        ("fact_changed", "verified", "superseded", "teacher"),
        ("fact_changed", "", "verified", "teacher"),
    ]

    bob.send(RAINFALL_QUESTION, reply="580mm")
    assert "- 北京 年均 降雨量: 北京年均降雨量约为 580mm" in bob.last_system
    assert "630mm" not in bob.last_system
