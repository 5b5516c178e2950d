"""SQLite planner statistics (SPEC §10): ``migrate`` and the periodic task
refresh them, so the ingest path's plans do not degrade with volume."""

from __future__ import annotations

from django.db import connection

from tests.factories import enroll, make_submission
from tutor.tasks import optimize_database


def _stat_indexes(table: str) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'")
        if not cursor.fetchone()[0]:
            return set()
        cursor.execute("SELECT idx FROM sqlite_stat1 WHERE tbl = %s", [table])
        return {row[0] for row in cursor.fetchall()}


def test_optimize_gathers_sqlite_statistics_and_leaves_postgresql_to_autovacuum(task):
    for i in range(30):
        make_submission(enroll(task.course, f"s{i}"), task)
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM sqlite_master WHERE name = 'sqlite_stat1'")
            if cursor.fetchone()[0]:
                cursor.execute("DELETE FROM sqlite_stat1")  # as a database never analyzed
        assert "submission_cache_idx" not in _stat_indexes("feedback_submission")

    ran = optimize_database.apply().get()

    if connection.vendor == "sqlite":
        assert ran is True
        assert "submission_cache_idx" in _stat_indexes("feedback_submission")
    else:
        assert ran is False
