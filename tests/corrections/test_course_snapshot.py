"""The facts, process rules and memory sections read each process's snapshots of the
course and the user (SPEC §5, §10; ``corrections.selectors.course_snapshot``): a warm context reads
no fact, overlap or rule, and every committed change is seen -- by the
writing process at once, by the others once the course's new version is
written. (That the snapshot selects what the statements select is
tests.corrections.test_injection's; that every context behaves alike on both
paths, tests.corrections.test_context's.)

These tests commit their writes (``transaction=True``), as a deployment does."""

from __future__ import annotations

import sqlite3
from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from corrections.models import Fact, FactStatus, ProcessRule
from corrections.services.facts import fact_set_pinned
from tests.factories import client_for, enroll, make_course, make_task
from tests.tutor.test_context import CONTEXT_GET_QUERIES, open_session, task_context
from tutor.bench.corrections import bulk_facts
from tutor.db.snapshots import scope_key, user_scope_key
from tutor.models import Enrollment, ScopeVersion

RAINFALL = ["北京", "年均", "降雨量"]
QUESTION = "北京年均降雨量是多少？"
CORRECTIONS_TABLES = ('"corrections_fact"', '"corrections_taskfactoverlap"', '"corrections_processrule"')


def statements(preview: dict) -> list[str]:
    return [item["statement"] for item in preview["facts"]]


def corrections_queries(captured) -> list[str]:
    return [q["sql"] for q in captured.captured_queries if any(t in q["sql"] for t in CORRECTIONS_TABLES)]


@pytest.fixture
def setting_up(transactional_db):
    course = make_course("snapshot-101")
    task = make_task(course)
    student = enroll(course, "snapshot-student")
    staff = enroll(course, "snapshot-staff", Enrollment.Role.STAFF)
    client = client_for(student)
    open_session(client, task)
    return course, task, client, staff


def test_a_warm_context_reads_no_fact_overlap_or_rule(setting_up):
    course, task, client, staff = setting_up
    bulk_facts(course, [(RAINFALL, "北京年均降雨量约 630mm"), (["materials"], "Materials are optional")])
    ProcessRule.objects.create(course=course, statement="先写测试", statement_key="t:1", approved_by=staff)

    with CaptureQueriesContext(connection) as cold:
        first = task_context(client, task, QUESTION)
    with CaptureQueriesContext(connection) as warm:
        second = task_context(client, task, QUESTION)

    # The snapshots' loads: the facts, the tasks' overlaps, the rules (3); the
    # lessons (1) and the student's memory (2).
    assert len(corrections_queries(cold)) == 3
    assert len(cold) == CONTEXT_GET_QUERIES + 6
    assert corrections_queries(warm) == [] and len(warm) == CONTEXT_GET_QUERIES
    assert (
        statements(first)
        == statements(second)
        == [
            "北京年均降雨量约 630mm",
            "Materials are optional",  # through the task text ("Some materials")
            "先写测试",
        ]
    )


def test_another_process_change_is_seen_once_its_version_is_written(setting_up):
    course, task, client, _ = setting_up
    bulk_facts(course, [(RAINFALL, "北京年均降雨量约 630mm")])
    assert statements(task_context(client, task, QUESTION)) == ["北京年均降雨量约 630mm"]

    # Another process supersedes it: its rows commit, this process hears nothing ...
    Fact.objects.update(status=FactStatus.SUPERSEDED, valid_to=timezone.now())
    assert statements(task_context(client, task, QUESTION)) == ["北京年均降雨量约 630mm"]

    # ... until that process writes the course's new version after its commit.
    ScopeVersion.objects.update_or_create(
        key=scope_key("corrections", course.pk), defaults={"version": 11, "changed_at": timezone.now()}
    )
    assert statements(task_context(client, task, QUESTION)) == []


def test_a_pin_brings_back_a_fact_past_its_ttl_at_once(setting_up, settings):
    course, task, client, staff = setting_up
    bulk_facts(course, [(RAINFALL, "北京年均降雨量约 630mm")])
    Fact.objects.update(confirmed_at=timezone.now() - timedelta(days=settings.CORRECTIONS_FACT_TTL_DAYS + 1))
    ScopeVersion.objects.update_or_create(  # that write's version, as its process would write it
        key=scope_key("corrections", course.pk), defaults={"version": 12, "changed_at": timezone.now()}
    )
    assert statements(task_context(client, task, QUESTION)) == []
    before = ScopeVersion.objects.get(key=scope_key("corrections", course.pk)).version

    fact_set_pinned(fact=Fact.objects.get(), staff=staff, pinned=True, reason="still true")

    assert statements(task_context(client, task, QUESTION)) == ["北京年均降雨量约 630mm"]
    assert ScopeVersion.objects.get(key=scope_key("corrections", course.pk)).version != before


def test_a_task_whose_text_changes_is_told_the_facts_of_its_new_text(setting_up):
    course, task, client, _ = setting_up
    bulk_facts(
        course, [(["materials"], "Materials are optional"), (["glossary"], "The glossary is in docs/")]
    )
    assert statements(task_context(client, task)) == ["Materials are optional"]

    task.materials = "A glossary"
    task.save()  # its overlaps with the course's facts are written again

    assert statements(task_context(client, task)) == ["The glossary is in docs/"]


def test_a_deleted_rule_leaves_the_context(setting_up):
    course, task, client, staff = setting_up
    rule = ProcessRule.objects.create(
        course=course, statement="先写测试", statement_key="t:1", approved_by=staff
    )
    assert statements(task_context(client, task)) == ["先写测试"]

    rule.delete()

    assert statements(task_context(client, task)) == []


def preferences(preview: dict) -> list[str]:
    return [item["content"] for item in preview["preferences"] if item["kind"] == "preference"]


def test_a_forgotten_preference_leaves_the_next_context(setting_up):
    from corrections.models import MemoryItem
    from tutor.bench.corrections import bulk_memories

    course, task, client, _ = setting_up
    student = get_user_model().objects.get(username="snapshot-student")
    bulk_memories(student.pk, [("preference", ["简短"], "回答简短一些")])
    assert preferences(task_context(client, task)) == ["回答简短一些"]

    item = MemoryItem.objects.get()
    assert client.delete(f"/api/memory/{item.pk}/").status_code == 204

    assert preferences(task_context(client, task)) == []


def test_another_process_memory_write_is_seen_once_its_version_is_written(setting_up):
    from corrections.models import MemoryItem
    from tutor.bench.corrections import bulk_memories

    course, task, client, _ = setting_up
    student = get_user_model().objects.get(username="snapshot-student")
    bulk_memories(student.pk, [("preference", ["简短"], "回答简短一些")])
    assert preferences(task_context(client, task)) == ["回答简短一些"]

    MemoryItem.objects.update(content="回答详细一些")  # another process: this one hears nothing
    assert preferences(task_context(client, task)) == ["回答简短一些"]

    ScopeVersion.objects.update_or_create(
        key=user_scope_key("memory", student.pk), defaults={"version": 13, "changed_at": timezone.now()}
    )
    assert preferences(task_context(client, task)) == ["回答详细一些"]


def test_a_task_saved_outside_a_transaction_publishes_after_its_overlaps(setting_up, monkeypatch):
    """What another process loads the moment the new version is written
    must already hold the task's new overlaps."""
    import tutor.db.snapshots
    from corrections.models import TaskFactOverlap
    from corrections.selectors.course_snapshot import COURSE_FACTS, corrections_scope_keys

    course, task, client, _ = setting_up
    bulk_facts(course, [(["glossary"], "The glossary is in docs/")])
    publish, seen = tutor.db.snapshots.versions_publish, []

    def publish_then_read(keys, using, **kwargs):
        publish(keys, using, **kwargs)
        seen.append(TaskFactOverlap.objects.filter(task=task).count())
        COURSE_FACTS.get(corrections_scope_keys(course.pk), course.pk)  # another reader, right then

    monkeypatch.setattr(tutor.db.snapshots, "versions_publish", publish_then_read)
    task.materials = "A glossary"
    task.save()  # autocommit

    assert seen and seen[-1] == 1
    assert statements(task_context(client, task)) == ["The glossary is in docs/"]


def test_facts_of_equal_overlap_and_confirmation_come_in_the_statements_order(setting_up):
    from corrections.selectors.course_snapshot import course_facts_load, facts_from_snapshot
    from corrections.selectors.injection import facts_relevant
    from corrections.text import query_tokens

    course, task, _, _ = setting_up
    bulk_facts(course, [(["alpha", "bravo"], f"fact {i}") for i in range(30)])
    Fact.objects.update(confirmed_at=timezone.now().replace(microsecond=0))
    tokens = query_tokens("alpha bravo", 400)
    arguments = {"task_id": task.pk, "message_tokens": tokens, "now": timezone.now(), "limit": 8}

    snapshot = facts_from_snapshot(course_facts_load(course.pk), **arguments)
    statement = facts_relevant(course_id=course.pk, has_task_tokens=True, **arguments)

    assert (snapshot.rows, snapshot.total) == (statement.rows, statement.total)


def test_memory_items_of_equal_recency_come_in_the_statements_order(setting_up):
    from corrections.models import MemoryItem
    from corrections.selectors.injection import memory_for_context
    from corrections.selectors.memory_snapshot import memory_from_snapshot, user_memory_load
    from tutor.bench.corrections import bulk_memories

    student = get_user_model().objects.get(username="snapshot-student")
    rows = [("factual", ["alpha"], f"m{i}") for i in range(30)] + [
        ("preference", ["alpha"], f"p{i}") for i in range(30)
    ]
    bulk_memories(student.pk, rows)
    MemoryItem.objects.update(updated_at=timezone.now().replace(microsecond=0))
    arguments = {
        "session_id": None,
        "message_tokens": ["alpha"],
        "now": timezone.now(),
        "preferences_limit": 5,
        "memories_limit": 5,
    }

    snapshot = memory_from_snapshot(user_memory_load(student.pk), **arguments)
    statement = memory_for_context(user_id=student.pk, **arguments)

    assert [(s.rows, s.total) for s in snapshot] == [(s.rows, s.total) for s in statement]


def test_a_course_with_more_facts_than_sqlite_binds_parameters_loads(setting_up):
    from corrections.selectors.course_snapshot import course_facts_load

    course, task, client, _ = setting_up
    bulk_facts(course, [([f"word{i}", "materials"], f"fact {i}") for i in range(120)])
    if connection.vendor == "sqlite":
        raw = connection.connection
        limit = raw.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 100)
        try:
            assert len(course_facts_load(course.pk).facts) == 120
        finally:
            raw.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, limit)
    else:
        assert len(course_facts_load(course.pk).facts) == 120


def test_an_item_remembered_outside_a_transaction_or_deleted_is_seen_by_the_next_context(setting_up):
    from corrections.models import MemoryItem, MemoryTier
    from corrections.services.memory import memory_remember

    course, task, client, _ = setting_up
    student = get_user_model().objects.get(username="snapshot-student")
    assert preferences(task_context(client, task)) == []
    memory_remember(
        user=student, course=course, tier=MemoryTier.USER, kind="preference", content="回答简短一些",
        tokens=["简短"], statement_key="t:1",
    )  # fmt: skip
    assert preferences(task_context(client, task)) == ["回答简短一些"]

    MemoryItem.objects.get().delete()  # as the admin deletes

    assert preferences(task_context(client, task)) == []


def facts_shape(snapshot) -> tuple:
    """What a snapshot holds, comparable whichever way it was made."""

    def ids(facts) -> list:
        return sorted(str(fact.row["id"]) for fact in facts)

    return (
        {str(f.row["id"]): (f.row, f.tokens, f.token_count, f.order, f.keys) for f in snapshot.facts},
        {token: ids(found) for token, found in snapshot.by_token.items()},
        {key: ids(found) for key, found in snapshot.by_key.items()},
        {
            task: sorted((str(f.row["id"]), hits) for f, hits in pairs)
            for task, pairs in snapshot.overlaps.items()
        },
        {str(fact_id): sorted(map(str, tasks)) for fact_id, tasks in snapshot.tasks_of.items()},
        snapshot.rules,
    )


def test_a_fact_change_is_applied_to_the_snapshot_as_a_new_load_would_read_it(setting_up, monkeypatch):
    """A fact verified, pinned, superseded, deleted and created, a rule added:
    the snapshot applies those rows alone, and holds what a load reads."""
    from corrections.selectors.course_snapshot import COURSE_FACTS, corrections_scope_keys, course_facts_load
    from corrections.services.facts import fact_verify

    course, task, client, staff = setting_up
    keys = corrections_scope_keys(course.pk)
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
    topics = [(["materials", word], f"Materials rule {i}") for i, word in enumerate(words)]
    verified = bulk_facts(course, [(RAINFALL, "北京年均降雨量约 630mm"), *topics])
    (proposed,) = bulk_facts(
        course, [(["materials", "glossary"], "The glossary is a material")], status="proposed"
    )
    before = COURSE_FACTS.get(keys, course.pk)
    loads = []
    monkeypatch.setattr(
        COURSE_FACTS, "load", lambda course_id: loads.append(course_id) or course_facts_load(course_id)
    )

    fact_verify(fact=proposed, staff=staff, reason="checked")
    fact_set_pinned(fact=verified[1], staff=staff, pinned=True)
    Fact.objects.filter(pk=verified[2].pk).delete()
    verified[3].status = FactStatus.SUPERSEDED
    verified[3].valid_to = timezone.now()
    verified[3].save()
    bulk_facts(course, [(["materials", "new"], "A new material")])
    ProcessRule.objects.create(course=course, statement="先写测试", statement_key="t:2", approved_by=staff)

    after = COURSE_FACTS.get(keys, course.pk)
    assert loads == [] and after is not before
    assert facts_shape(after) == facts_shape(course_facts_load(course.pk))
    assert "The glossary is a material" in statements(task_context(client, task, "glossary materials"))
    assert statements(task_context(client, task, "materials alpha"))[0] == "Materials rule 0"  # pinned
    assert "Materials rule 1" not in statements(task_context(client, task, "materials bravo"))  # deleted
    assert "Materials rule 2" not in statements(task_context(client, task, "materials charlie"))  # superseded
    assert "A new material" in statements(task_context(client, task, "materials new"))
    assert loads == []


@pytest.mark.parametrize("volume", [1, 400])
def test_after_a_change_a_context_costs_the_same_queries_at_any_volume(setting_up, monkeypatch, volume):
    """A fact accepted and a lesson approved: the next context reads the
    change log and the changed rows of each snapshot -- never a load, the
    one query whose rows grow with the course's facts and lessons."""
    from corrections.selectors.course_snapshot import COURSE_FACTS
    from corrections.services.facts import fact_verify
    from lessons.models import LessonStatus
    from lessons.selectors.library import LIBRARIES, lessons_changed
    from lessons.services.lifecycle import lesson_approve_and_use
    from tests.lessons.conftest import bulk_lessons, make_lesson

    course, task, client, staff = setting_up
    bulk_facts(course, [(["materials", f"topic{i}"], f"Materials fact {i}") for i in range(volume)])
    (proposed,) = bulk_facts(course, [(["glossary", "materials"], "The glossary")], status="proposed")
    bulk_lessons(course, volume, tags=["javascript"])
    lessons_changed(course.pk)  # bulk_create sends no signal
    draft = make_lesson(course=course, tags=["javascript", "docs"], status=LessonStatus.PENDING)
    task_context(client, task, QUESTION)
    with CaptureQueriesContext(connection) as warm:
        task_context(client, task, QUESTION)

    fact_verify(fact=proposed, staff=staff, reason="checked")
    lesson_approve_and_use(lesson=draft, actor=staff)
    for store in (COURSE_FACTS, LIBRARIES):
        monkeypatch.setattr(store, "load", lambda argument: pytest.fail("a whole snapshot was loaded"))
    with CaptureQueriesContext(connection) as after:
        preview = task_context(client, task, "glossary materials")

    # Per snapshot: its change log (1) and its changed rows -- the lessons (1),
    # the facts, their overlaps and the course's few process rules (3).
    assert len(after) == len(warm) + 2 + 4
    assert "The glossary" in statements(preview)
    assert str(draft.pk) in [item["id"] for item in preview["lessons"]["recalled"]]
