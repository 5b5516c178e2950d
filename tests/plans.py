"""The plan a hot statement runs (SPEC §10 plan tests): SQLite's plan of it
as bound; on PostgreSQL its generic plan, the one a prepared statement runs
whatever its values (``tutor.server_statements.use_generic_plans``)."""

from __future__ import annotations

from django.db import connection

from tutor.server_statements import native_sql


def plan_of_sql(sql: str, params) -> str:
    """The plan of Django's ``sql`` (``%s`` placeholders) with ``params``, one line per node."""
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}", params)
            return "\n".join(" ".join(str(column) for column in row) for row in cursor.fetchall())
        cursor.execute("SHOW plan_cache_mode")
        assert cursor.fetchone()[0] == "force_generic_plan"  # what every new connection is given
        cursor.execute(f"PREPARE plan_probe AS {native_sql(sql, connection.vendor)}")
        try:
            cursor.execute(f"EXPLAIN EXECUTE plan_probe({', '.join(['%s'] * len(params))})", params)
            return "\n".join(row[0] for row in cursor.fetchall())
        finally:
            cursor.execute("DEALLOCATE plan_probe")


def plan_of(queryset) -> str:
    """The plan of ``queryset``'s SQL, as ``plan_of_sql``."""
    return plan_of_sql(*queryset.query.get_compiler(connection.alias).as_sql())
