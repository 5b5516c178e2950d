"""Benchmark rows of the corrections app (SPEC §10: 10k facts), in the seeder
protocol of ``tutor.bench.seeding`` (size, count, seed, delete).

Facts get topics drawn from a fixed vocabulary, so a few of them share words
with the benchmark's context message and are really injected; the measured
student gets user memory (preferences and factual corrections). Rows are
bulk-inserted with their token rows, in batches.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable

from django.db import transaction
from django.utils import timezone

from corrections.models import (
    CorrectionType,
    Fact,
    FactStatus,
    FactSupporter,
    MemoryItem,
    MemoryTier,
    MemoryToken,
)
from corrections.selectors.memory_snapshot import memory_changed
from corrections.services.memory import memory_tokens
from corrections.services.relevance import facts_index
from corrections.text import text_key, topic_key

# Words of the bench course's tasks and context message ("My CI still fails on
# the empty-array test…") among many others: about one fact in a hundred is relevant.
VOCABULARY = (
    ["empty", "array", "first", "undefined", "test", "ci", "fails"]
    + [f"topic{n:03d}" for n in range(300)]
    + ["function", "return", "value", "callers", "destructure", "report", "edge", "case", "module"]
)


def bulk_facts(course, rows: Iterable[tuple[list[str], str]], supporter_id=None, status=FactStatus.VERIFIED):
    """Insert facts ``(tokens, statement)`` with their place in the relevance
    index (and one supporter each when ``supporter_id`` is given); no audit
    rows: seeding."""
    now = timezone.now()
    facts = [
        Fact(
            course=course,
            topic=" ".join(tokens),
            topic_tokens=tokens,
            topic_key=topic_key(tokens) + f"#{i}",  # distinct keys: the bench has no conflicts
            token_count=len(tokens),
            statement=statement,
            statement_key=f"t:{text_key(statement)}",
            status=status,
            valid_from=now,
            confirmed_at=now,
            supporter_count=1 if supporter_id else 0,
            proposed_by_id=supporter_id,
        )
        for i, (tokens, statement) in enumerate(rows)
    ]
    with transaction.atomic():
        Fact.objects.bulk_create(facts)
        facts_index(facts=facts)  # token rows, keys, overlaps with the course's tasks
        if supporter_id:
            FactSupporter.objects.bulk_create(
                FactSupporter(fact=fact, user_id=supporter_id) for fact in facts
            )
    return facts


def bulk_memories(user_id, rows: Iterable[tuple[str, list[str], str]], course=None):
    """Insert user memory items ``(kind, tokens, content)`` with their tokens."""
    items = [
        MemoryItem(
            user_id=user_id,
            course=course,
            tier=MemoryTier.USER,
            kind=kind,
            content=content,
            statement_key=f"t:{text_key(content)}",
            topic=" ".join(tokens),
            topic_tokens=tokens,
            topic_key=topic_key(tokens),
            token_count=len(tokens),
        )
        for kind, tokens, content in rows
    ]
    with transaction.atomic():
        MemoryItem.objects.bulk_create(items)
        memory_changed(user_id)  # bulk_create sends no signal
        MemoryToken.objects.bulk_create(
            token for item in items for token in memory_tokens(item, item.topic_tokens)
        )
    return items


class FactsSeeder:
    size = "facts"
    default = 10_000
    option_help = "system facts of the bench course (default 10000)"

    def count(self, course) -> int:
        return Fact.objects.filter(course=course).count()

    def seed(self, bench) -> None:
        # Imported here: tutor.bench.seeding lists this seeder, so it imports this module.
        from tutor.bench.seeding import BATCH_ROWS, BENCH_RANDOM_SEED, Progress

        rng = random.Random(BENCH_RANDOM_SEED + 2)
        total = bench.sizes.get(self.size, self.default)
        supporter = bench.student_ids()[-1]
        progress = Progress(bench.write, "facts", total)
        for start in range(0, total, BATCH_ROWS):
            rows = []
            for n in range(start, min(start + BATCH_ROWS, total)):
                tokens = list(dict.fromkeys(rng.sample(VOCABULARY, 3)))
                cases = rng.randint(1, 99)
                rows.append((tokens, f"Fact {n + 1}: {' '.join(tokens)} holds in {cases} cases."))
            bulk_facts(bench.course, rows, supporter_id=supporter)
            progress.update(start + len(rows))

    def delete(self, course, write: Callable[[str], None]) -> None:
        deleted, _ = Fact.objects.filter(course=course).delete()  # tokens and supporters cascade
        write(f"  deleting facts: {deleted} rows")


class MemoriesSeeder:
    size = "memories"
    default = 2000
    option_help = "user memory items of the measured student (default 2000)"

    def count(self, course) -> int:
        return MemoryItem.objects.filter(course=course).count()

    def seed(self, bench) -> None:
        from tutor.bench.seeding import BATCH_ROWS, BENCH_RANDOM_SEED, Progress

        rng = random.Random(BENCH_RANDOM_SEED + 3)
        total = bench.sizes.get(self.size, self.default)
        student_id = bench.student_ids()[0]
        progress = Progress(bench.write, "memories", total)
        for start in range(0, total, BATCH_ROWS):
            rows = []
            for n in range(start, min(start + BATCH_ROWS, total)):
                tokens = list(dict.fromkeys(rng.sample(VOCABULARY, 2)))
                kind = CorrectionType.PREFERENCE if n % 4 == 0 else CorrectionType.FACTUAL
                rows.append((kind, tokens, f"Memory {n + 1} about {' and '.join(tokens)}."))
            bulk_memories(student_id, rows, course=bench.course)
            progress.update(start + len(rows))

    def delete(self, course, write: Callable[[str], None]) -> None:
        deleted, _ = MemoryItem.objects.filter(course=course).delete()
        write(f"  deleting memories: {deleted} rows")
