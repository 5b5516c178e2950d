"""The plan a hot statement runs (SPEC §10 plan tests): SQLite's plan of it
as bound; on PostgreSQL its generic plan, the one a prepared statement runs
whatever its values (``tutor.db.statements.use_generic_plans``)."""

from __future__ import annotations

import re

from django.db import connection

from tutor.db.statements import native_sql


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


def assert_index_narrowed(plan: str, table: str, columns: tuple[str, ...]) -> None:
    """In a PostgreSQL ``plan``, no scan of ``table`` reads it whole: no
    sequential scan, every index scan on it has an index condition on one of
    ``columns``, and no bitmap index scan is narrowed by a key's ``kind``
    alone (which reads a whole kind of rows)."""
    assert not re.search(rf"Seq Scan on {table}\s", plan), plan
    assert not re.search(r"Index Cond: \(\(kind\)::text = \$\d+\)$", plan, re.MULTILINE), plan
    lines = plan.splitlines()
    narrowed = re.compile(rf"\(*({'|'.join(columns)})\)*(::\w+)? (=|<|>|IS)")
    for n, line in enumerate(lines):
        if not re.search(rf"Index (Only )?Scan .*on {table}\s", f"{line} "):
            continue
        details = []
        for later in lines[n + 1 :]:
            if "->" in later:
                break
            details.append(later)
        condition = next((d for d in details if "Index Cond:" in d), "")
        assert narrowed.search(condition), f"{line}\n{condition}\n\n{plan}"
