"""The relevance index is filled for rows stored before it existed
(migrations 0002-0004), on the database the suite runs on."""

from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from corrections.models import FactKey, FactToken, MemoryToken, TaskFactOverlap, TaskToken

BEFORE = [("corrections", "0001_initial")]


@pytest.mark.django_db(transaction=True)
def test_migrating_fills_the_index_of_stored_facts_tasks_and_memory():
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes("corrections")
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    course = old.get_model("tutor", "Course").objects.create(slug="mig-101", title="Migrated")
    task = old.get_model("tutor", "Task").objects.create(
        course=course, slug="t1", title="Alpha work", goal="alpha and bravo", steps=["Read"], materials=""
    )
    user = old.get_model("auth", "User").objects.create(username="mira")
    now = timezone.now()
    fact = old.get_model("corrections", "Fact").objects.create(
        course=course,
        topic="alpha bravo charlie",
        topic_tokens=["alpha", "bravo", "charlie"],
        topic_key="alpha|bravo|charlie",
        token_count=3,
        statement="s",
        statement_key="t:s",
        status="verified",
        valid_from=now,
        confirmed_at=now,
    )
    for token in fact.topic_tokens:
        old.get_model("corrections", "FactToken").objects.create(fact=fact, course=course, token=token)
    item = old.get_model("corrections", "MemoryItem").objects.create(
        user=user, tier="user", kind="factual", content="c", statement_key="t:c", topic_tokens=["alpha"]
    )
    old.get_model("corrections", "MemoryToken").objects.create(memory=item, token="alpha")

    executor = MigrationExecutor(connection)
    executor.migrate(latest)

    assert set(FactToken.objects.values_list("token", "token_count")) == {
        ("alpha", 3),
        ("bravo", 3),
        ("charlie", 3),
    }
    assert set(FactKey.objects.values_list("key", flat=True)) == {
        "alpha bravo",
        "alpha charlie",
        "bravo charlie",
    }
    assert {"alpha", "bravo", "work", "read"} <= set(TaskToken.objects.values_list("token", flat=True))
    assert list(TaskFactOverlap.objects.values_list("task_id", "fact_id", "hits", "reach")) == [
        (task.pk, fact.pk, 2, 2)  # two of three: relevant while INJECT_MIN_TOKENS <= 2
    ]
    token = MemoryToken.objects.get()
    assert (token.user_id, token.tier, token.kind) == (user.pk, "user", "factual")
    assert token.updated_at == item.updated_at
