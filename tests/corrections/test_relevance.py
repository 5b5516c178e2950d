"""The relevance index follows what it indexes (SPEC §5): facts relevant to
a task's text are those of the text the task has now, whichever was written
first, and ``manage.py corrections_reindex`` writes it all again."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from corrections.models import FactKey, FactToken, TaskFactOverlap, TaskToken
from corrections.relevance import _tokens, task_query_tokens
from tests.factories import client_for, course_data, enroll
from tutor.bench.corrections import bulk_facts
from tutor.coursefile import course_import, validate_course
from tutor.models import Task


def import_course(slug: str, *materials: str):
    data = course_data(slug, tasks=len(materials))
    for spec, text in zip(data["tasks"], materials, strict=True):
        spec["materials"] = text
    return course_import(spec=validate_course(data)).course


def injected(student, task, message: str = "?") -> list[str]:
    response = client_for(student).get("/api/tutor/context/", {"task": task.pk, "message": message})
    assert response.status_code == 200, response.content
    return [fact["statement"] for fact in response.json()["facts"]]


@pytest.mark.django_db
def test_a_reimported_task_text_changes_which_facts_it_makes_relevant():
    course = import_course("rel-101", "alpha bravo")
    student = enroll(course, "rita")
    bulk_facts(course, [(["alpha", "bravo"], "about alpha and bravo"), (["charlie"], "about charlie")])
    task = Task.objects.get(course=course)
    assert injected(student, task) == ["about alpha and bravo"]  # "?" has no token: the task's text alone

    import_course("rel-101", "now charlie instead")

    assert injected(student, task) == ["about charlie"]
    assert set(TaskToken.objects.filter(task=task).values_list("token", flat=True)) >= {"charlie", "instead"}


@pytest.mark.django_db
def test_facts_written_before_a_task_are_relevant_to_it():
    course = import_course("rel-102", "nothing here")
    student = enroll(course, "rita")
    bulk_facts(course, [(["delta", "echo", "foxtrot"], "three words"), (["delta", "golf"], "two words")])

    import_course("rel-102", "nothing here", "delta and echo")  # a second task

    second = Task.objects.get(course=course, slug="t2")
    assert injected(student, second) == ["three words"]  # two of its three tokens
    assert injected(student, Task.objects.get(course=course, slug="t1")) == []


@pytest.mark.django_db
def test_a_saved_task_whose_words_did_not_change_writes_nothing(task, django_assert_num_queries):
    bulk_facts(task.course, [(["materials"], "about materials")])
    before = list(TaskFactOverlap.objects.filter(task=task).values_list("pk", flat=True))
    assert before

    # The UPDATE, then one read of the stored tokens: the same, so nothing is written.
    with django_assert_num_queries(2):
        task.title = "TASK 1"  # case is not a word of its own
        task.save(update_fields=["title"])
    with django_assert_num_queries(1):  # not a field of the text: no read at all
        task.save(update_fields=["position"])

    assert list(TaskFactOverlap.objects.filter(task=task).values_list("pk", flat=True)) == before


@pytest.mark.django_db
def test_the_task_text_is_tokenized_once_per_text(task, student):
    _tokens.cache_clear()

    injected(student, task)
    injected(student, task)
    assert _tokens.cache_info().misses == 1 and _tokens.cache_info().hits >= 1

    task.materials = "Other reading"
    task.save()  # indexing the new text is its first tokenization
    misses = _tokens.cache_info().misses
    injected(student, Task.objects.get(pk=task.pk))
    assert _tokens.cache_info().misses == misses == 2


@pytest.mark.django_db
def test_reindex_writes_the_index_again_after_the_settings_changed(settings):
    course = import_course("rel-103", "alpha bravo charlie")
    student = enroll(course, "rita")
    bulk_facts(course, [(["charlie"], "about charlie"), (["alpha", "bravo"], "about alpha and bravo")])
    task = Task.objects.get(course=course)
    assert sorted(injected(student, task)) == ["about alpha and bravo", "about charlie"]
    keys_before = sorted(FactKey.objects.filter(course=course).values_list("fact_id", "key"))

    # Only the first words of the task are looked up from now on.
    settings.CORRECTIONS_QUERY_MAX_TOKENS = len(task_query_tokens(task)) - 1
    out = StringIO()
    call_command("corrections_reindex", "--course", "rel-103", stdout=out)

    assert out.getvalue().startswith("reindexed 1 courses: 2 facts (2 keys), 1 tasks (")
    assert "charlie" not in set(TaskToken.objects.filter(task=task).values_list("token", flat=True))
    assert injected(student, task) == ["about alpha and bravo"]
    assert sorted(FactKey.objects.filter(course=course).values_list("fact_id", "key")) == keys_before
    assert FactToken.objects.filter(course=course).count() == 3


@pytest.mark.django_db
def test_reindex_refuses_an_unknown_course(course):
    with pytest.raises(CommandError, match="no such course: nope"):
        call_command("corrections_reindex", "--course", "nope", "--course", course.slug, stdout=StringIO())
