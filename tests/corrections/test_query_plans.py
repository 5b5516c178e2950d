"""Query plans the tutor context depends on (SPEC §10): the facts and memory
statements look their few candidates up through the relevance index and the
primary keys, and never read every fact of the course or every item of the
user -- so a request costs the same with 100 or 10,000 of them.

Planners choose by statistics, so the plans are read on tables with a
realistic spread (thousands of facts of one course, memory items of many
users) after ANALYZE. The SQL explained is the ORM's, which is the prepared
statements' own (tests/corrections/test_injection.py); on PostgreSQL it is
explained as prepared, planned once for any values, as it runs."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone

from corrections.selectors.injection import NO_SESSION, MessageLookup, facts_queryset, memory_queryset
from corrections.text import query_tokens, text_keys
from tests.factories import course_data, enroll
from tests.plans import assert_index_narrowed, plan_of
from tutor.bench.corrections import VOCABULARY, bulk_facts, bulk_memories
from tutor.bench.seeding import CONTEXT_MESSAGE
from tutor.coursefile import course_import, validate_course
from tutor.models import Task

FACTS, TASKS, USERS, PER_USER, MEASURED_ITEMS = 3000, 12, 60, 40, 1500


def analyze() -> None:
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


def full_scan(table: str) -> str:
    return f"SCAN {table}" if connection.vendor == "sqlite" else f"Seq Scan on {table}"


@dataclass
class Spread:
    course: object
    task: object
    student: object


@pytest.fixture
def spread(db):
    """A course of 12 tasks whose texts share words with thousands of its
    facts, and the memory of many students, one of them with a long one."""
    rng = random.Random(20260101)
    data = course_data("plans-101", tasks=TASKS)
    for spec in data["tasks"]:
        spec["materials"] = " ".join(rng.sample(VOCABULARY, 20))
    course = course_import(spec=validate_course(data)).course
    bulk_facts(course, [(rng.sample(VOCABULARY, 3), f"fact {n}") for n in range(FACTS)])
    users = [enroll(course, f"planner{n}") for n in range(USERS)]
    for i, user in enumerate(users):
        # The first has a long memory, like the benchmark's student.
        count = MEASURED_ITEMS if i == 0 else PER_USER
        rows = [
            ("factual" if n % 4 else "preference", rng.sample(VOCABULARY, 2), f"m{n}") for n in range(count)
        ]
        bulk_memories(user.pk, rows, course=course)
    analyze()
    return Spread(course=course, task=Task.objects.filter(course=course).first(), student=users[0])


@pytest.mark.django_db
@pytest.mark.parametrize("lookup", [MessageLookup.KEYS, MessageLookup.TOKENS, MessageLookup.NONE])
def test_relevant_facts_come_from_the_index_and_the_primary_key(spread, lookup):
    tokens = [] if lookup == MessageLookup.NONE else query_tokens(CONTEXT_MESSAGE, 400)
    plan = plan_of(
        facts_queryset(
            course_id=spread.course.pk,
            task_id=spread.task.pk,
            message_tokens=tokens,
            message_keys=text_keys(tokens) if lookup == MessageLookup.KEYS else [],
            min_tokens=2,
            fresh_since=timezone.now() - timedelta(days=30),
            limit=8,
            lookup=lookup,
        )
    )

    assert "taskfactoverlap_reach_idx" in plan, plan
    expected = {MessageLookup.KEYS: "factkey_lookup_idx", MessageLookup.TOKENS: "facttoken_hits_idx"}
    if lookup in expected:
        assert expected[lookup] in plan, plan
    assert full_scan("corrections_fact") not in plan, plan
    assert full_scan("corrections_facttoken") not in plan and "JIT" not in plan, plan


@pytest.mark.django_db
@pytest.mark.parametrize("with_message", [True, False])
def test_the_users_memory_comes_from_its_indexes_and_the_primary_key(spread, with_message):
    tokens = query_tokens(CONTEXT_MESSAGE, 400) if with_message else []
    plan = plan_of(
        memory_queryset(
            user_id=spread.student.pk,
            session_id=NO_SESSION,
            message_tokens=tokens,
            now=timezone.now(),
            preferences_limit=8,
            memories_limit=8,
            by_message=with_message,
        )
    )

    if connection.vendor == "sqlite":
        assert "memoryitem_kind_recent_idx" in plan and "memoryitem_recent_idx" in plan, plan
    else:
        # One plan for every user: a user's items are read through an index
        # led by the user (PostgreSQL may take the user's own index and sort,
        # as its average user has a few dozen items), or by id. Measured with
        # a user of 2,000 items, that beats planning for each user's values.
        assert_index_narrowed(plan, "corrections_memoryitem", ("user_id", "id"))
    if with_message:
        assert "memorytoken_user_token_idx" in plan, plan
    assert full_scan("corrections_memoryitem") not in plan, plan
    assert full_scan("corrections_memorytoken") not in plan and "JIT" not in plan, plan
