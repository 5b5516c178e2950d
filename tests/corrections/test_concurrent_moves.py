"""Memory writes of concurrent transactions lock nothing kept per user and
kind (SPEC §5 omitted counts, §10), and the memory tables load from a dump.
Migration 0010 dropped the trigger-kept ``UserMemoryCount`` (0009), whose
rows did; migrating back and forth keeps its counts right."""

from __future__ import annotations

from collections import Counter

import pytest
from django.db import connection
from django.utils import timezone

from corrections.models import CorrectionType, MemoryItem
from tests.concurrency import (
    assert_reloads_from_dump,
    concurrent_writers,
    interleave,
    migrate,
    table_exists,
    table_triggers,
)
from tests.corrections.test_injection import make_item

COUNTS = "corrections_usermemorycount"
ITEMS = "corrections_memoryitem"


def user_items(user, *kinds):
    now = timezone.now()
    return [make_item(user, tier="user", kind=kind, tokens=["t"], updated_at=now) for kind in kinds]


def moved(item: MemoryItem, kind: str):
    return lambda: MemoryItem.objects.filter(pk=item.pk).update(kind=kind)


@concurrent_writers
@pytest.mark.django_db(transaction=True)
def test_crossing_kind_moves_of_one_users_memory_in_two_transactions_both_commit(student):
    """Each transaction re-files two of one user's items under kinds the
    other's moves also touch, crosswise: both commit. With 0009's triggers
    this deadlocked on PostgreSQL every time."""
    pref_a, fact_a, pref_b, fact_b = user_items(
        student,
        CorrectionType.PREFERENCE,
        CorrectionType.FACTUAL,
        CorrectionType.PREFERENCE,
        CorrectionType.FACTUAL,
    )

    errors = interleave(
        [moved(pref_a, CorrectionType.PROCESS), moved(fact_a, CorrectionType.PROCESS)],
        [moved(fact_b, CorrectionType.NEGATIVE), moved(pref_b, CorrectionType.NEGATIVE)],
    )

    assert errors == [None, None]
    assert Counter(MemoryItem.objects.values_list("kind", flat=True)) == {"process": 2, "negative": 2}


@pytest.mark.django_db(transaction=True)
def test_the_memory_loads_from_its_own_dump(student, other_student, tmp_path):
    user_items(student, CorrectionType.PREFERENCE, CorrectionType.FACTUAL)
    user_items(other_student, CorrectionType.NEGATIVE)

    assert_reloads_from_dump(
        "corrections", MemoryItem.objects.all(), ["id", "user_id", "tier", "kind"], tmp_path
    )


@pytest.mark.django_db(transaction=True)
def test_migrating_back_to_the_trigger_kept_counts_refills_them_and_forward_drops_them(student):
    assert not table_exists(COUNTS)
    assert table_triggers(ITEMS) == set()
    user_items(student, CorrectionType.PREFERENCE, CorrectionType.PREFERENCE, CorrectionType.FACTUAL)

    try:
        old = migrate("corrections", "0009_user_memory_counts")
        counts = old.get_model("corrections", "UserMemoryCount").objects
        assert {(row.user_id, row.kind): row.item_count for row in counts.all()} == {
            (student.pk, "preference"): 2,
            (student.pk, "factual"): 1,
        }
        assert table_triggers(ITEMS) == (
            {"corrections_user_memory_count_write", "corrections_user_memory_count_move"}
            if connection.vendor == "postgresql"
            else {
                "corrections_user_memory_count_insert",
                "corrections_user_memory_count_delete",
                "corrections_user_memory_count_move_out",
                "corrections_user_memory_count_move_in",
            }
        )
    finally:
        migrate("corrections", None)

    assert not table_exists(COUNTS)
    assert table_triggers(ITEMS) == set()
    user_items(student, CorrectionType.NEGATIVE)  # no trigger writes to the dropped table
    assert MemoryItem.objects.count() == 4
