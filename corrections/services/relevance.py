"""The relevance index of course facts (SPEC §5, §10), written with what it
indexes. Details: docs/architecture.md, Corrections in the tutor context.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

from django.db import transaction
from django.db.models import Count, Max

from corrections.models import INJECTED_FACT_STATUSES, Fact, FactKey, FactToken, TaskFactOverlap, TaskToken
from corrections.relevance import reach, task_query_tokens
from corrections.selectors.course_snapshot import corrections_changed
from corrections.text import token_keys
from tutor.models import Task


def facts_index(*, facts: Iterable[Fact]) -> None:
    """Token rows, keys and task overlaps of new facts (their topics are set
    and never change). Three inserts and one read per course, whatever the
    number of facts."""
    by_course: dict = defaultdict(list)
    for fact in facts:
        by_course[fact.course_id].append(fact)
    for course_id, course_facts in by_course.items():
        FactToken.objects.bulk_create(
            FactToken(fact=fact, course_id=course_id, token=token, token_count=fact.token_count)
            for fact in course_facts
            for token in dict.fromkeys(fact.topic_tokens)
        )
        FactKey.objects.bulk_create(
            FactKey(fact=fact, course_id=course_id, key=key)
            for fact in course_facts
            for key in token_keys(fact.topic_tokens)
        )
        TaskFactOverlap.objects.bulk_create(_overlaps_of_facts(course_id, course_facts))
        if any(fact.status in INJECTED_FACT_STATUSES for fact in course_facts):
            # after the writes: outside a transaction it publishes at once
            corrections_changed(course_id, facts=[fact.pk for fact in course_facts])


def _overlaps_of_facts(course_id, facts: list[Fact]) -> list[TaskFactOverlap]:
    facts_by_token: dict[str, list[Fact]] = defaultdict(list)
    for fact in facts:
        for token in set(fact.topic_tokens):
            facts_by_token[token].append(fact)
    if not facts_by_token:
        return []
    hits: dict[tuple, int] = defaultdict(int)
    rows = TaskToken.objects.filter(course_id=course_id, token__in=list(facts_by_token)).values_list(
        "task_id", "token"
    )
    for task_id, token in rows:
        for fact in facts_by_token[token]:
            hits[(task_id, fact)] += 1
    return [
        TaskFactOverlap(task_id=task_id, fact=fact, hits=n, reach=reach(n, fact.token_count))
        for (task_id, fact), n in hits.items()
    ]


def task_index(*, task: Task, created: bool = False) -> bool:
    """The task's tokens and its overlap with the course's facts, if its
    text's tokens (or its course) changed -- always for a new task; True
    when written. The writes are atomic: the course's new snapshot version
    is written after all of them (``corrections.selectors.course_snapshot``)."""
    tokens = list(task_query_tokens(task))
    if not created:
        stored = set(TaskToken.objects.filter(task=task).values_list("course_id", "token"))
        if stored == {(task.course_id, token) for token in tokens}:
            return False
    with transaction.atomic():
        if not created:
            TaskToken.objects.filter(task=task).delete()
            TaskFactOverlap.objects.filter(task=task).delete()
        TaskToken.objects.bulk_create(TaskToken(task=task, course_id=task.course_id, token=t) for t in tokens)
        if tokens:
            per_fact = (
                FactToken.objects.filter(course_id=task.course_id, token__in=tokens)
                .values("fact_id")
                .annotate(hits=Count("id"), token_count=Max("token_count"))
                .order_by()
            )
            TaskFactOverlap.objects.bulk_create(
                TaskFactOverlap(
                    task=task,
                    fact_id=row["fact_id"],
                    hits=row["hits"],
                    reach=reach(row["hits"], row["token_count"]),
                )
                for row in per_fact
            )
        corrections_changed(task.course_id)
    return True


def relevance_rebuild(*, courses=None, progress: Callable[[str, int, int], None] | None = None) -> dict:
    """Every fact's keys and token counts and every task's tokens and
    overlaps again (``courses``: a queryset of courses, or all). Per course,
    one transaction. Returns the rows written per kind."""
    from tutor.models import Course

    written = {"courses": 0, "facts": 0, "tasks": 0, "keys": 0, "overlaps": 0}
    scope = Course.objects.all() if courses is None else courses
    course_ids = list(scope.order_by("slug").values_list("pk", flat=True))
    for done, course_id in enumerate(course_ids, start=1):
        with transaction.atomic():
            facts = list(
                Fact.objects.filter(course_id=course_id).only(
                    "id", "course_id", "topic_tokens", "token_count"
                )
            )
            FactToken.objects.filter(course_id=course_id).delete()
            FactKey.objects.filter(course_id=course_id).delete()
            TaskToken.objects.filter(course_id=course_id).delete()
            TaskFactOverlap.objects.filter(task__course_id=course_id).delete()
            corrections_changed(course_id)
            # Tasks first: the facts' overlaps are then found from their tokens.
            tasks = list(Task.objects.filter(course_id=course_id))
            for task in tasks:
                task_index(task=task, created=True)
            facts_index(facts=facts)
        written["courses"] += 1
        written["facts"] += len(facts)
        written["tasks"] += len(tasks)
        if progress:
            progress("courses", done, len(course_ids))
    written["keys"] = FactKey.objects.filter(course_id__in=course_ids).count()
    written["overlaps"] = TaskFactOverlap.objects.filter(task__course_id__in=course_ids).count()
    return written
