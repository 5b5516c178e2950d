"""What the tutor is told (SPEC §4, §5, §10): relevant facts only, within their
budgets, disputed ones marked; the student's own preferences and memory; the
course's process rules; all fenced; and a constant number of queries with 1
or 2,000 facts and memory items, for the preview and for a real message."""

from __future__ import annotations

import pytest
from django.db import connection

from corrections.models import CorrectionCase, Fact, MemoryItem, ProcessRule
from corrections.services.cases import case_dispute
from tests.corrections.conftest import RAINFALL_500, RAINFALL_630, RAINFALL_QUESTION
from tests.tutor.test_context import (
    DETECTION_QUERIES,
    OUTBOX_ROW_QUERIES,
    query_budget,
    warm_send_snapshots,
)
from tutor.bench.corrections import bulk_facts, bulk_memories

RAINFALL = ["北京", "年均", "降雨量"]
# Every test twice: the course's rows read inside the test's transaction, and
# through this process's snapshots as if each write had committed (tests.conftest).
pytestmark = pytest.mark.usefixtures("snapshot_path")


@pytest.mark.django_db
def test_the_preview_has_six_keys_and_every_item_its_kind(task, student, chat_for, staff):
    chat = chat_for(student)
    bulk_facts(task.course, [(RAINFALL, "北京年均降雨量约 630mm")])
    ProcessRule.objects.create(
        course=task.course, statement="先写测试再写代码", statement_key="t:x", approved_by=staff
    )
    chat.send("我希望回答简短一些")
    chat.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    chat.send("这不行")

    preview = chat.context(RAINFALL_QUESTION)

    assert set(preview) == {"feedback", "messages", "lessons", "facts", "preferences", "meta"}
    assert [item["kind"] for item in preview["facts"]] == ["fact", "process_rule"]
    assert [item["kind"] for item in preview["preferences"]] == ["preference", "memory"]
    assert preview["preferences"][1]["type"] == "negative" and preview["preferences"][1]["tier"] == "session"
    meta = preview["meta"]
    fact = Fact.objects.get()
    assert meta["fact_ids"] == [str(fact.pk)]
    assert meta["process_rule_ids"] == [str(ProcessRule.objects.get().pk)]
    assert meta["preference_ids"] == [str(MemoryItem.objects.get(kind="preference").pk)]
    assert meta["memory_ids"] == [str(MemoryItem.objects.get(kind="negative").pk)]
    assert {"facts", "preferences", "memories", "process_rules"} <= set(meta["omitted"])
    system = preview["messages"][0]["content"]
    for name in ("COURSE_FACTS", "STUDENT_PREFERENCES", "STUDENT_MEMORY", "COURSE_PROCESS_RULES"):
        assert f"<<<BEGIN {name}>>>" in system and f"<<<END {name}>>>" in system
    # In SPEC §4's order: facts, preferences, memories, process rules.
    names = ("COURSE_FACTS", "STUDENT_PREFERENCES", "STUDENT_MEMORY")
    order = [system.index(f"<<<BEGIN {n}>>>") for n in names]
    assert order == sorted(order) and order[-1] < system.index("<<<BEGIN COURSE_PROCESS_RULES>>>")


@pytest.mark.django_db
def test_only_facts_whose_topic_the_message_or_task_overlaps_are_injected(task, student, chat_for):
    bulk_facts(
        task.course,
        [
            (RAINFALL, "北京年均降雨量约 630mm"),
            (["澳大利亚", "首都"], "澳大利亚的首都是堪培拉"),
            (["北京", "人口"], "北京人口约 2180 万"),  # one shared token of two: not enough
            (["materials"], "Materials are optional reading"),  # one token: the task text contains it
        ],
    )
    chat = chat_for(student)

    statements = [f["statement"] for f in chat.context(RAINFALL_QUESTION)["facts"]]
    # The second by the task text ("Some materials"), not by the message.
    assert statements == ["北京年均降雨量约 630mm", "Materials are optional reading"]
    assert [f["statement"] for f in chat.context("澳大利亚的首都是哪里？")["facts"]] == [
        "澳大利亚的首都是堪培拉",
        "Materials are optional reading",
    ]


@pytest.mark.django_db
def test_facts_keep_within_their_count_and_character_budgets(task, student, chat_for, settings):
    rows = [(RAINFALL + [f"站点{n}"], f"北京年均降雨量记录 {n}: " + "数" * 40) for n in range(6)]
    bulk_facts(task.course, rows)
    chat = chat_for(student)
    settings.CORRECTIONS_INJECT_MAX_FACTS = 4

    preview = chat.context(RAINFALL_QUESTION)
    assert len(preview["facts"]) == 4
    assert preview["meta"]["omitted"]["facts"] == 2
    assert preview["meta"]["sections"]["facts"]["used_chars"] <= 1200

    settings.FACTS_CHARS = 150  # room for two lines of ~70 characters
    preview = chat.context(RAINFALL_QUESTION)
    assert len(preview["facts"]) == 2
    assert preview["meta"]["omitted"]["facts"] == 4
    assert preview["meta"]["sections"]["facts"]["used_chars"] <= 150

    settings.CORRECTIONS_ITEM_CHARS = 30
    preview = chat.context(RAINFALL_QUESTION)
    assert preview["meta"]["sections"]["facts"]["truncated"] == ["items"]
    line = next(line for line in preview["messages"][0]["content"].splitlines() if "记录" in line)
    assert line.endswith("…")


@pytest.mark.django_db
def test_relevant_facts_are_ranked_by_overlap(task, student, chat_for, settings):
    settings.CORRECTIONS_INJECT_MAX_FACTS = 1
    bulk_facts(task.course, [(["北京", "降雨量", "夏季"], "two of three"), (RAINFALL, "all three")])
    chat = chat_for(student)

    assert [f["statement"] for f in chat.context(RAINFALL_QUESTION)["facts"]] == ["all three"]


@pytest.mark.django_db
def test_a_disputed_fact_is_injected_with_both_statements_marked(
    task, student, other_student, third_student, staff, chat_for
):
    first = chat_for(student)
    first.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    first.send("不对，北京年均降雨量是 630mm 左右")
    second = chat_for(other_student)
    second.send(RAINFALL_QUESTION, reply=RAINFALL_630)
    second.send("实际上北京年均降雨量是 580mm")
    case_dispute(case=CorrectionCase.objects.get(), staff=staff, reason="sources disagree")

    reader = chat_for(third_student)
    reader.send(RAINFALL_QUESTION)
    assert (
        "- 北京 年均 降雨量: DISPUTED, statements: 北京年均降雨量是 630mm 左右 | 北京年均降雨量是 580mm"
        in reader.last_system
    )
    assert "tell the student every statement" in reader.last_system
    [fact] = reader.context(RAINFALL_QUESTION)["facts"]
    assert (fact["status"], fact["disputed_with"]) == ("disputed", ["北京年均降雨量是 580mm"])


@pytest.mark.django_db
def test_user_memory_reaches_every_session_of_its_owner_and_no_one_else(
    task, student, other_student, chat_for
):
    chat = chat_for(student)
    chat.send("?", reply="澳大利亚的首都是悉尼。")
    chat.send("不对，澳大利亚的首都是堪培拉")
    chat.client.post("/api/tutor/sessions/", {"task": task.pk, "new": True}, format="json")

    later = chat_for(student)
    later.send("澳大利亚的首都在哪里？")
    assert "the student corrected a fact: 澳大利亚的首都是堪培拉" in later.last_system
    other = chat_for(other_student)
    other.send("澳大利亚的首都在哪里？")
    assert "堪培拉" not in other.last_system


@pytest.mark.django_db
def test_relevant_user_memory_comes_before_newer_unrelated_memory(student, chat_for, settings):
    settings.CORRECTIONS_INJECT_MAX_MEMORIES = 1
    bulk_memories(student.pk, [("factual", ["澳大利亚", "首都"], "澳大利亚的首都是堪培拉")])
    bulk_memories(student.pk, [("factual", ["北京", "人口"], "北京人口约 2180 万")])
    chat = chat_for(student)

    [memory] = chat.context("澳大利亚的首都在哪里？")["preferences"]
    assert memory["content"] == "澳大利亚的首都是堪培拉"
    [memory] = chat.context("what now?")["preferences"]
    assert memory["content"] == "北京人口约 2180 万"  # nothing relevant: the newest


# --- constant query counts (SPEC §10) ------------------------------------------------------


# What seed_volume writes inside a test's transaction (tests.tutor.test_context.query_budget).
SEEDED = ("corrections", "memory")


def seed_volume(course, student, n: int) -> None:
    """``n`` facts (half sharing a word with the question, none its topic) and
    ``n`` user memory items of the student, plus one relevant fact."""
    bulk_facts(course, [(["北京" if i % 2 else "上海", f"词{i}", f"项{i}"], f"事实 {i}") for i in range(n)])
    bulk_facts(course, [(RAINFALL, "北京年均降雨量约 630mm")])
    bulk_memories(
        student.pk,
        [("preference" if i % 3 == 0 else "factual", ["北京", f"词{i}"], f"记忆 {i}") for i in range(n)],
    )


# POST …/messages/ with a correction that conflicts with the course fact, the
# costliest route: the queries of the turn (tests.tutor.test_context), then
# the detection task's, each statement named.
CONFLICT_DETECTION_QUERIES = sum(
    {
        "the message's text (a candidate), the message with its session, the assistant's previous one": 3,
        "earlier corrections: of this message, with the same words": 2,
        "savepoint; the user's advisory lock (PostgreSQL), the rate limit's count": (
            3 if connection.vendor == "postgresql" else 2
        ),
        "INSERT the correction": 1,
        "lock the course, the fact on the topic, the undecided case": 3,
        "savepoint, INSERT the case, release": 3,
        "the proposal; savepoint, INSERT it, release": 4,
        "savepoint, INSERT the supporter, release; its counter": 4,
        "user memory: the same statement, the same topic; INSERT it and its tokens": 4,
        "UPDATE the correction's tiers and links, release": 2,
        "DELETE the message's outbox row": 1,
    }.values()
)


def conflict_post_queries(snapshot_path: str) -> int:
    """With the detection's writes committed, the user's memory gets a new
    version after the commit (tutor.db.snapshots): its version and change log
    row, in a transaction of their own (here a savepoint: four statements).
    Inside the test's transaction the seeded memory's version is still
    pending, and the detection's change is published with it."""
    published = 4 if snapshot_path == "committed" else 0
    turn = query_budget("message", snapshot_path, changed=SEEDED) - DETECTION_QUERIES + OUTBOX_ROW_QUERIES
    return turn + CONFLICT_DETECTION_QUERIES + published


@pytest.mark.django_db
@pytest.mark.parametrize("volume", [1, 2000])
def test_context_preview_queries_do_not_grow_with_facts_and_memories(
    task, student, chat_for, django_assert_num_queries, volume, snapshot_path
):
    seed_volume(task.course, student, volume)
    chat = chat_for(student)
    chat.context(RAINFALL_QUESTION)  # this process's snapshots of the course

    with django_assert_num_queries(query_budget("context", snapshot_path, changed=SEEDED)):
        preview = chat.context(RAINFALL_QUESTION)

    assert preview["facts"][0]["statement"] == "北京年均降雨量约 630mm"
    assert preview["preferences"]


@pytest.mark.django_db
@pytest.mark.parametrize("volume", [1, 2000])
def test_message_queries_do_not_grow_with_facts_and_memories(
    task, student, chat_for, django_assert_num_queries, volume, snapshot_path
):
    seed_volume(task.course, student, volume)
    chat = chat_for(student)
    chat.context(RAINFALL_QUESTION)  # this process's snapshots of the course
    warm_send_snapshots(task.course_id)

    with django_assert_num_queries(query_budget("message", snapshot_path, changed=SEEDED)):
        chat.send("what now?")

    assert "北京年均降雨量约 630mm" not in chat.last_system  # not relevant to "what now?"


@pytest.mark.django_db
@pytest.mark.parametrize("volume", [1, 2000])
def test_a_conflicting_correction_costs_the_same_queries_at_any_volume(
    task, student, chat_for, django_assert_num_queries, volume, snapshot_path
):
    seed_volume(task.course, student, volume)
    chat = chat_for(student)
    chat.send(RAINFALL_QUESTION, reply=RAINFALL_630)
    chat.context(RAINFALL_QUESTION)  # this process's snapshots, after what that turn wrote
    warm_send_snapshots(task.course_id)

    with django_assert_num_queries(conflict_post_queries(snapshot_path)):
        chat.send("实际上北京年均降雨量是 580mm")

    assert CorrectionCase.objects.get().proposals.get().supporter_count == 1
