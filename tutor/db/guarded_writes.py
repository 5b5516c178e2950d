"""An UPDATE and the rows written and counted with it -- only when it changed
a row -- as one atomic write (SPEC §4, §10): on PostgreSQL one statement (a turn's two
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
from django.db.models import F
from django.db.models.signals import post_save, pre_save

from tutor.db.inserts import PreparedInsert, prepared_insert
from tutor.db.prepared import PreparationError, PreparedUpdate, Updated
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


@dataclass(frozen=True)
class Count:
    """Rows counted once more by a write, declared as data by the app that
    owns them (SPEC §6: a lesson's first use in a session): ``model``'s rows
    ``pks`` get ``counter`` + 1 and ``also``'s fields set. A row that then
    stands at ``at`` or more gets its row of ``then`` (primary key → unsaved
    instance; its ``then_field`` set to the count) unless that table holds
    one already: its unique constraint says one, and the insert skips a
    conflict (as ``bulk_create(ignore_conflicts=True)``: no signals)."""

    model: type[models.Model]
    pks: tuple
    counter: str
    also: dict = field(default_factory=dict)
    at: int | None = None
    then: dict = field(default_factory=dict)
    then_field: str = ""


# A field's parameter kind (tutor.db.prepared.KIND_FIELDS), by its internal type.
_KINDS = {"UUIDField": "uuid", "DateField": "date", "DateTimeField": "datetime", "FloatField": "float"}
_KINDS |= dict.fromkeys(("CharField", "TextField", "SlugField"), "str")
_KINDS |= dict.fromkeys(
    ("AutoField", "BigAutoField", "IntegerField", "BigIntegerField", "PositiveIntegerField",
     "PositiveBigIntegerField", "SmallIntegerField", "PositiveSmallIntegerField"),
    "int",
)  # fmt: skip
_COUNTS: dict[tuple, PreparedUpdate] = {}


def count_update(count: Count) -> PreparedUpdate:
    """This process's one UPDATE of a kind of ``Count`` (model, counter, the
    fields it also sets), returning each row's primary key and count."""
    key = (count.model, count.counter, tuple(sorted(count.also)))
    found = _COUNTS.get(key)
    if found is None:
        model, counter, names = key
        opts = model._meta

        def build(pks, **also):
            return model._base_manager.filter(pk__in=pks), {counter: F(counter) + 1, **also}

        kinds = {"pks": f"{_kind(opts.pk)}[]", **{name: _kind(opts.get_field(name)) for name in names}}
        found = _COUNTS.setdefault(key, PreparedUpdate(build, returning=(opts.pk.name, counter), **kinds))
    return found


def _kind(model_field) -> str:
    kind = _KINDS.get(model_field.get_internal_type())
    if kind is None:
        raise PreparationError(f"{model_field.name}: no parameter kind for {model_field.get_internal_type()}")
    return kind


def counts_run(counts, *, using: str) -> None:
    """Run ``counts`` (``Count``) as statements of their own, in the caller's
    transaction: each UPDATE, then the rows of ``then`` its counts call for."""
    for count in counts:
        if not count.pks:
            continue
        updated = count_update(count).run(using, pks=list(count.pks), **count.also)
        if count.at is None or not count.then:
            continue
        counted = updated.rows
        if counted is None:  # no UPDATE … RETURNING: read in the same transaction
            rows = count.model._base_manager.using(using).filter(pk__in=count.pks)
            counted = list(rows.values_list("pk", count.counter))
        to_python = count.model._meta.pk.to_python
        then = {to_python(pk): obj for pk, obj in count.then.items()}
        due = []
        for pk, value in counted:
            obj = then.get(to_python(pk))
            if obj is not None and value >= count.at:
                setattr(obj, count.then_field, value)
                due.append(obj)
        if due:
            prepared_insert(type(due[0])).insert_ignoring(due, using=using)


def _count_parts(counts, using: str) -> tuple[list[str], list]:
    """The parts of the one statement that run ``counts`` when the guard
    changed a row, and their parameters: each UPDATE with that condition,
    named ``count_N``, and per row of ``then`` an INSERT selecting from it
    when the row's count reached ``at`` (``ON CONFLICT DO NOTHING``)."""
    connection = connections[using]
    quote = connection.ops.quote_name
    parts, params = [], []
    for n, count in enumerate(counts):
        if not count.pks:
            continue
        update = count_update(count)
        compiled, bound = update.bound(using, {"pks": list(count.pks), **count.also})
        if compiled.empty:
            continue
        head, _, returned = compiled.sql.rpartition(" RETURNING ")
        if " WHERE " not in head:
            raise PreparationError(f"{count.model._meta.label}: a count without a WHERE clause")
        name = quote(f"count_{n}")
        guarded = f"{head} AND EXISTS (SELECT 1 FROM {quote(GUARD)}) RETURNING {returned}"  # noqa: S608
        parts.append(f"{name} AS ({guarded})")
        params.extend(bound)
        if count.at is None:
            continue
        opts = count.model._meta
        pk_column, count_column = quote(opts.pk.column), quote(opts.get_field(count.counter).column)
        for k, (pk, obj) in enumerate(count.then.items()):
            insert = prepared_insert(type(obj))
            values = []
            for field_, value in zip(insert.fields, insert.params(obj, connection), strict=True):
                if field_.attname == count.then_field:
                    values.append(f"{name}.{count_column}")
                else:
                    values.append("%s")
                    params.append(value)
            parts.append(
                f"{quote(f'then_{n}_{k}')} AS ({insert_head(insert, using)} SELECT {', '.join(values)} "  # noqa: S608
                f"FROM {name} WHERE {name}.{pk_column} = %s AND {name}.{count_column} >= %s "
                "ON CONFLICT DO NOTHING)"
            )
            params.extend((opts.pk.get_db_prep_value(pk, connection, prepared=False), count.at))
    return parts, params


def insert_in_order(objs, *, using: str) -> None:
    """Insert unsaved ``objs`` (of any models) one after another, as the rows
    of a guarded write would be -- a model's consecutive rows as one
    ``executemany`` -- where no UPDATE guards them (a write apart)."""
    for model, group in itertools.groupby(objs, key=type):
        prepared_insert(model).create_many(list(group), using=using)


def insert_head(insert: PreparedInsert, using: str) -> str:
    """``INSERT INTO table (columns)`` of ``insert``'s SQL, to be followed by a
    SELECT of its values (the parts of a guarded write's one statement)."""
    match = _VALUES.match(insert.sql(using))
    if match is None:  # PreparedInsert.sql refuses any other shape already
        raise ValueError(f"not a one-row INSERT of plain values: {insert.model._meta.label}")
    return match["head"]


def statement_sql(guard_sql: str, returning: str, rows: list[Row], using: str, counts=()) -> str:
    """The one statement of a guarded write on PostgreSQL: ``guard_sql`` (an
    UPDATE … RETURNING the column ``returning``) as a CTE, each row's INSERT
    selecting its values from it, then ``counts`` (``_count_parts``' SQL),
    and the returned value as the statement's result. The rows' placeholders
    are their INSERTs', in order, but for the ``from_guard`` fields, which
    read the CTE's column."""
    quote = connections[using].ops.quote_name
    guard = quote(GUARD)
    parts = [f"{guard} AS ({guard_sql})"]
    for n, row in enumerate(rows):
        values = [
            f"{guard}.{quote(returning)}" if f.attname in row.from_guard else "%s" for f in row.insert.fields
        ]
        insert = f"{insert_head(row.insert, using)} SELECT {', '.join(values)} FROM {guard}"  # noqa: S608
        parts.append(f"{quote(f'row_{n}')} AS ({insert})")
    parts.extend(counts)
    # Identifiers come from model metadata, values are parameters.
    return f"WITH {', '.join(parts)} SELECT {quote(returning)} FROM {guard}"  # noqa: S608


def guarded_write(
    update: PreparedUpdate,
    values: dict,
    rows: list[Row],
    *,
    using: str,
    reread: Callable[[], object] | None = None,
    counts: tuple[Count, ...] | list[Count] = (),
) -> Updated:
    """Run ``update`` for ``values`` and, when it changed a row, insert
    ``rows`` and run ``counts`` -- all of it or nothing (module docstring).
    Returns what the UPDATE did; the rows' ``from_guard`` fields then hold
    its returned value -- read by ``reread`` in the same transaction on a
    database that cannot return it (SQLite before 3.35)."""
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
            updated = _one_statement(update, values, rows, using, counts)
        else:
            updated = _in_turn(update, values, rows, using, reread, counts)
        if updated.count:
            _written(rows, updated, using)
    return updated


def _one_statement(update: PreparedUpdate, values: dict, rows: list[Row], using: str, counts) -> Updated:
    connection = connections[using]
    compiled, params = update.bound(using, dict(values))
    count_sql, count_params = _count_parts(counts, using)
    sql = statement_sql(compiled.sql, update.returning_column, rows, using, count_sql)
    for row in rows:
        for field_, value in zip(row.insert.fields, row.insert.params(row.obj, connection), strict=True):
            if field_.attname not in row.from_guard:
                params.append(value)
    params.extend(count_params)
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


def _in_turn(update: PreparedUpdate, values: dict, rows: list[Row], using: str, reread, counts) -> Updated:
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
        counts_run(counts, using=using)
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
