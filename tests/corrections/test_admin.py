"""The correction queue in Django admin (SPEC §8): what needs a decision,
actions through the services with a message, course scoping, whole history,
and a changelist whose query count does not grow with the cases."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from corrections.models import CaseKind, CaseStatus, CorrectionCase, Fact, FactStatus
from corrections.services.cases import case_propose
from corrections.services.facts import fact_insert
from tests.corrections.conftest import RAINFALL_500, RAINFALL_630, RAINFALL_QUESTION
from tests.factories import enroll, make_course, make_user
from tutor.models import AuditEvent, Enrollment

CHANGELIST = "admin:corrections_correctioncase_changelist"


@pytest.fixture
def open_case(task, student, other_student, chat_for, staff_accepts) -> CorrectionCase:
    first = chat_for(student)
    first.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    first.send("不对，北京年均降雨量是 630mm 左右")
    staff_accepts()  # the 630 mm proposal verified by staff
    second = chat_for(other_student)
    second.send(RAINFALL_QUESTION, reply=RAINFALL_630)
    second.send("实际上北京年均降雨量是 580mm")
    return CorrectionCase.objects.get(status=CaseStatus.OPEN)


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def act(client, action: str, case, reason: str = "", query: str = ""):
    return client.post(
        reverse(CHANGELIST) + query,
        {"action": action, "_selected_action": [str(case.pk)], "reason": reason, "index": 0},
        follow=True,
    )


def shown(response) -> list[str]:
    return [str(m) for m in response.context["messages"]]


@pytest.mark.django_db
def test_the_changelist_shows_topic_fact_proposals_supporters_their_words_and_age(open_case, admin_client):
    response = admin_client.get(reverse(CHANGELIST))

    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == [open_case]
    page = response.content.decode()
    for text in (
        "北京 年均 降雨量",
        "北京年均降雨量是 630mm 左右 (verified)",
        "北京年均降雨量是 580mm (1)",
        "bob: “实际上北京年均降雨量是 580mm”",
    ):
        assert text in page, text
    assert "minute" in page  # the age


@pytest.mark.django_db
def test_the_queue_opens_on_undecided_cases_and_filters(open_case, admin_client, staff):
    from corrections.services.cases import case_reject

    assert admin_client.get(reverse(CHANGELIST)).context["cl"].result_count == 1
    case_reject(case=open_case, staff=staff, reason="keep")
    assert admin_client.get(reverse(CHANGELIST)).context["cl"].result_count == 0
    decided = admin_client.get(reverse(CHANGELIST), {"decision": "decided"})
    assert open_case in list(decided.context["cl"].result_list)
    assert (
        admin_client.get(reverse(CHANGELIST), {"decision": "all", "kind": "process"})
        .context["cl"]
        .result_count
        == 0
    )
    assert (
        admin_client.get(reverse(CHANGELIST), {"decision": "all", "status": "rejected"})
        .context["cl"]
        .result_count
        == 1
    )


@pytest.mark.django_db
def test_accept_action_calls_the_service_and_says_so(open_case, admin_client):
    response = act(admin_client, "accept_cases", open_case, reason="bureau data")

    assert shown(response) == ["Accepted 1 item(s)."]
    open_case.refresh_from_db()
    assert open_case.status == CaseStatus.ACCEPTED and open_case.reason == "bureau data"
    assert Fact.objects.get(status=FactStatus.VERIFIED).statement == "北京年均降雨量是 580mm"
    assert (
        AuditEvent.objects.get(event="case_accepted", target_id=str(open_case.pk)).actor.username == "admin"
    )


@pytest.mark.django_db
@pytest.mark.parametrize("action", ["accept_cases", "reject_cases", "dispute_cases"])
def test_a_decision_without_a_reason_is_refused_with_a_message(open_case, admin_client, action):
    response = act(admin_client, action, open_case)

    assert shown(response) == ["Give a reason for the decision (the field next to the action)."]
    assert CorrectionCase.objects.get(pk=open_case.pk).status == CaseStatus.OPEN


@pytest.mark.django_db
def test_reject_and_dispute_actions(open_case, admin_client):
    response = act(admin_client, "dispute_cases", open_case, reason="sources differ")
    assert shown(response) == ["Disputed 1 item(s)."]
    assert Fact.objects.get().status == FactStatus.DISPUTED
    # The default list holds undecided cases only: a decided one is not acted on.
    response = act(admin_client, "reject_cases", open_case, reason="too late")
    assert shown(response) == ["Nothing rejected: no selected item is in this list."]
    response = act(admin_client, "reject_cases", open_case, reason="too late", query="?decision=all")
    open_case.refresh_from_db()
    assert shown(response) == [f"Not rejected: {open_case}: this case was already decided: disputed by admin"]


@pytest.mark.django_db
def test_course_staff_claim_and_decide_in_admin_and_a_claim_holds(open_case, staff, course):
    teacher = logged_in(staff)
    colleague = logged_in(enroll(course, "teacher2", Enrollment.Role.STAFF))

    assert shown(act(teacher, "claim_cases", open_case)) == ["Claimed 1 item(s)."]
    refused = act(colleague, "accept_cases", open_case, reason="mine")
    assert shown(refused)[0].startswith("Not accepted: ") and "claimed by teacher until" in shown(refused)[0]
    assert shown(act(teacher, "reject_cases", open_case, reason="fact stands")) == ["Rejected 1 item(s)."]
    events = AuditEvent.objects.filter(event__startswith="case_", target_id=str(open_case.pk)).order_by("id")
    assert [(e.event, e.actor_label) for e in events] == [
        ("case_claimed", "teacher"),
        ("case_rejected", "teacher"),
    ]


@pytest.mark.django_db
def test_staff_of_another_course_do_not_see_the_case(open_case):
    outsider = enroll(make_course("elsewhere"), "outsider", Enrollment.Role.STAFF)
    client = logged_in(outsider)

    response = client.get(reverse(CHANGELIST), {"decision": "all"})
    assert response.status_code == 200
    assert list(response.context["cl"].result_list) == []
    assert "北京" not in response.content.decode()
    change = client.get(reverse("admin:corrections_correctioncase_change", args=[open_case.pk]))
    assert change.status_code == 302  # admin's "does not exist": the row is outside their courses
    act(client, "accept_cases", open_case, reason="not mine")
    assert CorrectionCase.objects.get(pk=open_case.pk).status == CaseStatus.OPEN
    facts = client.get(reverse("admin:corrections_fact_changelist"))
    assert list(facts.context["cl"].result_list) == []


@pytest.mark.django_db
def test_the_case_and_fact_pages_show_their_whole_history(open_case, admin_client):
    act(admin_client, "accept_cases", open_case, reason="bureau data")
    case_page = admin_client.get(reverse("admin:corrections_correctioncase_change", args=[open_case.pk]))
    assert case_page.status_code == 200
    text = case_page.content.decode()
    for piece in (
        "北京年均降雨量是 580mm",
        "bob",
        "实际上北京年均降雨量是 580mm",
        "case_accepted",
        "bureau data",
    ):
        assert piece in text, piece

    old = Fact.objects.get(status=FactStatus.SUPERSEDED)
    fact_page = admin_client.get(reverse("admin:corrections_fact_change", args=[old.pk])).content.decode()
    for piece in (
        "alice",
        "不对，北京年均降雨量是 630mm 左右",
        "verified → superseded",
        "Superseded by",
        "580mm",
    ):
        assert piece in fact_page, piece
    assert "– → proposed" in fact_page  # created: who proposed it
    assert "proposed → verified" in fact_page  # and the staff member who accepted it


@pytest.mark.django_db
def test_pin_action_on_facts(open_case, admin_client):
    fact = open_case.active_fact
    response = admin_client.post(
        reverse("admin:corrections_fact_changelist"),
        {"action": "pin_facts", "_selected_action": [str(fact.pk)], "reason": "checked", "index": 0},
        follow=True,
    )
    assert shown(response) == ["Pinned 1 item(s)."]
    fact.refresh_from_db()
    assert fact.pinned
    assert AuditEvent.objects.filter(event="fact_changed", extra__pinned=True).count() == 1


@pytest.mark.django_db
def test_records_are_read_only_in_admin(open_case, admin_client):
    url = reverse("admin:corrections_correctioncase_change", args=[open_case.pk])
    assert admin_client.post(url, {"status": "accepted"}).status_code == 403
    assert admin_client.get(reverse("admin:corrections_correctioncase_add")).status_code == 403
    assert CorrectionCase.objects.get(pk=open_case.pk).status == CaseStatus.OPEN


def make_cases(course, n: int) -> None:
    """``n`` fact cases, each on its own topic with two proposals of two supporters."""
    users = [make_user(f"u{course.slug}{i}") for i in range(4)]
    now = timezone.now()
    with transaction.atomic():
        for i in range(n):
            tokens = [f"题目{i}", "数据"]
            fact = fact_insert(
                course=course, tokens=tokens, statement=f"值是 {i}", statement_key=f"n:{i}",
                statement_unit="", status=FactStatus.VERIFIED, actor=None, now=now,
            )  # fmt: skip
            for j, user in enumerate(users):
                case_propose(
                    course=course, kind=CaseKind.FACT, tokens=tokens, key=fact.topic_key, active_fact=fact,
                    statement=f"值是 {100 + j % 2}", statement_key=f"n:{100 + j % 2}", statement_unit="",
                    user=user, correction=None,
                )  # fmt: skip


@pytest.mark.django_db
@pytest.mark.parametrize("cases", [1, 12])
def test_changelist_queries_do_not_grow_with_cases(course, admin_client, django_assert_num_queries, cases):
    make_cases(course, cases)

    # session, user, the course filter's choices, the filtered count (capped;
    # no total count), the page of cases (course, fact, claimer joined), their
    # proposals, the proposals' supporters with users and words.
    with django_assert_num_queries(7):
        response = admin_client.get(reverse(CHANGELIST))

    assert response.context["cl"].result_count == cases
