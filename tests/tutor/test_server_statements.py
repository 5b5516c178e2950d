"""The hot path's precompiled SQL as PostgreSQL prepared statements
(``tutor.db.statements``, SPEC §10): prepared from the third run on a
connection, and nothing else is; the query log still shows the SQL; long
word lists stay unprepared; a statement a migration made stale is run
again. On SQLite the same calls run on Django's cursor."""

from __future__ import annotations

from contextlib import nullcontext

import pytest
from django.db import DataError, connection, connections
from django.db.models.expressions import RawSQL
from django.test.utils import CaptureQueriesContext

from tutor.chat.selectors import STUDENT_TASK
from tutor.db.prepared import PreparedQuery
from tutor.db.statements import PREPARE_MAX_PARAMS
from tutor.models import Task

POSTGRESQL = connection.vendor == "postgresql"


def prepared_statements() -> list[str]:
    if not POSTGRESQL:
        return []
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return [row[0] for row in cursor.fetchall()]


def hot(task, student):
    row = STUDENT_TASK.first(task_id=task.pk, user_id=student.pk)
    if row is None:
        return None
    return {**row, **STUDENT_TASK.convert(row, STUDENT_TASK.raw)}  # its task columns come raw


def test_a_hot_query_is_prepared_from_its_third_run_and_an_orm_query_never(task, student):
    first_two = [hot(task, student) for _ in range(2)]
    assert first_two[0]["id"] == task.pk and first_two[1] == first_two[0]
    assert not [sql for sql in prepared_statements() if '"tutor_task"' in sql]

    assert [hot(task, student) for _ in range(3)] == [first_two[0]] * 3
    for _ in range(5):
        list(Task.objects.filter(pk=task.pk))  # the ORM binds on the client, as Django does

    on_server = [sql for sql in prepared_statements() if '"tutor_task"' in sql]
    if POSTGRESQL:
        assert len(on_server) == 1 and "$1" in on_server[0] and '"tutor_enrollment"' in on_server[0]
        # psycopg itself counts nothing for other queries: the connection's threshold stays off.
        assert connection.connection.prepare_threshold is None
    else:
        assert on_server == []


@pytest.mark.parametrize("on", [True, False])
def test_a_new_connection_plans_prepared_statements_once_for_any_values(db, settings, on):
    settings.DATABASE_PREPARED_STATEMENTS = on
    fresh = connections.create_connection("default")
    fresh.force_debug_cursor = True
    try:
        fresh.ensure_connection()
        sent = [query["sql"] for query in fresh.queries_log]
        if POSTGRESQL:
            with fresh.cursor() as cursor:
                cursor.execute("SHOW plan_cache_mode")
                mode = cursor.fetchone()[0]
    finally:
        fresh.close()

    if POSTGRESQL:
        assert mode == ("force_generic_plan" if on else "auto")
        assert sent == (["SET plan_cache_mode = force_generic_plan"] if on else [])
    else:
        assert sent == []  # SQLite has no such setting: nothing is sent


def test_a_prepared_hot_query_runs_its_generic_plan_with_every_value(task, student, other_student):
    for user in (student, other_student, student, other_student, student):
        STUDENT_TASK.first(task_id=task.pk, user_id=user.pk)

    if POSTGRESQL:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE %s",
                ['%"tutor_task"%'],
            )
            assert cursor.fetchall() == [(3, 0)]  # prepared at the third run, never planned for its values
    else:
        assert prepared_statements() == []


def test_turned_off_nothing_is_prepared(task, student, settings):
    settings.DATABASE_PREPARED_STATEMENTS = False

    rows = [hot(task, student) for _ in range(4)]

    assert rows == [rows[0]] * 4 and rows[0]["id"] == task.pk
    assert not [sql for sql in prepared_statements() if '"tutor_task"' in sql]


def test_a_long_word_list_is_not_prepared_and_a_short_one_is(course):
    by_slugs = PreparedQuery(lambda slugs: Task.objects.filter(slug__in=slugs).values("slug"), slugs="str[]")
    slugs = ["t1", *(f"none-{i}" for i in range(PREPARE_MAX_PARAMS))]

    runs = [by_slugs.rows(slugs=slugs) for _ in range(3)]
    short = [by_slugs.rows(slugs=slugs[:2]) for _ in range(3)]

    assert runs == [[{"slug": "t1"}]] * 3 and short == runs
    if POSTGRESQL:
        [prepared] = [sql for sql in prepared_statements() if '"tutor_task"."slug" IN' in sql]
        assert "$2)" in prepared and "$3" not in prepared  # the two-word list only


def test_the_query_log_shows_each_run_with_its_values(task, student):
    with CaptureQueriesContext(connection) as queries:
        for _ in range(4):
            hot(task, student)

    logged = [q["sql"] for q in queries.captured_queries]
    assert len(logged) == 4
    assert all(isinstance(sql, str) and '"tutor_task"' in sql for sql in logged)
    assert all(task.pk.hex in sql for sql in logged)  # the values composed in, not placeholders


@pytest.mark.parametrize("logged", [False, True])
def test_a_value_the_database_cannot_take_raises_djangos_error_logged_or_not(course, logged):
    by_slug = PreparedQuery(lambda slug: Task.objects.filter(slug=slug).values("slug"), slug="str")
    log = CaptureQueriesContext(connection) if logged else nullcontext()

    with log:
        for _ in range(3):  # the third run is prepared on PostgreSQL
            if POSTGRESQL:  # PostgreSQL text cannot hold NUL
                with pytest.raises(DataError):
                    by_slug.rows(slug="t1\x00")
            else:
                assert by_slug.rows(slug="t1\x00") == []

    assert by_slug.rows(slug="t1") == [{"slug": "t1"}]


def test_execute_wrappers_see_djangos_sql_and_a_changed_sql_is_what_runs(task, student):
    seen = []

    def observe(execute, sql, params, many, context):
        seen.append((sql, list(params)))
        return execute(sql, params, many, context)

    def match_nothing(execute, sql, params, many, context):
        return execute(f"SELECT * FROM ({sql}) AS wrapped WHERE 1 = 0", params, many, context)

    expected = hot(task, student)
    with connection.execute_wrapper(observe):
        runs = [hot(task, student) for _ in range(3)]  # the third one prepared on PostgreSQL
    with connection.execute_wrapper(match_nothing):
        rewritten = [hot(task, student) for _ in range(3)]

    assert runs == [expected] * 3 and rewritten == [None] * 3
    assert len(seen) == 3
    for sql, params in seen:
        assert '"tutor_task"' in sql and sql.count("%s") == len(params) and "$1" not in sql and "?" not in sql
        assert task.pk in params or task.pk.hex in params


def test_a_percent_sign_in_the_sql_reaches_the_database_as_one(course):
    # Django's SQL writes a literal % as %%; the driver's form has it once.
    percent = PreparedQuery(
        lambda slug: Task.objects.filter(slug=slug).values("slug", share=RawSQL("'100%%'", ())), slug="str"
    )

    runs = [percent.rows(slug=slug) for slug in ("t1", "t1", "t1", "t2")]

    assert runs == [[{"slug": "t1", "share": "100%"}]] * 3 + [[]]


@pytest.mark.django_db(transaction=True)
def test_a_statement_made_stale_by_another_connections_migration_runs_again(task, student):
    expected = [hot(task, student) for _ in range(3)][0]  # the third run is prepared
    if not POSTGRESQL:
        assert hot(task, student) == expected
        return
    import psycopg

    params = connection.get_connection_params()
    conninfo = {k: params[k] for k in ("dbname", "user", "password", "host", "port") if params.get(k)}
    with psycopg.connect(**conninfo, autocommit=True) as other:
        # What a migration's AlterField(max_length=...) does on a column the statement returns.
        other.execute("ALTER TABLE tutor_course ALTER COLUMN title TYPE varchar(201)")
        try:
            assert hot(task, student) == expected
            # Then prepared again, and never run by a name the server dropped:
            # psycopg forgot its statements with the server's.
            with CaptureQueriesContext(connection) as later:
                assert [hot(task, student) for _ in range(4)] == [expected] * 4
            assert not [q["sql"] for q in later.captured_queries if "DEALLOCATE" in q["sql"]]
            assert len(later.captured_queries) == 4
        finally:
            other.execute("ALTER TABLE tutor_course ALTER COLUMN title TYPE varchar(200)")
