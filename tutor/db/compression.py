"""How PostgreSQL compresses the large JSON columns every tutor turn writes
(the model request, the reply's meta, the recall trace's lines): lz4, not the
default pglz -- about a third of the time per row at the sizes a turn writes
(a 42 KB value: 0.24 ms against 0.70 ms on the bench's server). Set by
migrations (tutor 0009, lessons 0009); new rows only. A server built without
lz4 keeps pglz; SQLite does not compress."""

from __future__ import annotations


def column_compression(method: str, columns: tuple[tuple[str, str], ...]):
    """A ``RunPython`` step that sets ``method`` on each (table, column)."""

    def run(apps, schema_editor):
        if schema_editor.connection.vendor != "postgresql":
            return
        quote = schema_editor.quote_name
        for table, column in columns:
            alter = f"ALTER TABLE {quote(table)} ALTER COLUMN {quote(column)} SET COMPRESSION {method}"
            schema_editor.execute(
                f"DO $$ BEGIN {alter}; "
                "EXCEPTION WHEN feature_not_supported OR invalid_parameter_value THEN NULL; END $$"
            )

    return run
