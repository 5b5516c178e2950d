"""The tutor turn's large JSON columns are compressed with lz4 on PostgreSQL
(``tutor.db.compression``; migrations tutor 0009 and lessons 0009): set on the
test database as on any other, and undone by migrating back."""

from __future__ import annotations

import pytest
from django.db import connection

from tutor.db.compression import column_compression

COLUMNS = {
    ("tutor_modelcall", "request_messages"),
    ("tutor_tutormessage", "context_meta"),
    ("lessons_recalltrace", "lines"),
}

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(connection.vendor != "postgresql", reason="SQLite does not compress a column"),
]


def compression() -> dict:
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT c.relname, a.attname, a.attcompression FROM pg_attribute a "
            "JOIN pg_class c ON c.oid = a.attrelid WHERE (c.relname, a.attname) IN "
            "(('tutor_modelcall', 'request_messages'), ('tutor_tutormessage', 'context_meta'), "
            "('lessons_recalltrace', 'lines'))"
        )
        return {(table, column): method for table, column, method in cursor.fetchall()}


def test_the_turns_json_columns_are_compressed_with_lz4():
    assert compression() == dict.fromkeys(COLUMNS, "l")


def test_the_step_back_restores_pglz_and_forward_lz4_again():
    with connection.schema_editor() as editor:
        column_compression("pglz", tuple(COLUMNS))(None, editor)
    assert set(compression().values()) == {"p"}
    with connection.schema_editor() as editor:
        column_compression("lz4", tuple(COLUMNS))(None, editor)
    assert set(compression().values()) == {"l"}
