"""The recall statement as prepared SQL (SPEC §10): each shape runs exactly
the SQL its ORM queryset compiles to and returns exactly its rows, on the
database the suite runs on (CI runs it on SQLite and on PostgreSQL); values
are parameters, never compiled in; the stage counts count every lesson of the
scope once, from the index alone."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from uuid import uuid4

import pytest
from django.db import connection
from django.utils import timezone

from lessons.models import Lesson, LessonHit, LessonStatus, RecallTrace
from lessons.recall import RecallParams, recall
from lessons.selectors import lessons_recall
from lessons.selectors import rows as recall_rows
from lessons.selectors import statement as recall_statement
from lessons.selectors.recalled import RECALLED_NOW
from lessons.selectors.stages import stage_counts
from tests.lessons.conftest import make_lesson, make_trace
from tests.lessons.test_recall import ctx, decisions, row, run
from tests.tutor.test_context import open_session, send, task_context, warm_send_snapshots
from tutor.db.prepared import PreparedQuery
from tutor.models import TutorSession

PARAMS = RecallParams(
    w_tag=0.5, w_symptom=0.3, w_decay=0.2, decay_days=30, floor=0.4, top_k=3, budget_tokens=800, max_lines=200
)
# The floor within reach of every lesson (floor <= W_DECAY): every lesson is loaded.
EVERY = RecallParams(
    w_tag=0.5, w_symptom=0.3, w_decay=0.2, decay_days=30, floor=0.2, top_k=3, budget_tokens=800, max_lines=200
)


@pytest.fixture
def today():
    return timezone.localdate()


@pytest.fixture
def library(course, other_course, today):
    """Lessons of every stage, in the course, global, and in another course."""
    expired = today - timedelta(days=1)
    return [
        make_lesson(course=course, tags=["a", "b"], symptoms=["x err"]),
        make_lesson(course=course, tags=["a"], symptoms=["y fail"], review_by=expired),
        make_lesson(course=course, tags=["a", "b"], symptoms=["x err"], status=LessonStatus.PENDING),
        make_lesson(course=course, tags=["b"], status=LessonStatus.APPROVED),
        make_lesson(course=course, symptoms=["z 超时"], status=LessonStatus.QUARANTINED),
        make_lesson(course=course, tags=["c"], symptoms=["y fail"], last_hit=today - timedelta(days=45)),
        make_lesson(course=course, tags=["b"], symptoms=["y fail"], status=LessonStatus.RETIRED),
        make_lesson(course=None, tags=["a"], symptoms=["x err"]),
        make_lesson(course=None, tags=["a", "b"], status=LessonStatus.REJECTED),
        make_lesson(course=other_course, tags=["a", "b"], symptoms=["x err"]),
    ]


# Lists of power-of-two lengths (they are padded to one): two tags, two symptoms, four words.
SOURCES = {
    "text": {"tags": ["a", "b"], "texts": ["X err: y fail"]},
    "symptoms": {"tags": ["a", "b"], "symptoms": ["x err", "y fail"]},
    "nothing": {"tags": [], "symptoms": []},
}


def as_rows(rows) -> list:
    return sorted((tuple(r.values()) if isinstance(r, dict) else tuple(r) for r in rows), key=repr)


@pytest.fixture
def used_session(course, task, student, library):
    """A tutor session that has already used the library's first lesson."""
    session = TutorSession.objects.create(student=student, task=task)
    trace = make_trace(student=student, task=task, correlation_id="earlier", session=session)
    LessonHit.objects.create(lesson=library[0], session=session, trace=trace)
    return session


@pytest.mark.django_db
@pytest.mark.parametrize("scoped", [True, False])
@pytest.mark.parametrize("source", list(SOURCES))
@pytest.mark.parametrize("every_lesson", [False, True])
@pytest.mark.parametrize("with_counts", [False, True])
@pytest.mark.parametrize("in_session", [False, True])
def test_each_shape_runs_the_sql_of_its_queryset_and_returns_its_rows(
    course, library, used_session, today, scoped, source, every_lesson, with_counts, in_session
):
    inputs = SOURCES[source]
    query = recall_rows.recall_query(
        [course.pk] if scoped else None, inputs["tags"], inputs.get("symptoms"), inputs.get("texts")
    )
    session_id = used_session.pk if in_session else None
    bound = recall_statement._bind(query, EVERY if every_lesson else PARAMS, today, with_counts, session_id)
    if source == "nothing" and not (every_lesson or with_counts):
        assert bound is None  # nothing to read: no statement at all
        return
    shape, values = bound
    looks_for = "nothing" if source == "nothing" or (source == "symptoms" and every_lesson) else source
    reads_lessons = every_lesson or looks_for != "nothing"
    assert (shape.scoped, shape.looks_for, shape.every_lesson, shape.with_counts, shape.in_session) == (
        scoped,
        looks_for,
        every_lesson,
        with_counts,
        in_session and reads_lessons,
    )
    queryset = recall_statement._recall_queryset(shape, **values)
    prepared = recall_statement._prepared_for(shape, values)
    lengths = {name: len(value) for name, value in values.items() if isinstance(value, list)}

    assert prepared.compiled(lengths=lengths).sql == queryset.query.get_compiler("default").as_sql()[0]
    rows = as_rows(prepared.rows(**values))
    assert rows == as_rows(queryset)
    kinds = {r[0] for r in rows}
    assert ("c" in kinds) == with_counts
    # A stored trace's statement also reads the first filtered lessons (the library has some).
    assert ("r" in kinds) == (reads_lessons or with_counts)
    assert shape.filtered_lines == (PARAMS.max_lines if with_counts and not every_lesson else 0)
    # A text's phrases are rows of the statement, unless it loads every lesson
    # with one anyway (then they are found on the rows: recall_rows.found_phrases).
    assert ("p" in kinds) == shape.phrases_in_sql
    assert shape.phrases_in_sql == (source == "text" and not every_lesson)  # two tags: no pairs
    if shape.in_session:  # the lessons this session already used, and only those
        width = 1 + len(recall_rows.ROW_FIELDS)
        assert {r[1] for r in rows if r[0] == "r" and r[width]} == {library[0].pk}


@pytest.mark.django_db
def test_values_are_parameters_not_part_of_the_compiled_sql(course, library, today, monkeypatch):
    compiled = []
    real_compile = PreparedQuery._compile
    monkeypatch.setattr(recall_statement, "_prepared", {})
    monkeypatch.setattr(
        PreparedQuery, "_compile", lambda self, *a, **kw: compiled.append(a) or real_compile(self, *a, **kw)
    )
    base = {"course_ids": [course.pk], "tags": ["a", "b"], "symptoms": ["x err", "y fail"]}

    later_day = today + timedelta(days=90)  # every lesson's review_by has passed by then
    now = lessons_recall(**base, today=today, params=PARAMS)
    later = lessons_recall(**base, today=later_day, params=PARAMS)
    strict = lessons_recall(**base, today=today, params=replace(PARAMS, floor=0.9))

    assert len(compiled) == 1  # one shape, one length per list: compiled once
    assert now.counts["filtered_expired"] == 1 and now.recalled_ids
    assert later.counts["filtered_expired"] == 4 and later.recalled_ids == []
    assert strict.recalled_ids == [] and strict.counts["floor"] == 3
    query = recall_rows.recall_query([course.pk], base["tags"], base["symptoms"], None)
    for day, params in ((today, PARAMS), (later_day, PARAMS), (today, replace(PARAMS, floor=0.9))):
        assert as_rows(recall_statement._statement_rows(query, params, day, True)) == as_rows(
            recall_statement._statement(query, params, day, True)
        )


@pytest.mark.django_db
def test_lists_are_padded_to_a_power_of_two_compiled_once_per_padded_length(
    course, library, today, monkeypatch
):
    compiled = []
    real_compile = PreparedQuery._compile
    monkeypatch.setattr(recall_statement, "_prepared", {})
    monkeypatch.setattr(
        PreparedQuery,
        "_compile",
        lambda self, using, shape, lengths: (
            compiled.append(lengths) or real_compile(self, using, shape, lengths)
        ),
    )
    texts = ["x err now", "x err now then", "x err now then y fail", "Y FAIL"]  # 3, 4, 6 and 2 words

    for text in texts:
        query = recall_rows.recall_query([course.pk], ["a", "b", "c"], None, [text])
        # Padded: the same IN lists for the database, so the same rows as the ORM's own.
        assert as_rows(recall_statement._statement_rows(query, PARAMS, today, False)) == as_rows(
            recall_statement._statement(query, PARAMS, today, False)
        )

    assert sorted(lengths["anchors"] for lengths in compiled) == [2, 4, 8]
    # Three tags: one alone cannot reach the floor, so their three pairs are looked up, padded.
    assert {lengths["pairs"] for lengths in compiled} == {4}
    found = lessons_recall(course_ids=[course.pk], tags=["a", "b", "c"], texts=["x err now then y fail"])
    assert found.context.symptoms == ("x err", "y fail")


@pytest.mark.django_db
def test_a_text_finds_the_phrases_of_every_injected_lesson_of_the_scope(course, other_course, library):
    """ctx.symptoms are found from the rows the statement loads: so it loads
    every lesson with a phrase in the text, also one that phrase alone cannot
    bring near the floor (0.3 / 2 phrases < floor − W_DECAY, one context tag
    no lesson has). Phrases of lessons not injected, or of another course's,
    do not count."""
    make_lesson(course=other_course, symptoms=["z 超时"])

    result = lessons_recall(
        course_ids=[course.pk], tags=["q"], texts=["x err, then y fail and z 超时"], params=PARAMS
    )

    assert result.context.symptoms == ("x err", "y fail")
    assert result.recalled_ids == []  # none reaches the floor: the phrases weigh 0.15 each


@pytest.mark.django_db
def test_a_phrase_many_lessons_share_loads_them_only_where_it_can_weigh_enough(course, today):
    """One context tag (no tag pairs): two phrases found weigh 0.3 / 2 each,
    below floor − W_DECAY, so the 300 lessons sharing the first are not read
    -- but both phrases count in ctx.symptoms."""
    from tests.lessons.conftest import bulk_lessons

    bulk_lessons(course, 300, tags=["other"], symptoms=["common err"])
    make_lesson(course=course, symptoms=["timeout"])
    query = recall_rows.recall_query([course.pk], ["q"], None, ["common err, then a timeout"])

    rows = recall_statement._statement_rows(query, PARAMS, today, False)
    result = lessons_recall(
        course_ids=[course.pk], tags=["q"], texts=["common err, then a timeout"], params=PARAMS
    )

    assert sorted(row[0] for row in rows) == ["p", "p"]  # the two phrases, no lesson
    assert result.context.symptoms == ("common err", "timeout") and result.recalled_ids == []


@pytest.mark.django_db
def test_a_long_message_finds_its_phrases_too(course, library):
    message = "word " * 200 + "and then X ERR again"  # beyond the cached length

    result = lessons_recall(course_ids=[course.pk], tags=[], texts=[message])

    assert result.context.symptoms == ("x err",)


def filtered_lines(lessons, today, course_ids=None) -> list[tuple[str, str]]:
    """The trace lines of the scope's filtered lessons: by id, each with its decision."""
    scope = [lesson for lesson in lessons if course_ids is None or lesson.course_id in {None, *course_ids}]
    lines = [
        (lesson.pk, "filtered_status" if lesson.status != LessonStatus.INJECTED else "filtered_expired")
        for lesson in scope
        if lesson.status != LessonStatus.INJECTED or lesson.review_by < today
    ]
    return [(str(pk), decision) for pk, decision in sorted(lines, key=lambda line: line[0].int)]


def stage_totals(lessons, today, course_ids):
    scope = [lesson for lesson in lessons if course_ids is None or lesson.course_id in {None, *course_ids}]
    injected = [lesson for lesson in scope if lesson.status == LessonStatus.INJECTED]
    active = sum(1 for lesson in injected if lesson.review_by >= today)
    return active, len(injected) - active, len(scope) - len(injected)


@pytest.mark.django_db
def test_the_stage_counts_count_every_lesson_of_the_scope_once(course, other_course, library, today):
    for course_ids in ([course.pk], [], None, [course.pk, other_course.pk], [other_course.pk]):
        # No tag, no symptom: every lesson is counted and listed, the active ones below the floor.
        result = lessons_recall(course_ids=course_ids, tags=[], symptoms=[], today=today)
        listed = [(line["lesson"], line["decision"]) for line in result.lines]
        filtered = filtered_lines(library, today, course_ids)
        assert listed[: len(filtered)] == filtered
        active, expired, other = stage_totals(library, today, course_ids)
        assert len(listed) == len(filtered) + active and result.omitted == {}
        assert {decision for _, decision in listed[len(filtered) :]} <= {"floor"}

        assert (
            result.counts["floor"],
            result.counts["filtered_expired"],
            result.counts["filtered_status"],
        ) == (active, expired, other), course_ids


@pytest.mark.django_db
def test_the_stage_counts_read_index_ranges_only(course, library, today):
    from tests.lessons.conftest import bulk_lessons

    bulk_lessons(course, 200)
    counts = stage_counts([course.pk], today).values_list("n_active", "n_expired", "n_other")
    sql, params = counts.query.get_compiler(connection.alias).as_sql()

    assert " OR " not in sql  # the global lessons and the course's are counted apart
    assert counts.get() == stage_totals(list(Lesson.objects.all()), today, [course.pk])
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
            plan = [str(row[-1]) for row in cursor.fetchall()]
        searches = [step for step in plan if step.startswith(("SEARCH", "SCAN"))]
        # Either scope index serves a count as an index-only range.
        assert searches and all("USING COVERING INDEX lesson_scope_" in s for s in searches), plan


def test_without_lines_the_decisions_are_the_same_and_no_line_is_written():
    rows = [row(1, tags={"a"}, tokens=900, age=1)]  # the best, over the budget
    rows += [row(i, tags={"a"}, tokens=100, age=i) for i in range(2, 6)]  # three recalled, one top_k
    rows.append(row(9, tags={"a"}, status="pending"))

    full = run(rows, ctx(tags=["a"]))
    bare = recall(rows, None, ctx(tags=["a"]), PARAMS, lines=False)

    assert bare.lines == [] and len(full.lines) == 6
    assert set(decisions(full).values()) == {"recalled", "budget", "top_k", "filtered_status"}
    assert bare.recalled_ids == full.recalled_ids and bare.reached == full.reached
    assert bare.cut_relevant == full.cut_relevant == 2


@pytest.mark.django_db
def test_a_real_send_stores_the_counts_its_recall_statement_read(
    course, task, student_client, fake_llm, library, today
):
    from tests.lessons.test_tutor_context import TASK_TAGS

    fake_llm.default = "Let's look at it together."
    kept = make_lesson(course=course, tags=TASK_TAGS)
    stale = make_lesson(course=course, tags=TASK_TAGS, review_by=today - timedelta(days=2))

    send(student_client, open_session(student_client, task), "what now?")

    trace = RecallTrace.objects.get()
    in_scope = [lesson for lesson in [*library, kept, stale] if lesson.course_id in {None, course.pk}]
    active, expired, other = stage_totals(in_scope, today, None)
    # Every filtered lesson of the scope leaves its line, by id; then the scored ones, then
    # the active lessons that cannot reach the floor.
    listed = [(line["lesson"], line["decision"]) for line in trace.lines]
    filtered = filtered_lines(in_scope, today)
    assert listed[: len(filtered) + 1] == [*filtered, (str(kept.pk), "recalled")]
    assert sorted(listed[len(filtered) + 1 :]) == sorted(
        (str(lesson.pk), "floor")
        for lesson in in_scope
        if lesson.status == "injected" and lesson.review_by >= today and lesson != kept
    )
    assert trace.omitted == {}
    assert trace.counts == {
        "recalled": 1,
        "floor": active - 1,  # every other active lesson of the scope
        "top_k": 0,
        "budget": 0,
        "filtered_expired": expired,
        "filtered_status": other,
    }


@pytest.mark.django_db
def test_a_later_send_in_the_same_session_writes_no_hit_again(
    course, task, student_client, fake_llm, django_assert_num_queries
):
    from tests.lessons.conftest import bulk_lessons
    from tests.lessons.test_tutor_context import TASK_TAGS, message_with_lessons_queries
    from tests.tutor.test_context import DETECTION_QUERIES, query_budget, write_queries

    fake_llm.default = "Let's look at it together."
    bulk_lessons(course, 3, tags=TASK_TAGS)
    session = open_session(student_client, task)
    task_context(student_client, task, "what now?")  # this process's snapshots
    warm_send_snapshots(course.pk)
    with django_assert_num_queries(message_with_lessons_queries()):
        first = send(student_client, session, "what now?").json()

    # MESSAGE_POST_QUERIES without the detection run on commit, then which
    # recalled lessons the session used (1: all three) and, their uses
    # counted already, the reply's one write with its trace and the
    # RecalledLesson rows (an executemany).
    turn = query_budget("message") - DETECTION_QUERIES - write_queries(2)
    with django_assert_num_queries(turn + 1 + write_queries(3)):
        second = send(student_client, session, "and then?").json()

    assert second["context_meta"]["lesson_ids"] == first["context_meta"]["lesson_ids"]
    assert sorted(Lesson.objects.values_list("hit_count", flat=True)) == [1, 1, 1]
    assert LessonHit.objects.count() == 3 and RecallTrace.objects.count() == 2
    later = RecallTrace.objects.order_by("created_at", "id").last()
    assert set(later.recalled.values_list("pk", flat=True)) == set(
        Lesson.objects.values_list("pk", flat=True)
    )


@pytest.mark.django_db
def test_the_recalled_lessons_as_committed_match_the_orm(course, task, student):
    from tests.tutor.test_prepared import assert_matches_orm

    lessons = [make_lesson(course=course, tags=["a"]) for _ in range(4)]
    Lesson.objects.filter(pk=lessons[2].pk).update(status=LessonStatus.QUARANTINED)
    session = TutorSession.objects.create(student=student, task=task)
    other = TutorSession.objects.create(student=student, task=task, archived=True)
    trace = make_trace(student=student, task=task)
    LessonHit.objects.create(lesson=lessons[0], session=session, trace=trace)
    LessonHit.objects.create(lesson=lessons[1], session=other, trace=trace)
    ids = [lesson.pk for lesson in lessons]

    rows = assert_matches_orm(RECALLED_NOW, session_id=session.pk, lesson_ids=ids)
    by_id = {row["id"]: row for row in rows}
    # Another session's use is not this one's.
    assert [bool(by_id[i]["used"]) for i in ids] == [True, False, False, False]
    assert by_id[ids[2]]["status"] == LessonStatus.QUARANTINED
    assert assert_matches_orm(RECALLED_NOW, session_id=session.pk, lesson_ids=[uuid4()]) == []
