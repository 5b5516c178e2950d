"""Recall by tag pairs (SPEC §10): with three or more context tags one shared
tag cannot reach the floor alone, so the recall statement looks lessons up by
the pairs of tags they share -- a tag common to most of the library is never
read lesson by lesson -- and by any symptom they match; Python scores the
candidates exactly (``lessons.recall``)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from lessons.models import LessonKey
from lessons.recall import RecallParams
from lessons.selectors import rows as recall_rows
from lessons.selectors import statement as recall_statement
from lessons.text import BOUNDARY, tag_pairs
from tests.lessons.conftest import bulk_lessons, make_lesson
from tests.lessons.test_recall import assert_looks_up_by_key_and_id

PARAMS = RecallParams(
    w_tag=0.5, w_symptom=0.3, w_decay=0.2, decay_days=30, floor=0.4, top_k=3, budget_tokens=800, max_lines=200
)


def pair(a: str, b: str) -> str:
    return f"{a}{BOUNDARY}{b}"


def test_tag_pairs_are_every_two_distinct_tags_in_order():
    assert tag_pairs(["c", "a", "b", "a"]) == [pair("a", "b"), pair("a", "c"), pair("b", "c")]
    assert tag_pairs(["only"]) == []


@pytest.mark.django_db
def test_a_lesson_is_stored_with_the_pairs_of_its_normalized_tags(course):
    lesson = make_lesson(course=course, tags=["Week-1", "ＣＩ", "docs"], symptoms=["x err"])

    pairs = set(LessonKey.objects.filter(lesson=lesson, kind="tag_pair").values_list("value", flat=True))

    assert pairs == {pair("ci", "docs"), pair("ci", "week-1"), pair("docs", "week-1")}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("tags", "need"),
    [(["a", "b"], None), (["a", "b", "c"], 1), (["a", "b", "c", "d", "e"], 1), (list("abcdef"), 3)],
)
def test_the_statement_goes_by_pairs_exactly_when_one_tag_cannot_reach_the_floor(course, tags, need):
    query = recall_rows.recall_query([course.pk], tags, ["x err"], None)

    shape, values = recall_statement._bind(query, PARAMS, timezone.localdate(), False)

    assert shape.by_pairs == (need is not None)
    if need is not None:
        assert values["pair_need"] == need  # 2 shared tags: 1 pair; 3 shared tags: 3 pairs
        assert values["pairs"] == tag_pairs(tags) and "tags" not in values


@pytest.mark.django_db
@pytest.mark.parametrize("source", ["symptoms", "text"])
def test_lessons_sharing_one_common_tag_are_not_read_and_the_recall_is_unchanged(course, source):
    today = timezone.localdate()
    # 300 lessons share the task's common tag and nothing else: none can reach the floor.
    bulk_lessons(course, 300, tags=["week-1"], symptoms=["nothing like it"])
    two_tags = make_lesson(course=course, tags=["week-1", "docs"], title="two tags")
    one_tag_and_symptom = make_lesson(course=course, tags=["week-1"], symptoms=["x err"], title="symptom")
    tags = ["week-1", "docs", "javascript"]
    inputs = {"symptoms": ["x err"]} if source == "symptoms" else {"texts": ["my x err again"]}

    with CaptureQueriesContext(connection) as captured:
        result = recall_statement.lessons_recall(
            course_ids=[course.pk], tags=tags, today=today, params=PARAMS, **inputs
        )
    query = recall_rows.recall_query([course.pk], tags, inputs.get("symptoms"), inputs.get("texts"))
    bound = recall_statement._bind(query, PARAMS, today, True)
    rows = recall_statement._run(bound)

    assert len(captured) == 1
    assert bound[0].by_pairs
    assert {r[1] for r in rows if r[0] == "r"} == {two_tags.pk, one_tag_and_symptom.pk}
    assert set(result.recalled_ids) == {two_tags.pk, one_tag_and_symptom.pk}
    assert result.counts["floor"] == 300  # counted from the scope's totals, never read
    # The prepared SQL is the queryset's own, with the same rows.
    statement = recall_statement._recall_queryset(bound[0], **bound[1])
    assert sorted(map(repr, rows)) == sorted(repr(tuple(r)) for r in statement)


@pytest.mark.django_db
def test_the_pairs_statement_looks_keys_up_by_index_and_lessons_by_id(course):
    bulk_lessons(course, 200, tags=["a", "b"], symptoms=["x err"])
    query = recall_rows.RecallQuery(
        course_ids=[course.pk],
        tags=("a", "b", "c"),
        symptoms=None,
        anchors=("err", "x"),
        haystack="\x01x\x01 \x01err\x01",
    )
    statement = recall_statement._statement(query, PARAMS, timezone.localdate(), with_counts=False)
    sql, params = statement.query.get_compiler(connection.alias).as_sql()

    kinds = {p for p in params if p in LessonKey.Kind.values}
    assert kinds == {"tag_pair", "symptom"}  # no single tag is looked up
    assert_looks_up_by_key_and_id(statement)
    # Every lesson shares the pair (a, b); the phrase is found on the rows, not returned.
    assert len(list(statement)) == 200


BEFORE = [("lessons", "0001_initial")]


@pytest.mark.django_db(transaction=True)
def test_migrating_adds_the_pairs_of_lessons_stored_before_them():
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes("lessons")
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps
    course = old.get_model("tutor", "Course").objects.create(slug="mig-lessons", title="Migrated")
    Lesson, Key = old.get_model("lessons", "Lesson"), old.get_model("lessons", "LessonKey")
    stored = []
    lessons = (("three", ["ci", "docs", "week-1"]), ("one", ["ci"]), ("global", ["fonction", "état"]))
    for title, tags in lessons:
        lesson = Lesson.objects.create(
            course=None if title == "global" else course,
            title=title,
            body="b",
            tags=tags,
            symptoms=[],
            status="injected",
            injected_at=timezone.now(),
            source="manual",
            review_by=timezone.localdate() + timedelta(days=30),
            tokens=10,
        )
        for tag in tags:
            Key.objects.create(lesson=lesson, course=lesson.course, kind="tag", value=tag)
        stored.append(lesson)

    executor = MigrationExecutor(connection)
    executor.migrate(latest)

    pairs = set(LessonKey.objects.filter(kind="tag_pair").values_list("lesson_id", "course_id", "value"))
    three, _, global_lesson = stored
    assert pairs == {
        (three.pk, course.pk, pair("ci", "docs")),
        (three.pk, course.pk, pair("ci", "week-1")),
        (three.pk, course.pk, pair("docs", "week-1")),
        # In code point order, as recall orders a context's pairs, whatever the
        # database's collation says of "é" and "f".
        (global_lesson.pk, None, pair("fonction", "état")),
    }


@pytest.mark.django_db
@pytest.mark.parametrize("context", [["long", "b"], ["long", "b", "c"]])
def test_a_tag_that_folding_makes_longer_than_a_key_still_matches(course, context):
    """ "\ufdfa" folds to 18 characters: twelve of them, a valid 12-character
    tag, normalize to 216 -- beyond a stored key's 200. Context and lesson
    are cut alike, by single tags and by pairs."""
    long = "\ufdfa" * 12
    tags = [long if tag == "long" else tag for tag in context]
    lesson = make_lesson(course=course, tags=[long, "b"])

    result = recall_statement.lessons_recall(
        course_ids=[course.pk], tags=tags, symptoms=[], today=timezone.localdate(), params=PARAMS
    )

    assert result.recalled_ids == [lesson.pk]
