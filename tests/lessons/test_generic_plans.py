"""The recall statement as PostgreSQL plans it once for any values (SPEC
§10; ``tutor.db.statements.use_generic_plans``): with a library of
thousands of lessons, in every shape a context or a send runs, keys are
looked up through their indexes by value, anchor or lesson, and lessons by
primary key -- never a scan of every lesson or of a whole kind of keys. On
SQLite, which plans each run for its values, the lessons are still read by
primary key only."""

from __future__ import annotations

import re

import pytest
from django.db import connection

import tutor.db.prepared
from lessons.selectors import lessons_recall
from tests.lessons.conftest import bulk_lessons
from tests.plans import assert_index_narrowed, plan_of_sql
from tutor.models import TutorSession


def captured_statement(monkeypatch, **recall) -> tuple[str, list]:
    """The one statement ``lessons_recall(**recall)`` runs: Django's SQL and its values."""
    seen = []
    real = tutor.db.prepared.fetch_all

    def capture(db, sql, params, native):
        seen.append((sql, list(params)))
        return real(db, sql, params, native)

    monkeypatch.setattr(tutor.db.prepared, "fetch_all", capture)
    lessons_recall(**recall)
    monkeypatch.setattr(tutor.db.prepared, "fetch_all", real)
    [statement] = seen
    return statement


@pytest.fixture
def library(course):
    """A library where keys tell lessons apart, as a course's do: 60 tag
    pairs and 60 phrases over 1,500 lessons, a few of them matching."""
    for i in range(60):
        bulk_lessons(course, 25, tags=[f"t{i}", f"t{i + 1}"], symptoms=[f"symptom{i} fails"])
    bulk_lessons(course, 20, tags=["a", "b"], symptoms=["x err"])
    bulk_lessons(None, 10, tags=["a"], symptoms=["y fail"])
    # Statistics and a visibility map, as autovacuum keeps them: the stage
    # counts are index-only ranges only where the map says the pages are visible.
    with connection.cursor() as cursor:
        cursor.execute("VACUUM ANALYZE" if connection.vendor == "postgresql" else "ANALYZE")


@pytest.mark.django_db(transaction=True)  # VACUUM runs outside a transaction
@pytest.mark.parametrize("tags", [["a", "b", "c"], ["a"], []], ids=["tag pairs", "one tag", "no tag"])
@pytest.mark.parametrize("send", [False, True], ids=["preview", "send"])
def test_the_recall_plan_reads_lessons_by_id_whatever_the_values(
    monkeypatch, course, task, student, library, tags, send
):
    session = TutorSession.objects.create(student=student, task=task) if send else None
    sql, params = captured_statement(
        monkeypatch,
        course_ids=[course.pk],
        tags=tags,
        texts=["CI still says: x err, then y fail"],
        with_counts=send,
        session_id=session.pk if send else None,
    )

    plan = plan_of_sql(sql, params)
    if send:  # a trace's floor lines: the scope's first injected lessons by id, per part
        assert "lesson_scope_id_idx" in plan, plan

    if connection.vendor == "postgresql":
        assert not re.search(r"Seq Scan on lessons_lesson(key)?\s", plan), plan
        assert "lessons_lesson_pkey" in plan and "lessonkey_anchor_idx" in plan, plan
        # Keys by value, anchor or lesson, never by their kind alone (a whole kind).
        assert_index_narrowed(plan, "lessons_lessonkey", ("value", "anchor", "lesson_id"))
    else:
        # SQLite plans each run for its values; at this size it may walk the
        # keys in lesson order (the key lookups at scale: tests/lessons/test_recall.py).
        assert "SEARCH lessons_lesson USING INDEX sqlite_autoindex_lessons_lesson_1 (id=?)" in plan, plan
        assert not re.search(r"SCAN lessons_lesson(\s|$)", plan, re.MULTILINE), plan
