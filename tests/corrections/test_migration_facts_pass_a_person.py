"""Migration 0012 on a database whose facts one student's correction
verified (CORRECTIONS_MIN_SUPPORTERS = 1 before turn 3): each goes back to
``proposed`` with an open case carrying its statement and supporters; a fact
staff decided stays verified; nothing of the moved ones is injected."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from corrections.models import CaseStatus, CorrectionCase, Fact, FactStatus
from tutor.models import AuditEvent

BEFORE = [("corrections", "0011_fact_staff_note")]
AFTER = [("corrections", "0012_facts_pass_a_person")]


def _fact(old, course, topic: str, statement: str, **fields):
    tokens = topic.split()
    now = timezone.now()
    return old.get_model("corrections", "Fact").objects.create(
        course=course,
        topic=topic,
        topic_tokens=tokens,
        topic_key="|".join(sorted(tokens)),
        token_count=len(tokens),
        statement=statement,
        statement_key=f"t:{statement}",
        status="verified",
        valid_from=now,
        confirmed_at=now,
        **fields,
    )


@pytest.mark.django_db(transaction=True)
def test_facts_verified_without_staff_go_back_to_proposed_with_an_open_case():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    course = old.get_model("tutor", "Course").objects.create(slug="mig-36", title="Migrated")
    User = old.get_model("auth", "User")
    alice, bob, teacher = (User.objects.create(username=n) for n in ("alice", "bob", "teacher"))
    auto = _fact(old, course, "deadline project", "the deadline is December 12", proposed_by=alice)
    for user in (alice, bob):
        old.get_model("corrections", "FactSupporter").objects.create(fact=auto, user=user)
    old.get_model("corrections", "Fact").objects.filter(pk=auto.pk).update(supporter_count=2)
    # A topic that already had a conflict case open: the fact joins it.
    contested = _fact(old, course, "room lab", "the lab is room 101", proposed_by=alice)
    open_case = old.get_model("corrections", "CorrectionCase").objects.create(
        course=course,
        kind="fact",
        topic="room lab",
        topic_tokens=["room", "lab"],
        topic_key="lab|room",
        token_count=2,
        active_fact=contested,
    )
    old.get_model("corrections", "Proposal").objects.create(
        case=open_case, statement="the lab is room 202", statement_key="t:the lab is room 202"
    )
    decided = _fact(old, course, "grading scale", "A is 90 or more", decided_by=teacher)

    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)

    moved = Fact.objects.get(pk=auto.pk)
    assert moved.status == FactStatus.PROPOSED
    case = CorrectionCase.objects.get(pk=moved.case_id)
    assert (case.status, case.kind, case.topic_key, case.active_fact_id) == (
        CaseStatus.OPEN,
        "fact",
        "deadline|project",
        moved.pk,
    )
    [proposal] = case.proposals.all()
    assert (proposal.statement, proposal.supporter_count) == ("the deadline is December 12", 2)
    assert sorted(s.user.username for s in proposal.supporters.all()) == ["alice", "bob"]

    joined = Fact.objects.get(pk=contested.pk)
    assert (joined.status, joined.case_id) == (FactStatus.PROPOSED, open_case.pk)
    assert CorrectionCase.objects.filter(topic_key="lab|room").count() == 1  # one case per topic
    assert sorted(
        CorrectionCase.objects.get(pk=open_case.pk).proposals.values_list("statement", flat=True)
    ) == [
        "the lab is room 101",
        "the lab is room 202",
    ]

    assert Fact.objects.get(pk=decided.pk).status == FactStatus.VERIFIED
    assert not CorrectionCase.objects.filter(topic_key="grading|scale").exists()
    audits = AuditEvent.objects.filter(event="fact_changed", from_state="verified", to_state="proposed")
    assert sorted(a.target_id for a in audits) == sorted([str(auto.pk), str(contested.pk)])
    assert {a.actor_label for a in audits} == {"operator"}
