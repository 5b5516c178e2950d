"""The per-user counts of user memory the tutor context reports
(``UserMemoryCount``, SPEC §5 omitted counts, §10): kept by database
triggers, they equal a count of the items themselves after every kind of
write, and the migration that adds them fills them from the items stored."""

from __future__ import annotations

from collections import Counter

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from corrections.models import CorrectionType, MemoryItem, MemoryTier, UserMemoryCount
from tests.corrections.test_injection import make_item
from tutor.sessions import session_open


def stored() -> dict:
    return {(row.user_id, row.kind): row.item_count for row in UserMemoryCount.objects.all()}


def counted() -> dict:
    return dict(
        Counter(MemoryItem.objects.filter(tier=MemoryTier.USER).values_list("user_id", "kind").order_by())
    )


def assert_kept():
    assert stored() == counted()


@pytest.mark.django_db
def test_the_counts_follow_every_kind_of_memory_write(task, student, other_student):
    now = timezone.now()
    session, _ = session_open(student=student, task=task)
    prefs = [
        make_item(student, tier="user", kind=CorrectionType.PREFERENCE, tokens=["a"], updated_at=now)
        for _ in range(3)
    ]
    make_item(student, tier="user", kind=CorrectionType.FACTUAL, tokens=["b"], updated_at=now)
    in_session = make_item(
        student, tier="session", kind=CorrectionType.FACTUAL, tokens=["c"], updated_at=now, session=session.pk
    )
    make_item(other_student, tier="user", kind=CorrectionType.NEGATIVE, tokens=["d"], updated_at=now)
    assert_kept()
    assert stored() == {
        (student.pk, "preference"): 3,
        (student.pk, "factual"): 1,
        (other_student.pk, "negative"): 1,
    }  # session memory is not counted

    MemoryItem.objects.filter(pk=prefs[0].pk).update(kind=CorrectionType.PROCESS)
    MemoryItem.objects.filter(pk=prefs[1].pk).update(user=other_student)
    MemoryItem.objects.filter(pk=in_session.pk).update(tier=MemoryTier.USER, session=None)
    assert_kept()
    prefs[2].content = "edited"
    prefs[2].save()  # no counted column changed
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE corrections_memoryitem SET kind = %s WHERE user_id = %s", ["negative", student.pk]
        )
    assert_kept()

    prefs[2].delete()
    MemoryItem.objects.filter(user=other_student, kind=CorrectionType.NEGATIVE).delete()
    assert_kept()
    assert all(n > 0 for n in stored().values())  # no row of 0 is kept
    get_user_model().objects.filter(pk=student.pk).delete()  # the user's items go with them
    assert_kept()
    MemoryItem.objects.all().delete()
    assert stored() == {}


BEFORE = [("corrections", "0008_pending_detection_live_index")]


@pytest.mark.django_db(transaction=True)
def test_migrating_counts_the_memory_stored_before():
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes("corrections")
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    User, OldItem = old.get_model("auth", "User"), old.get_model("corrections", "MemoryItem")
    user = User.objects.create(username="mig-memory")
    for n, kind in enumerate(["preference", "preference", "factual"]):
        OldItem.objects.create(
            user=user,
            tier="user",
            kind=kind,
            content=f"m{n}",
            statement_key=f"k{n}",
            topic="t",
            topic_tokens=["t"],
        )

    MigrationExecutor(connection).migrate(latest)

    assert stored() == {(user.pk, "preference"): 2, (user.pk, "factual"): 1}
