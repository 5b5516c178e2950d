"""Server sequence numbers (SPEC §2, §11)."""

from __future__ import annotations

from django.db import transaction
from django.db.models import F

from feedback.models import Counter


def next_seq(name: str, count: int = 1) -> int:
    """Reserve ``count`` values of the named sequence and return the first;
    call inside the inserting transaction.

    The UPDATE takes the counter row's lock (PostgreSQL) or the database write
    lock (SQLite, IMMEDIATE) and holds it until commit, so values are gapless,
    never reused (a rollback rolls the increment back) and in commit order.
    """
    assert transaction.get_connection().in_atomic_block, "next_seq needs a transaction"
    if Counter.objects.filter(name=name).update(value=F("value") + count) == 0:
        Counter.objects.get_or_create(name=name)
        Counter.objects.filter(name=name).update(value=F("value") + count)
    return Counter.objects.values_list("value", flat=True).get(name=name) - count + 1
