"""Running the precompiled hot-path SQL (``tutor.db.prepared``) as PostgreSQL
server-side prepared statements, with generic plans and the driver's own
placeholders (SPEC §10: on PostgreSQL, planning cost 5-6x execution on the tutor
context; generic plans: facts 0.34 against 0.64 ms, lessons 0.46 against 0.98 ms;
tests/tutor/test_server_statements.py). Details: docs/architecture.md,
Precompiled statements.
"""

from __future__ import annotations

import functools
import itertools
import re
import sqlite3
from contextlib import contextmanager, nullcontext

from django.conf import settings
from django.db import DatabaseError
from django.db.backends.utils import CursorDebugWrapper

PREPARE_THRESHOLD = 2  # runs on a connection before the third is prepared
PREPARE_MAX_PARAMS = 512  # a recall of up to 128 words (lists are padded to powers of two)

# Django's placeholders and its escaped percent sign (any other % is an error, as psycopg has it).
_DJANGO_PLACEHOLDER = re.compile(r"%(.?)")


def native_sql(sql: str, vendor: str) -> str:
    """``sql`` with the driver's own placeholders: ``$1, $2, …`` on
    PostgreSQL, ``?`` on SQLite (as Django converts it on every run). Any
    other ``%`` is refused when the statement is compiled (Django's SQLite
    conversion would let a lone ``%`` through; psycopg would refuse it)."""
    numbers = itertools.count(1)

    def placeholder(match: re.Match) -> str:
        if match.group(1) == "%":
            return "%"
        if match.group(1) != "s":
            raise ValueError(f"not a placeholder in Django's SQL: {match.group(0)!r}")
        return f"${next(numbers)}" if vendor == "postgresql" else "?"

    return _DJANGO_PLACEHOLDER.sub(placeholder, sql)


def use_generic_plans(sender, connection, **kwargs) -> None:
    """``connection_created``: on PostgreSQL, with prepared statements on, the
    new session plans each prepared statement once (module docstring)."""
    if connection.vendor != "postgresql" or not getattr(settings, "DATABASE_PREPARED_STATEMENTS", True):
        return
    with connection.cursor() as cursor:
        cursor.execute("SET plan_cache_mode = force_generic_plan")


def _prepares(connection, params) -> bool:
    return (
        connection.vendor == "postgresql"
        and getattr(settings, "DATABASE_PREPARED_STATEMENTS", True)
        and len(params) <= PREPARE_MAX_PARAMS
    )


@functools.cache
def _raw_server_binding_cursor():
    """Django's cursor mixin on psycopg's raw cursor: server-side binding
    with PostgreSQL's own placeholders (Django's cursors bind on the client)."""
    from django.db.backends.postgresql.base import CursorMixin
    from psycopg import RawCursor

    return type("RawServerBindingCursor", (CursorMixin, RawCursor), {})


@contextmanager
def _server_bound(connection):
    connection.close_if_health_check_failed()
    connection.ensure_connection()
    pg = connection.connection
    factory = pg.cursor_factory
    pg.cursor_factory = _raw_server_binding_cursor()
    try:
        # Django opens it: thread check, time zone loader, execute wrappers.
        cursor = connection.cursor()
    finally:
        pg.cursor_factory = factory
    pg.prepare_threshold = PREPARE_THRESHOLD
    try:
        with cursor:
            yield cursor
    finally:
        pg.prepare_threshold = None


def _composed(db, sql: str, params) -> str:
    """What the query log shows for a server-bound run: psycopg keeps no
    query text for a prepared statement (Django would log None), so the SQL
    with its values composed in, as Django logs a client-bound query. A
    value psycopg cannot send leaves the SQL as it is: the run itself then
    raises Django's error, as the ORM's does."""
    from psycopg import Error

    try:
        return db.ops.compose_sql(sql, params)
    except Error:
        return sql


def _execute_native(cursor, sql: str, native: str, params) -> None:
    """Run ``native`` on the driver's cursor; Django's execute wrappers and
    its query log see ``sql``, as for any query."""
    db = cursor.db
    driver = cursor.cursor
    # On SQLite, sqlite3's own execute: Django's wrapper would convert the SQL again.
    run = functools.partial(sqlite3.Cursor.execute, driver) if db.vendor == "sqlite" else driver.execute

    def execute(wrapped_sql, params, many, context):
        db.validate_no_broken_transaction()
        with db.wrap_database_errors:
            return run(native if wrapped_sql is sql else native_sql(wrapped_sql, db.vendor), params)

    if not isinstance(cursor, CursorDebugWrapper):
        logged = nullcontext()
    elif db.vendor == "postgresql":
        logged = cursor.debug_sql(_composed(db, sql, params))
    else:
        logged = cursor.debug_sql(sql, params, use_last_executed_query=True)
    with logged:
        cursor._execute_with_wrappers(sql, params, many=False, executor=execute)


def _stale_statement(exc: DatabaseError) -> bool:
    from psycopg import errors

    # 0A000 "cached plan must not change result type"; 26000 a statement the server no longer has.
    return isinstance(exc.__cause__, errors.FeatureNotSupported | errors.InvalidSqlStatementName)


def fetch_all(connection, sql: str, params: list, native: str) -> list[tuple]:
    """The rows of ``sql`` with ``params``, through Django's cursor;
    ``native`` is the same SQL as ``native_sql`` writes it for this
    connection's database."""
    if not _prepares(connection, params):
        with connection.cursor() as cursor:
            if connection.vendor == "sqlite":
                _execute_native(cursor, sql, native, params)
            else:
                cursor.execute(sql, params)
            return cursor.fetchall()
    try:
        with _server_bound(connection) as cursor:
            _execute_native(cursor, sql, native, params)
            return cursor.fetchall()
    except DatabaseError as exc:
        if connection.in_atomic_block or not _stale_statement(exc):
            raise
    # Run with psycopg's statement cache on: it forgets its statements when it
    # sees this (otherwise it would go on running the names the server dropped).
    with _server_bound(connection) as cursor:
        cursor.execute("DEALLOCATE ALL")
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()
