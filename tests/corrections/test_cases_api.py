"""The review queue over HTTP (SPEC §5, §7, §8): shapes, claims and leases,
decisions, refusals, audit rows, and who may see what."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from corrections.models import CaseStatus, CorrectionCase, Fact, FactStatus
from tests.corrections.conftest import RAINFALL_500, RAINFALL_630, RAINFALL_QUESTION
from tests.factories import client_for, enroll, make_course
from tutor.models import AuditEvent, Enrollment


@pytest.fixture
def open_case(task, student, other_student, third_student, chat_for, staff_accepts) -> CorrectionCase:
    """A verified 630 mm fact and a case with two proposals: 580 mm (two
    supporters) and 600 mm (one)."""
    first = chat_for(student)
    first.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    first.send("不对，北京年均降雨量是 630mm 左右")
    staff_accepts()  # the 630 mm proposal verified by staff
    for user, value in ((other_student, 580), (third_student, 580), (enroll(task.course, "erin"), 600)):
        chat = chat_for(user)
        chat.send(RAINFALL_QUESTION, reply=RAINFALL_630)
        chat.send(f"实际上北京年均降雨量是 {value}mm")
    return CorrectionCase.objects.get(status=CaseStatus.OPEN)


@pytest.fixture
def second_staff(course):
    return client_for(enroll(course, "teacher2", Enrollment.Role.STAFF))


@pytest.mark.django_db
def test_the_case_shape(open_case, staff_client):
    response = staff_client.get(f"/api/correction-cases/{open_case.pk}/")

    assert response.status_code == 200
    body = response.json()
    assert set(body) >= {
        "id",
        "course",
        "topic",
        "status",
        "active_fact",
        "proposals",
        "claimed_by",
        "claimed_until",
        "decided_by",
        "reason",
        "created_at",
    }
    assert (body["status"], body["topic"], body["claimed_by"], body["decided_by"]) == (
        "open",
        "北京 年均 降雨量",
        None,
        None,
    )
    assert body["active_fact"]["statement"] == "北京年均降雨量是 630mm 左右"
    assert body["active_fact"]["supporters"] == 1
    first, second = body["proposals"]
    assert (first["statement"], first["supporters"]) == ("北京年均降雨量是 580mm", ["bob", "carol"])
    assert [c["content"] for c in first["corrections"]] == ["实际上北京年均降雨量是 580mm"] * 2
    assert (second["statement"], second["supporters"]) == ("北京年均降雨量是 600mm", ["erin"])


@pytest.mark.django_db
def test_accept_picks_the_proposal_with_most_supporters_by_default(open_case, staff_client):
    response = staff_client.post(f"/api/correction-cases/{open_case.pk}/accept/", {"reason": "bureau data"})

    assert response.status_code == 200, response.content
    assert Fact.objects.get(status=FactStatus.VERIFIED).statement == "北京年均降雨量是 580mm"
    assert response.json()["result_fact"] == str(Fact.objects.get(status=FactStatus.VERIFIED).pk)


@pytest.mark.django_db
def test_accept_a_named_proposal(open_case, staff_client):
    proposal = open_case.proposals.get(statement_key="n:600")

    response = staff_client.post(
        f"/api/correction-cases/{open_case.pk}/accept/",
        {"reason": "newer data", "proposal": str(proposal.pk)},
    )

    assert response.status_code == 200
    new = Fact.objects.get(status=FactStatus.VERIFIED)
    assert new.statement == "北京年均降雨量是 600mm"
    assert list(new.supporters.values_list("user__username", flat=True)) == ["erin"]


@pytest.mark.django_db
def test_reject_keeps_the_fact(open_case, staff_client):
    fact = open_case.active_fact

    response = staff_client.post(
        f"/api/correction-cases/{open_case.pk}/reject/", {"reason": "the fact is right"}
    )

    assert response.status_code == 200
    assert response.json()["status"] == "rejected"
    fact.refresh_from_db()
    assert (fact.status, fact.valid_to) == (FactStatus.VERIFIED, None)
    event = AuditEvent.objects.get(event="case_rejected")
    assert (event.reason, event.actor_label, event.to_state) == ("the fact is right", "teacher", "rejected")


@pytest.mark.django_db
def test_dispute_marks_the_fact_disputed_with_every_statement(open_case, staff_client):
    response = staff_client.post(
        f"/api/correction-cases/{open_case.pk}/dispute/", {"reason": "sources differ"}
    )

    assert response.status_code == 200
    fact = Fact.objects.get()
    assert fact.status == FactStatus.DISPUTED
    assert fact.disputed_with == ["北京年均降雨量是 580mm", "北京年均降雨量是 600mm"]
    assert (
        AuditEvent.objects.filter(event="fact_changed", from_state="verified", to_state="disputed").count()
        == 1
    )
    assert AuditEvent.objects.filter(event="case_disputed").count() == 1


@pytest.mark.django_db
def test_a_claim_holds_the_case_against_other_staff(open_case, staff_client, second_staff):
    response = staff_client.post(f"/api/correction-cases/{open_case.pk}/claim/")
    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["claimed_by"]) == ("claimed", "teacher")

    for verb in ("claim", "accept", "reject", "dispute"):
        refused = second_staff.post(f"/api/correction-cases/{open_case.pk}/{verb}/", {"reason": "mine"})
        assert refused.status_code == 409, verb
        assert "claimed by teacher until" in refused.json()["errors"][0]["detail"]
    assert CorrectionCase.objects.get(pk=open_case.pk).status == CaseStatus.CLAIMED
    # The holder decides.
    assert (
        staff_client.post(f"/api/correction-cases/{open_case.pk}/accept/", {"reason": "ok"}).status_code
        == 200
    )
    assert AuditEvent.objects.filter(event="case_claimed", actor_label="teacher").count() == 1


@pytest.mark.django_db
def test_an_expired_lease_lets_anyone_claim_or_decide(open_case, staff_client, second_staff):
    staff_client.post(f"/api/correction-cases/{open_case.pk}/claim/")
    CorrectionCase.objects.filter(pk=open_case.pk).update(claimed_until=timezone.now() - timedelta(seconds=1))

    listed = second_staff.get(f"/api/correction-cases/{open_case.pk}/").json()
    assert (listed["status"], listed["claimed_by"]) == ("open", None)
    response = second_staff.post(f"/api/correction-cases/{open_case.pk}/reject/", {"reason": "expired lease"})
    assert response.status_code == 200
    assert response.json()["decided_by"] == "teacher2"


@pytest.mark.django_db
def test_the_lease_lasts_the_configured_time(open_case, staff_client, settings):
    settings.CORRECTIONS_CASE_LEASE_SECONDS = 600
    before = timezone.now()
    staff_client.post(f"/api/correction-cases/{open_case.pk}/claim/")

    until = CorrectionCase.objects.get(pk=open_case.pk).claimed_until
    assert before + timedelta(seconds=600) <= until <= timezone.now() + timedelta(seconds=600)


@pytest.mark.django_db
def test_deciding_a_decided_case_is_409(open_case, staff_client, second_staff):
    assert (
        staff_client.post(f"/api/correction-cases/{open_case.pk}/accept/", {"reason": "a"}).status_code == 200
    )

    for client in (staff_client, second_staff):
        for verb in ("accept", "reject", "dispute", "claim"):
            response = client.post(f"/api/correction-cases/{open_case.pk}/{verb}/", {"reason": "again"})
            assert response.status_code == 409, verb
            assert "already decided: accepted by teacher" in response.json()["errors"][0]["detail"]
    assert Fact.objects.filter(status=FactStatus.VERIFIED).count() == 1
    assert AuditEvent.objects.filter(event="case_accepted", target_id=str(open_case.pk)).count() == 1


@pytest.mark.django_db
def test_two_staff_deciding_at_once_only_one_wins(open_case, staff, course):
    """The conditional UPDATE decides; the loser's service call is refused."""
    from corrections.services.cases import case_accept, case_reject
    from tutor.kernel.errors import Conflict

    other = enroll(course, "teacher3", Enrollment.Role.STAFF)
    stale_copy = CorrectionCase.objects.get(pk=open_case.pk)  # both loaded it while open
    case_reject(case=open_case, staff=staff, reason="first")
    with pytest.raises(Conflict):
        case_accept(case=stale_copy, staff=other, reason="second")
    assert CorrectionCase.objects.get(pk=open_case.pk).status == CaseStatus.REJECTED


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("verb", "body", "field"),
    [
        ("accept", {}, "reason"),
        ("accept", {"reason": ""}, "reason"),
        ("accept", {"reason": "x" * 2001}, "reason"),
        ("accept", {"reason": "ok", "proposal": "not-a-uuid"}, "proposal"),
        ("accept", {"reason": "ok", "proposal": "00000000-0000-0000-0000-000000000000"}, "proposal"),
        ("reject", {"reason": "   "}, "reason"),
        ("dispute", {}, "reason"),
    ],
)
def test_bad_decisions_are_400_on_the_field_and_change_nothing(open_case, staff_client, verb, body, field):
    response = staff_client.post(f"/api/correction-cases/{open_case.pk}/{verb}/", body, format="json")

    assert response.status_code == 400, response.content
    assert response.json()["errors"][0]["attr"] == field
    assert CorrectionCase.objects.get(pk=open_case.pk).status == CaseStatus.OPEN
    assert not AuditEvent.objects.filter(event__startswith="case_", target_id=str(open_case.pk)).exists()


@pytest.mark.django_db
def test_students_may_not_use_the_queue(open_case, student_client):
    assert student_client.get("/api/correction-cases/").status_code == 403
    assert (
        student_client.post(f"/api/correction-cases/{open_case.pk}/accept/", {"reason": "x"}).status_code
        == 403
    )


@pytest.mark.django_db
def test_staff_of_another_course_do_not_see_the_case(open_case):
    elsewhere = client_for(enroll(make_course("other-course"), "outsider", Enrollment.Role.STAFF))

    assert elsewhere.get("/api/correction-cases/").json()["results"] == []
    assert elsewhere.get(f"/api/correction-cases/{open_case.pk}/").status_code == 404
    assert elsewhere.post(f"/api/correction-cases/{open_case.pk}/accept/", {"reason": "x"}).status_code == 404
    assert CorrectionCase.objects.get(pk=open_case.pk).status == CaseStatus.OPEN


@pytest.mark.django_db
def test_anonymous_is_401_and_a_malformed_id_is_404(open_case, staff_client):
    from rest_framework.test import APIClient

    assert APIClient().get("/api/correction-cases/").status_code == 401
    assert staff_client.get("/api/correction-cases/12/").status_code == 404


@pytest.mark.django_db
def test_the_list_filters_by_status_and_keeps_a_constant_query_count(
    open_case, staff_client, django_assert_num_queries
):
    accepted = staff_client.get("/api/correction-cases/", {"status": "accepted"}).json()["results"]
    assert [c["status"] for c in accepted] == ["accepted"]  # the 630 mm proposal staff accepted
    assert len(staff_client.get("/api/correction-cases/", {"status": "open"}).json()["results"]) == 1
    assert staff_client.get("/api/correction-cases/", {"status": "nonsense"}).status_code == 400
    # token, the staff check, count, cases, proposals, supporters with users and words
    with django_assert_num_queries(6):
        staff_client.get("/api/correction-cases/")


@pytest.mark.django_db
def test_a_process_case_cannot_be_disputed(student, chat_for, staff_client):
    chat_for(student).send("First write the tests, then the code.")
    case = CorrectionCase.objects.get()

    response = staff_client.post(f"/api/correction-cases/{case.pk}/dispute/", {"reason": "?"})
    assert response.status_code == 409
    assert staff_client.post(f"/api/correction-cases/{case.pk}/reject/", {"reason": "no"}).status_code == 200
