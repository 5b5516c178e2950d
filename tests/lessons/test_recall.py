"""Recall (SPEC §6; seed 003 step 2): filter → score → floor, top_k, budget,
every decision traced. Hand-computed fixtures, the seed's own run, and the
one-query selector against a brute-force reading of the seed."""

from __future__ import annotations

import math
from dataclasses import replace
from datetime import date, timedelta
from unittest.mock import ANY

import pytest
from django.db import transaction
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lessons import recall as recall_module
from lessons.models import LessonStatus
from lessons.recall import LessonRow, RecallContext, RecallParams, Totals, below_reach, recall
from lessons.selectors import lessons_recall
from tests.lessons.conftest import lesson_id, make_lesson

TODAY = date(2026, 10, 13)  # the seed's TODAY
PARAMS = RecallParams(
    w_tag=0.5, w_symptom=0.3, w_decay=0.2, decay_days=30, floor=0.4, top_k=3, budget_tokens=800, max_lines=200
)


def row(n, *, tags=(), symptoms=(), status="injected", age=0, review_in=30, tokens=100, title=None):
    return LessonRow(
        id=lesson_id(n),
        title=title or f"lesson {n}",
        body="",
        tags=frozenset(tags),
        symptoms=frozenset(symptoms),
        status=status,
        review_by=TODAY + timedelta(days=review_in),
        tokens=tokens,
        last_hit=TODAY - timedelta(days=age),
        injected_on=None,
    )


def ctx(tags=(), symptoms=()):
    return RecallContext(tags=tuple(tags), symptoms=tuple(symptoms), today=TODAY)


def run(rows, context, params=PARAMS):
    """Recall as a reader runs it: of the first ``max_lines`` injected lessons by id, those
    not past review handed as ``below``."""
    injected = sorted((r for r in rows if r.status == "injected"), key=lambda r: r.rank_key)
    active = [r for r in injected if r.review_by >= TODAY]
    expired = len(injected) - len(active)
    totals = Totals(active=len(active), expired=expired, other_status=len(rows) - len(injected))
    below = below_reach([r for r in injected[: params.max_lines] if r.review_by >= TODAY], context, params)
    return recall(rows, totals, context, params, below=below)


def decisions(result) -> dict[int, str]:
    return {line["lesson"]: line["decision"] for line in result.lines}


def n(i: int) -> str:
    return str(lesson_id(i))


# --- each brake on its own ---------------------------------------------------------------


def test_floor_cuts_a_lesson_that_could_reach_it_but_is_too_old():
    # ctx tags [a, b]: one shared tag is 0.5·1/2 = 0.25, so it can reach 0.4
    # only with decay ≥ 0.75 (age ≤ 8 days). Age 30: 0.25 + 0.2·e^-1 = 0.3236.
    result = run([row(1, tags={"a"}, age=30), row(2, tags={"a"}, age=0)], ctx(tags=["a", "b"]))

    assert decisions(result) == {n(1): "floor", n(2): "recalled"}
    line = result.lines[-1]
    assert line["score"] == pytest.approx(0.25 + 0.2 * math.exp(-1), abs=1e-4)
    assert line["components"] == {"tag": 0.5, "symptom": 0.0, "decay": round(math.exp(-1), 4)}
    assert result.lines[0]["score"] == 0.45  # 0.25 + 0.2·1


def test_top_k_cuts_the_fourth_relevant_lesson_even_when_it_would_fit():
    rows = [row(i, tags={"a"}, age=i, tokens=10) for i in range(1, 5)]  # scores fall with age

    result = run(rows, ctx(tags=["a"]))

    assert [s.row.id for s in result.recalled] == [lesson_id(1), lesson_id(2), lesson_id(3)]
    assert decisions(result)[n(4)] == "top_k"
    assert result.used_tokens == 30


def test_budget_cut_does_not_stop_the_scan_a_later_smaller_lesson_still_fits():
    rows = [
        row(1, tags={"a"}, age=0, tokens=500),  # 0.7000
        row(2, tags={"a"}, age=1, tokens=400),  # 0.6935: 500 + 400 > 800
        row(3, tags={"a"}, age=2, tokens=300),  # 0.6871: 500 + 300 = 800 fits
    ]

    result = run(rows, ctx(tags=["a"]))

    assert decisions(result) == {n(1): "recalled", n(2): "budget", n(3): "recalled"}
    assert result.used_tokens == 800
    assert [line["lesson"] for line in result.lines] == [n(1), n(2), n(3)]  # rank order


def test_brakes_apply_in_order_floor_then_top_k_then_budget():
    rows = [
        row(1, tags={"a"}, age=0, tokens=700),  # 0.70 recalled
        row(2, tags={"a"}, age=1, tokens=200),  # 0.69 budget (700+200)
        row(3, tags={"a"}, age=2, tokens=50),  # 0.69 recalled
        row(4, tags={"a"}, age=3, tokens=50),  # 0.68 recalled: top_k reached
        row(5, tags={"a"}, age=4, tokens=900),  # 0.67 top_k, not budget: top_k is checked first
        row(6, tags={"a", "b"}, age=200, tokens=10),  # 0.5+0.2·e^-6.67 = 0.5003 > floor: top_k
    ]
    context = ctx(tags=["a", "b"])  # one tag of two: 0.25 + decay

    result = run(rows, context)

    # With ctx [a, b]: 1-5 score 0.25 + 0.2·decay ≤ 0.45 and lesson 6 scores 0.5 + 0.0003.
    assert decisions(result) == {
        n(6): "recalled",  # 0.5003
        n(1): "recalled",  # 0.45
        n(2): "budget",  # 0.4493: 10 + 700 + 200 > 800
        n(3): "recalled",  # 0.4487
        n(4): "top_k",  # 0.4481
        n(5): "top_k",  # 0.4475
    }
    assert [line["lesson"] for line in result.lines] == [n(6), n(1), n(2), n(3), n(4), n(5)]


def test_the_seed_run_is_reproduced_with_its_printed_scores():
    """Seed 003's ten lessons and its printed trace: 0.81, 0.64, 0.63, 0.50, 0.47;
    every lesson has its line (SPEC §6), the three below the floor last."""
    rows = seed_rows()
    result = run(rows, ctx(tags=["adaptor", "parsing", "e2e"], symptoms=["unexpected token", "escape"]))

    scored = [
        (line["title"], line["decision"], round(line["score"], 2)) for line in result.lines if line["score"]
    ]
    assert scored == [
        ("lesson-2026-001", "recalled", 0.81),
        ("lesson-2026-009", "recalled", 0.64),
        ("lesson-2026-007", "budget", 0.63),  # 570 + 280 > 800
        ("lesson-2026-008", "recalled", 0.50),  # 180 fits
        ("lesson-2026-010", "top_k", 0.47),
        # No shared tag or symptom: the decay part alone, 0.2·exp(−age/30).
        ("lesson-2026-006", "floor", 0.16),  # 6 days
        ("lesson-2026-002", "floor", 0.12),  # 15 days
        ("lesson-2026-003", "floor", 0.0),  # 120 days: 0.0037
    ]
    assert result.used_tokens == 750
    # 004 (expired) and 005 (pending) are filtered: listed first, as the seed prints them.
    assert [(line["title"], line["decision"]) for line in result.lines[:2]] == [
        ("lesson-2026-004", "filtered_expired"),
        ("lesson-2026-005", "filtered_status"),
    ]
    assert len(result.lines) == 10
    assert result.counts == {
        "recalled": 3,
        "budget": 1,
        "top_k": 1,
        "floor": 3,
        "filtered_status": 1,
        "filtered_expired": 1,
    }
    assert result.omitted == {}
    first = result.lines[2]
    assert first["components"] == {"tag": 0.6667, "symptom": 1.0, "decay": round(math.exp(-0.1), 4)}


def seed_rows() -> list[LessonRow]:
    spec = [
        # n, tags, symptoms, status, age, review_in, tokens
        (1, {"adaptor", "parsing"}, {"unexpected token", "escape"}, "injected", 3, 49, 320),
        (7, {"adaptor", "parsing"}, {"unexpected token"}, "injected", 10, 80, 280),
        (9, {"adaptor", "e2e"}, {"escape"}, "injected", 7, 40, 250),
        (8, {"adaptor"}, {"escape"}, "injected", 2, 70, 180),
        (10, {"adaptor", "parsing"}, set(), "injected", 12, 60, 150),
        (2, {"test", "fixture"}, {"green in local", "red in ci"}, "injected", 15, 20, 260),
        (3, {"db", "ops"}, {"connection timeout"}, "injected", 120, 60, 300),
        (4, {"adaptor", "export"}, {"column mismatch"}, "injected", 200, -5, 290),
        (5, {"ops", "gateway"}, {"504"}, "pending", 1, 30, 210),
        (6, {"ui", "css"}, {"contrast warning"}, "injected", 6, 90, 180),
    ]
    return [
        row(
            i,
            tags=t,
            symptoms=s,
            status=st_,
            age=age,
            review_in=rin,
            tokens=tok,
            title=f"lesson-2026-{i:03d}",
        )
        for i, t, s, st_, age, rin, tok in spec
    ]


# --- filter, ties, empty lists -------------------------------------------------------------


def test_filtered_lessons_are_never_scored():
    rows = [
        row(1, tags={"a"}, symptoms={"x"}, status="pending"),  # a perfect match, but a draft
        row(2, tags={"a"}, symptoms={"x"}, review_in=-1),  # a perfect match, past review_by
        row(3, tags={"a"}, status="quarantined"),
        row(4, tags={"a"}, age=5),
    ]

    result = run(rows, ctx(tags=["a"], symptoms=["x"]))

    lines = {line["lesson"]: line for line in result.lines}
    assert lines[n(1)] == {
        "lesson": n(1),
        "title": "lesson 1",
        "decision": "filtered_status",
        "score": None,
        "components": None,
        "tokens": 100,
    }
    assert lines[n(2)]["decision"] == "filtered_expired" and lines[n(2)]["score"] is None
    assert lines[n(3)]["decision"] == "filtered_status"
    assert [s.row.id for s in result.recalled] == [lesson_id(4)]
    # Filtered lines come first: they leave the pipeline before scoring.
    assert [line["decision"] for line in result.lines] == [
        "filtered_status",
        "filtered_expired",
        "filtered_status",
        "recalled",
    ]


def test_review_by_today_is_not_yet_expired():
    result = run([row(1, tags={"a"}, review_in=0), row(2, tags={"a"}, review_in=-1)], ctx(tags=["a"]))

    assert decisions(result) == {n(1): "recalled", n(2): "filtered_expired"}


def test_ties_are_broken_by_id_ascending():
    rows = [row(i, tags={"a"}, age=3, tokens=10) for i in (5, 2, 9, 7)]  # identical scores

    result = run(rows, ctx(tags=["a"]))

    assert [line["lesson"] for line in result.lines] == [n(2), n(5), n(7), n(9)]
    assert [s.row.id for s in result.recalled] == [lesson_id(2), lesson_id(5), lesson_id(7)]
    assert decisions(result)[n(9)] == "top_k"


def test_empty_context_lists_contribute_nothing_and_never_divide_by_zero():
    rows = [row(1, symptoms={"x"}, tags={"a"}), row(2, tags={"a"})]

    only_symptoms = run(rows, ctx(tags=[], symptoms=["x"]))
    nothing = run(rows, ctx())

    assert decisions(only_symptoms) == {n(1): "recalled", n(2): "floor"}  # 0.3 + 0.2 = 0.5; 0.2
    assert only_symptoms.recalled[0].components == {"tag": 0.0, "symptom": 1.0, "decay": 1.0}
    # Without tags and symptoms every score is the decay alone (≤ 0.2 < floor).
    assert nothing.recalled == [] and nothing.counts["floor"] == 2
    assert [(line["score"], line["components"]) for line in nothing.lines] == [
        (0.2, {"tag": 0.0, "symptom": 0.0, "decay": 1.0})
    ] * 2


def test_age_counts_whole_days_since_last_hit_else_since_injection():
    injected = LessonRow(
        id=lesson_id(1),
        title="t",
        body="",
        tags=frozenset({"a"}),
        symptoms=frozenset(),
        status="injected",
        review_by=TODAY,
        tokens=1,
        last_hit=None,
        injected_on=TODAY - timedelta(days=30),
    )

    result = run([injected], ctx(tags=["a"]))

    assert result.recalled[0].components["decay"] == pytest.approx(math.exp(-1))


def test_a_long_trace_keeps_the_recalled_lines_and_counts_the_rest():
    rows = [row(i, tags={"a"}, age=0, tokens=900) for i in range(1, 6)]  # all too big for the budget
    rows.append(row(6, tags={"a"}, age=1, tokens=10))  # ranks last, recalled
    rows.append(row(7, tags={"a"}, status="pending"))
    params = RecallParams(**{**PARAMS.__dict__, "max_lines": 3})

    result = run(rows, ctx(tags=["a"]), params)

    assert [line["decision"] for line in result.lines] == ["budget", "budget", "recalled"]
    assert result.lines[-1]["lesson"] == n(6)
    assert result.omitted == {"budget": 3, "filtered_status": 1}
    assert result.counts["budget"] == 5


# --- the one-query selector ----------------------------------------------------------------


@pytest.fixture
def seed_library(course):
    made = {}
    for r in seed_rows():
        made[r.title] = make_lesson(
            id=r.id,
            course=course,
            title=r.title,
            tags=sorted(r.tags),
            symptoms=sorted(r.symptoms),
            status=r.status,
            last_hit=r.last_hit,
            review_by=r.review_by,
            tokens=r.tokens,
        )
    return made


@pytest.mark.django_db
def test_selector_reproduces_the_seed_run_in_one_query(course, seed_library, django_assert_num_queries):
    with django_assert_num_queries(1):
        result = lessons_recall(
            course_ids=[course.pk],
            tags=["adaptor", "Parsing", "e2e"],  # case does not matter
            symptoms=["unexpected token", "escape"],
            today=TODAY,
        )

    assert [s.row.title for s in result.recalled] == ["lesson-2026-001", "lesson-2026-009", "lesson-2026-008"]
    assert [(line["title"], line["decision"]) for line in result.lines] == [
        ("lesson-2026-004", "filtered_expired"),
        ("lesson-2026-005", "filtered_status"),
        ("lesson-2026-001", "recalled"),
        ("lesson-2026-009", "recalled"),
        ("lesson-2026-007", "budget"),
        ("lesson-2026-008", "recalled"),
        ("lesson-2026-010", "top_k"),
        ("lesson-2026-006", "floor"),
        ("lesson-2026-002", "floor"),
        ("lesson-2026-003", "floor"),
    ]
    assert result.counts["floor"] == 3 and result.counts["filtered_status"] == 1
    assert result.counts["filtered_expired"] == 1


@pytest.mark.django_db
def test_only_the_courses_own_and_global_lessons_are_candidates(
    course, other_course, django_assert_num_queries
):
    own = make_lesson(course=course, tags=["a"], tokens=10)
    global_ = make_lesson(course=None, tags=["a"], tokens=10)
    make_lesson(course=other_course, tags=["a"], tokens=10)

    with django_assert_num_queries(1):
        result = lessons_recall(course_ids=[course.pk], tags=["a"], symptoms=[])

    assert {s.row.id for s in result.recalled} == {own.pk, global_.pk}
    assert sum(result.counts.values()) == 2


@pytest.mark.django_db
def test_an_empty_library_is_still_one_query(course, django_assert_num_queries):
    with django_assert_num_queries(1):
        result = lessons_recall(course_ids=[course.pk], tags=[], symptoms=[])

    assert result.recalled == [] and result.lines == [] and sum(result.counts.values()) == 0


@pytest.mark.django_db
def test_symptoms_are_found_in_texts_case_insensitively_at_word_boundaries(course):
    token = make_lesson(course=course, symptoms=["Unexpected token"], tokens=10)
    escape = make_lesson(course=course, symptoms=["escape"], tokens=10)
    chinese = make_lesson(course=course, symptoms=["连接超时"], tokens=10)
    make_lesson(course=course, symptoms=["red in ci"], status=LessonStatus.PENDING, tokens=10)

    result = lessons_recall(
        course_ids=[course.pk],
        tags=[],
        texts=[
            "SyntaxError: UNEXPECTED TOKEN '<' in the unescaped output",
            "数据库连接超时了，CI 也 red in ci",
        ],
    )

    # "escape" is not a word of "unescaped"; a pending lesson's phrase is not known.
    assert result.context.symptoms == ("unexpected token", "连接超时")
    # One symptom of two is at most 0.3·1/2 + 0.2 = 0.35: none can reach the floor; the
    # pending lesson is filtered. Each is listed, the floor's by rank (0.35, 0.35, 0.2).
    assert [(line["lesson"], line["decision"]) for line in result.lines] == [
        (ANY, "filtered_status"),
        *sorted([(str(token.pk), "floor"), (str(chinese.pk), "floor")]),
        (str(escape.pk), "floor"),
    ]
    assert result.counts["floor"] == 3 and result.counts["filtered_status"] == 1
    assert result.omitted == {}

    alone = lessons_recall(course_ids=[course.pk], tags=[], texts=["数据库连接超时了"])

    assert alone.context.symptoms == ("连接超时",)
    assert alone.recalled_ids == [chinese.pk]  # 0.3 + 0.2
    escaped = lessons_recall(course_ids=[course.pk], tags=[], texts=["the output was not escape-d"])
    assert escaped.recalled_ids == [escape.pk]  # "-" is a word boundary
    assert lessons_recall(course_ids=[course.pk], tags=[], texts=["Unexpected tokens"]).recalled_ids == []
    assert token.pk not in alone.recalled_ids


@pytest.mark.django_db
@pytest.mark.parametrize("texts", [[], [""], ["!!! ???"]])
def test_texts_without_a_word_recall_by_tags_alone(course, texts, django_assert_max_num_queries):
    lesson = make_lesson(course=course, tags=["a"], symptoms=["x err"], tokens=10)

    with django_assert_max_num_queries(1):
        result = lessons_recall(course_ids=[course.pk], tags=["a"], texts=texts)

    assert result.recalled_ids == [lesson.pk] and result.context.symptoms == ()
    assert lessons_recall(course_ids=[course.pk], tags=[], texts=texts, with_counts=False).recalled_ids == []


@pytest.mark.django_db
def test_full_width_and_spacing_variants_of_a_tag_match(course):
    lesson = make_lesson(course=course, tags=["Ｊava  Script"], tokens=10)

    result = lessons_recall(course_ids=[course.pk], tags=["java script"], symptoms=[])

    assert [s.row.id for s in result.recalled] == [lesson.pk]


# --- the selector agrees with a brute-force reading of the seed ------------------------------

# Up to seven context tags: one tag reaches the floor alone (1-2 tags), two
# (3-5: by tag pairs), three (6-7: by pairs, three of them per lesson).
TAGS = ["a", "b", "c", "d", "e", "f", "g"]
SYMPTOMS = ["x err", "y fail", "z 超时"]


def brute_force(lessons, tags, symptoms, params=PARAMS):
    """Seed 003's recall, literally: every lesson filtered or scored."""
    counts = dict.fromkeys(recall_module.Decision.values, 0)
    scored = []
    for lesson in lessons:
        if lesson.status != "injected":
            counts["filtered_status"] += 1
        elif lesson.review_by < TODAY:
            counts["filtered_expired"] += 1
        else:
            tag = len(set(lesson.tags) & set(tags)) / len(tags) if tags else 0
            sym = len(set(lesson.symptoms) & set(symptoms)) / len(symptoms) if symptoms else 0
            age = (TODAY - (lesson.last_hit or TODAY)).days
            scored.append((0.5 * tag + 0.3 * sym + 0.2 * math.exp(-age / 30), str(lesson.pk), lesson))
    scored.sort(key=lambda s: (-s[0], s[1]))
    recalled, used = [], 0
    for score, _, lesson in scored:
        if score < params.floor:
            counts["floor"] += 1
        elif len(recalled) >= params.top_k:
            counts["top_k"] += 1
        elif used + lesson.tokens > params.budget_tokens:
            counts["budget"] += 1
        else:
            counts["recalled"] += 1
            recalled.append(lesson.pk)
            used += lesson.tokens
    return recalled, counts


lesson_spec = st.fixed_dictionaries(
    {
        "tags": st.lists(st.sampled_from(TAGS), unique=True, max_size=5),
        "symptoms": st.lists(st.sampled_from(SYMPTOMS), unique=True, max_size=2),
        "status": st.sampled_from(["injected", "injected", "injected", "pending", "quarantined"]),
        "age": st.integers(0, 90),
        "review_in": st.integers(-3, 30),
        "tokens": st.sampled_from([50, 200, 350, 600, 900]),
    }
)


@pytest.mark.django_db
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    specs=st.lists(lesson_spec, min_size=0, max_size=12),
    tags=st.lists(st.sampled_from(TAGS), unique=True, max_size=7),
    symptoms=st.lists(st.sampled_from(SYMPTOMS), unique=True, max_size=3),
)
def test_selector_matches_brute_force_recall(course, specs, tags, symptoms):
    with transaction.atomic():
        lessons = [
            make_lesson(
                course=course,
                tags=s["tags"],
                symptoms=s["symptoms"],
                status=s["status"],
                last_hit=TODAY - timedelta(days=s["age"]),
                review_by=TODAY + timedelta(days=s["review_in"]),
                tokens=s["tokens"],
            )
            for s in specs
        ]
        expected_ids, expected_counts = brute_force(lessons, tags, symptoms)

        result = lessons_recall(course_ids=[course.pk], tags=tags, symptoms=symptoms, today=TODAY)

        assert result.recalled_ids == expected_ids
        assert result.counts == expected_counts
        transaction.set_rollback(True)


WORDS = ["x", "err", "y", "fail", "z", "超时", "unexpected", "token", "连接"]


@pytest.mark.django_db
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    specs=st.lists(lesson_spec, min_size=0, max_size=10),
    tags=st.lists(st.sampled_from(TAGS), unique=True, max_size=7),
    words=st.lists(st.sampled_from(WORDS), max_size=8),
)
def test_recall_from_a_text_matches_brute_force(course, specs, tags, words):
    """ctx.symptoms from a text: the phrases of injected lessons found in it."""
    from lessons.text import normalize, phrase_in

    text = " ".join(words)
    with transaction.atomic():
        lessons = [
            make_lesson(
                course=course,
                tags=s["tags"],
                symptoms=s["symptoms"],
                status=s["status"],
                last_hit=TODAY - timedelta(days=s["age"]),
                review_by=TODAY + timedelta(days=s["review_in"]),
                tokens=s["tokens"],
            )
            for s in specs
        ]
        known = {p for lesson in lessons if lesson.status == "injected" for p in lesson.symptoms}
        found = sorted(p for p in known if phrase_in(normalize(p), normalize(text)))
        expected_ids, expected_counts = brute_force(lessons, tags, found)

        result = lessons_recall(course_ids=[course.pk], tags=tags, texts=[text], today=TODAY)

        assert list(result.context.symptoms) == found
        assert result.recalled_ids == expected_ids
        assert result.counts == expected_counts
        transaction.set_rollback(True)


def assert_looks_up_by_key_and_id(statement) -> None:
    """Keys through their indexes, lessons by primary key, never a scan of
    every lesson (PostgreSQL: ``= ANY(ARRAY(…))``, no semi-join)."""
    from django.db import connection

    sql, params = statement.query.get_compiler(connection.alias).as_sql()
    if connection.vendor == "postgresql":
        assert '"lessons_lesson"."id" = ANY(ARRAY(SELECT' in sql
        return
    with connection.cursor() as cursor:
        cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
        plan = "\n".join(str(row[-1]) for row in cursor.fetchall())
    assert "SEARCH lessons_lesson USING INDEX sqlite_autoindex_lessons_lesson_1 (id=?)" in plan
    assert "lessonkey_value_idx" in plan and "lessonkey_anchor_idx" in plan
    assert "SCAN lessons_lesson" not in plan


@pytest.mark.django_db
def test_the_recall_statement_looks_lessons_up_by_key_and_id_never_by_scanning(course):
    """The plan behind the query budget: keys through their indexes, lessons by
    primary key (PostgreSQL: ``= ANY(ARRAY(…))``, so no semi-join over a
    sequential scan of every lesson)."""

    from lessons.selectors import rows as recall_rows
    from lessons.selectors import statement as recall_statement
    from tests.lessons.conftest import bulk_lessons

    bulk_lessons(course, 200, tags=["a", "b"], symptoms=["x err"])
    query = recall_rows.RecallQuery(
        course_ids=[course.pk],
        tags=("a", "c"),
        symptoms=None,
        anchors=("err", "x"),
        haystack="\x01x\x01 \x01err\x01",
    )
    statement = recall_statement._statement(query, PARAMS, TODAY, with_counts=False)
    assert_looks_up_by_key_and_id(statement)
    assert len(list(statement)) == 200 + 1  # every lesson a candidate, and the phrase "x err"


def test_a_lesson_already_listed_is_not_listed_again_below_the_floor():
    """Two snapshots read at different moments may both hold a lesson (quarantined
    in one, injected in the other): it is listed once, as the filter decided."""
    moved = row(7, status="quarantined")
    below = below_reach([row(7), row(8)], ctx(tags=["a"]), PARAMS)

    result = recall([moved, row(1, tags={"a"})], None, ctx(tags=["a"]), PARAMS, below=below)

    assert [(line["lesson"], line["decision"]) for line in result.lines] == [
        (n(7), "filtered_status"),
        (n(1), "recalled"),
        (n(8), "floor"),
    ]


def test_at_most_floor_lines_lessons_below_the_floor_are_listed_the_best_first():
    rows = [row(i, age=i) for i in range(1, 31)]  # no shared tag: the decay part alone, newest best
    params = replace(PARAMS, floor_lines=4)

    result = run(rows, ctx(tags=["a"]), params)

    assert [line["lesson"] for line in result.lines] == [n(1), n(2), n(3), n(4)]
    assert result.counts["floor"] == 30 and result.omitted == {"floor": 26}
