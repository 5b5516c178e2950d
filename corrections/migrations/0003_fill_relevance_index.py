"""Fill the relevance index for the facts, tasks and memory items already
stored (what corrections.services.relevance writes for new ones)."""

from collections import defaultdict

from django.db import migrations
from django.db.models import OuterRef, Subquery

from corrections.conf import setting
from corrections.relevance import reach, task_text
from corrections.text import query_tokens, token_keys

BATCH = 2000


def fill(apps, schema_editor):
    Course = apps.get_model("tutor", "Course")
    Task = apps.get_model("tutor", "Task")
    Fact = apps.get_model("corrections", "Fact")
    FactToken = apps.get_model("corrections", "FactToken")
    FactKey = apps.get_model("corrections", "FactKey")
    TaskToken = apps.get_model("corrections", "TaskToken")
    TaskFactOverlap = apps.get_model("corrections", "TaskFactOverlap")
    MemoryItem = apps.get_model("corrections", "MemoryItem")
    MemoryToken = apps.get_model("corrections", "MemoryToken")

    FactToken.objects.update(
        token_count=Subquery(Fact.objects.filter(pk=OuterRef("fact_id")).values("token_count")[:1])
    )
    item = MemoryItem.objects.filter(pk=OuterRef("memory_id"))
    MemoryToken.objects.update(
        user_id=Subquery(item.values("user_id")[:1]),
        tier=Subquery(item.values("tier")[:1]),
        kind=Subquery(item.values("kind")[:1]),
        updated_at=Subquery(item.values("updated_at")[:1]),
    )
    cap = setting("CORRECTIONS_QUERY_MAX_TOKENS")
    for course_id in Course.objects.values_list("pk", flat=True):
        facts = list(
            Fact.objects.filter(course_id=course_id).values_list("pk", "topic_tokens", "token_count")
        )
        FactKey.objects.bulk_create(
            (
                FactKey(fact_id=pk, course_id=course_id, key=key)
                for pk, tokens, _ in facts
                for key in token_keys(tokens)
            ),
            batch_size=BATCH,
        )
        facts_by_token = defaultdict(list)
        for pk, tokens, count in facts:
            for token in set(tokens):
                facts_by_token[token].append((pk, count))
        for task in Task.objects.filter(course_id=course_id):
            tokens = query_tokens(task_text(task), cap)
            TaskToken.objects.bulk_create(
                (TaskToken(task_id=task.pk, course_id=course_id, token=t) for t in tokens), batch_size=BATCH
            )
            hits, counts = defaultdict(int), {}
            for token in tokens:
                for pk, count in facts_by_token.get(token, ()):
                    hits[pk] += 1
                    counts[pk] = count
            TaskFactOverlap.objects.bulk_create(
                (
                    TaskFactOverlap(task_id=task.pk, fact_id=pk, hits=n, reach=reach(n, counts[pk]))
                    for pk, n in hits.items()
                ),
                batch_size=BATCH,
            )


class Migration(migrations.Migration):
    dependencies = [
        ("corrections", "0002_relevance_index_tables"),
    ]

    operations = [
        migrations.RunPython(fill, migrations.RunPython.noop, elidable=True),
    ]
