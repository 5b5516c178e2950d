"""An UPDATE and the rows written with it -- only when it changed a row --
as one atomic write (SPEC §4, §10): on PostgreSQL one statement (a turn's two
writes went from fourteen round trips to two on the benchmark), on SQLite a
transaction; held to the ORM's statements and ``create()``'s rows by
tests/tutor/test_guarded_writes.py. Details: docs/architecture.md, A turn's writes.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field

from django.db import connections, models, transaction
from django.db.models.signals import post_save, pre_save

from tutor.db.inserts import PreparedInsert, prepared_insert
from tutor.db.prepared import PreparedUpdate, Updated
from tutor.db.statements import fetch_all, native_sql

GUARD = "guard"
_VALUES = re.compile(r"^(?P<head>INSERT INTO .+\)) VALUES \((?P<values>%s(?:, %s)*)\)$", re.DOTALL)


@dataclass
class Row:
    """One row to insert: an unsaved instance and its model's ``PreparedInsert``.
    ``from_guard`` names fields (attnames) whose value is the value the UPDATE
    returns; they are set on the instance once it is known."""

    insert: PreparedInsert
    obj: models.Model
    from_guard: tuple[str, ...] = field(default=())

    @classmethod
    def of(cls, obj: models.Model, from_guard: tuple[str, ...] = ()) -> Row:
        """``obj``'s row, through its model's one ``PreparedInsert``."""
        return cls(prepared_insert(type(obj)), obj, from_guard)


def insert_in_order(objs, *, using: str) -> None:
    """Insert unsaved ``objs`` (of any models) one after another, as the rows
    of a guarded write would be -- a model's consecutive rows as one
    ``executemany`` -- where no UPDATE guards them (a write apart)."""
    for model, group in itertools.groupby(objs, key=type):
        prepared_insert(model).create_many(list(group), using=using)


def statement_sql(guard_sql: str, returning: str, rows: list[Row], using: str) -> str:
    """The one statement of a guarded write on PostgreSQL: ``guard_sql`` (an
    UPDATE … RETURNING the column ``returning``) as a CTE, each row's INSERT
    selecting its values from it, and the returned value as the statement's
    result. The rows' placeholders are their INSERTs', in order, but for the
    ``from_guard`` fields, which read the CTE's column."""
    quote = connections[using].ops.quote_name
    guard = quote(GUARD)
    parts = [f"{guard} AS ({guard_sql})"]
    for n, row in enumerate(rows):
        match = _VALUES.match(row.insert.sql(using))
        if match is None:  # PreparedInsert.sql refuses any other shape already
            raise ValueError(f"not a one-row INSERT of plain values: {row.insert.model._meta.label}")
        values = [
            f"{guard}.{quote(returning)}" if f.attname in row.from_guard else "%s" for f in row.insert.fields
        ]
        insert = f"{match['head']} SELECT {', '.join(values)} FROM {guard}"  # noqa: S608 -- the ORM's SQL
        parts.append(f"{quote(f'row_{n}')} AS ({insert})")
    # Identifiers come from model metadata, values are parameters.
    return f"WITH {', '.join(parts)} SELECT {quote(returning)} FROM {guard}"  # noqa: S608


def guarded_write(
    update: PreparedUpdate,
    values: dict,
    rows: list[Row],
    *,
    using: str,
    reread: Callable[[], object] | None = None,
) -> Updated:
    """Run ``update`` for ``values`` and, when it changed a row, insert
    ``rows`` -- all of it or nothing (module docstring). Returns what the
    UPDATE did; the rows' ``from_guard`` fields then hold its returned value
    -- read by ``reread`` in the same transaction on a database that cannot
    return it (SQLite before 3.35)."""
    connection = connections[using]
    for row in rows:
        if pre_save.has_listeners(type(row.obj)):
            pre_save.send(sender=type(row.obj), instance=row.obj, raw=False, using=using, update_fields=None)
    # A post_save receiver runs in the write's transaction, as after create():
    # what it writes, or its failure, goes with the rows. Without one, on
    # PostgreSQL the statement is its own transaction.
    signalled = any(post_save.has_listeners(type(row.obj)) for row in rows)
    with transaction.atomic(using=using) if signalled else nullcontext():
        if connection.vendor == "postgresql":
            updated = _one_statement(update, values, rows, using)
        else:
            updated = _in_turn(update, values, rows, using, reread)
        if updated.count:
            _written(rows, updated, using)
    return updated


def _one_statement(update: PreparedUpdate, values: dict, rows: list[Row], using: str) -> Updated:
    connection = connections[using]
    compiled, params = update.bound(using, dict(values))
    sql = statement_sql(compiled.sql, update.returning_column, rows, using)
    for row in rows:
        for field_, value in zip(row.insert.fields, row.insert.params(row.obj, connection), strict=True):
            if field_.attname not in row.from_guard:
                params.append(value)
    native = _native.get(sql)
    if native is None:
        native = _native.setdefault(sql, native_sql(sql, connection.vendor))
    # Inside an open transaction, a savepoint: a failed statement leaves it usable.
    guard = transaction.atomic(using=using) if connection.in_atomic_block else nullcontext()
    with guard, transaction.mark_for_rollback_on_error(using=using):
        # Bound and prepared on the server, as the tutor's hot reads are
        # (tutor.db.statements): one statement shape per kind of write.
        returned = [row[0] for row in fetch_all(connection, sql, params, native)]
    return Updated(count=len(returned), values=returned)


# The statements' text with the driver's placeholders, per statement (a few shapes).
_native: dict[str, str] = {}


def _in_turn(update: PreparedUpdate, values: dict, rows: list[Row], using: str, reread) -> Updated:
    connection = connections[using]
    with transaction.atomic(using=using):
        updated = update.run(using, **dict(values))
        if not updated.count:
            return updated
        if updated.values is None:
            if any(row.from_guard for row in rows) and reread is None:
                raise ValueError("a value read from the update needs UPDATE … RETURNING, or reread")
            updated = Updated(count=updated.count, values=[reread()] if reread is not None else None)
        for row in rows:
            for name in row.from_guard:
                setattr(row.obj, name, updated.values[0])
        # Consecutive rows of one model: one INSERT run per row (``executemany``).
        for insert, group in itertools.groupby(rows, key=lambda row: row.insert):
            params = [insert.params(row.obj, connection) for row in group]
            with transaction.mark_for_rollback_on_error(using=using), connection.cursor() as cursor:
                if len(params) == 1:
                    cursor.execute(insert.sql(using), params[0])
                else:
                    cursor.executemany(insert.sql(using), params)
    return updated


def _written(rows: list[Row], updated: Updated, using: str) -> None:
    for row in rows:
        for name in row.from_guard:
            setattr(row.obj, name, updated.values[0])
        row.obj._state.adding = False
        row.obj._state.db = using
    for row in rows:
        model = type(row.obj)
        if post_save.has_listeners(model):
            post_save.send(
                sender=model, instance=row.obj, created=True, update_fields=None, raw=False, using=using
            )
