"""Running the precompiled hot-path SQL (``tutor.prepared``) as PostgreSQL
server-side prepared statements (SPEC §10: on PostgreSQL, planning cost 5-6x
execution on the tutor context).

Django binds parameters on the client, and psycopg never prepares such a
query. For this SQL only, ``fetch_all`` opens Django's cursor on a
server-binding psycopg cursor and lets psycopg prepare the statement on the
connection from its third run (``PREPARE_THRESHOLD``): later runs skip the
server's parsing and analysis, and its planning too once PostgreSQL settles
on a generic plan. The connection's ``prepare_threshold`` is set for that
execution alone, so psycopg neither counts nor keeps any other query (its
cache keys a client-bound query by its full text, values included).

Left unprepared: SQL with more than ``PREPARE_MAX_PARAMS`` parameters (a long
message's word lists, rarely run twice), everything on SQLite (Python's
sqlite3 module already reuses compiled statements), and everything with
``DATABASE_PREPARED_STATEMENTS=0`` (a pooler that cannot keep them).

A statement prepared before another connection changed a column it returns
("cached plan must not change result type") is deallocated, and the query
run again once, on a client-bound cursor -- outside a transaction; inside
one the error stands, as any error of a migration racing a request would.
A ROLLBACK makes psycopg drop the connection's statements: they are
prepared again on their third run.
"""

from __future__ import annotations

from contextlib import contextmanager

from django.conf import settings
from django.db import DatabaseError
from django.db.backends.utils import CursorDebugWrapper, CursorWrapper

PREPARE_THRESHOLD = 2  # runs on a connection before the third is prepared
PREPARE_MAX_PARAMS = 512  # a recall of up to 128 words (lists are padded to powers of two)


def _prepares(connection, params) -> bool:
    return (
        connection.vendor == "postgresql"
        and getattr(settings, "DATABASE_PREPARED_STATEMENTS", True)
        and len(params) <= PREPARE_MAX_PARAMS
    )


class _ComposedLog(CursorDebugWrapper):
    """The query log of a server-bound run: psycopg keeps no query text for
    a prepared statement (Django would log None), so the SQL is logged with
    its values composed in, as Django logs a client-bound query."""

    def execute(self, sql, params=None):
        with self.debug_sql(self.db.ops.compose_sql(sql, params)):
            return CursorWrapper.execute(self, sql, params)


@contextmanager
def _server_bound(connection):
    # Server-side binding: Django's own cursors bind on the client.
    from django.db.backends.postgresql.base import ServerBindingCursor

    connection.close_if_health_check_failed()
    connection.ensure_connection()
    pg = connection.connection
    factory = pg.cursor_factory
    pg.cursor_factory = ServerBindingCursor
    try:
        # Django opens it: thread check, time zone loader, execute wrappers.
        cursor = connection.cursor()
    finally:
        pg.cursor_factory = factory
    if isinstance(cursor, CursorDebugWrapper):
        cursor = _ComposedLog(cursor.cursor, connection)
    pg.prepare_threshold = PREPARE_THRESHOLD
    try:
        with cursor:
            yield cursor
    finally:
        pg.prepare_threshold = None


def _stale_statement(exc: DatabaseError) -> bool:
    from psycopg import errors

    # 0A000 "cached plan must not change result type"; 26000 a statement the server no longer has.
    return isinstance(exc.__cause__, errors.FeatureNotSupported | errors.InvalidSqlStatementName)


def fetch_all(connection, sql: str, params: list) -> list[tuple]:
    """The rows of ``sql`` with ``params``, through Django's cursor."""
    if not _prepares(connection, params):
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()
    try:
        with _server_bound(connection) as cursor:
            cursor.execute(sql, params)
            return cursor.fetchall()
    except DatabaseError as exc:
        if connection.in_atomic_block or not _stale_statement(exc):
            raise
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")  # psycopg forgets its statements when it sees this
        cursor.execute(sql, params)
        return cursor.fetchall()
