"""ORM queries compiled once per process, run with new parameters (SPEC §10).

Measured on the tutor context: the database runs the feedback selection in
0.06 ms, while the ORM spends 1.6 ms building and compiling the same query on
every request. The SQL is the ORM's own output; each prepared query is tested
against its plain ORM twin on both databases (tests/tutor/test_prepared.py).
Details: docs/architecture.md, Precompiled statements.
"""

from __future__ import annotations

import dataclasses
import datetime
import functools
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.exceptions import EmptyResultSet
from django.db import connections, models, transaction
from django.db.models.sql import UpdateQuery

from tutor.db.statements import fetch_all, native_sql

# What a sentinel's database form can be (a date is a string on SQLite, a date on PostgreSQL).
_PLAIN_VALUES = (int, float, str, uuid.UUID, datetime.date)
# How a parameter's Python value becomes its database form, per kind.
KIND_FIELDS: dict[str, models.Field] = {
    "int": models.BigIntegerField(),
    "uuid": models.UUIDField(),
    "str": models.TextField(),
    "float": models.FloatField(),
    "date": models.DateField(),
    "datetime": models.DateTimeField(),
}
LIST = "[]"  # "str[]": a list of str
# Kinds whose database form is the Python value itself when it has exactly
# that type (what the fields' get_db_prep_value returns for it, on both
# databases): most parameters are words of a message, so they skip the field.
# Not int: on PostgreSQL an integer field sends psycopg's Int8, typed for the server.
_AS_IS = {"str": str, "float": float}


class PreparationError(RuntimeError):
    """A sentinel did not appear among the compiled parameters exactly once."""


def _sentinel(kind: str, index: int):
    if kind == "int":
        # Inside a 32-bit column's range: Django drops a comparison with a value
        # outside the column's range from the SQL (it is always true or false).
        return 2_000_000_000 + index
    if kind == "uuid":
        return uuid.UUID(int=0x7E57_0000_0000_0000_0000_0000_0000_0000 + index)
    if kind == "float":
        return 7_340_000.000_123 + index
    if kind == "date":
        return datetime.date(2900, 1, 1) + datetime.timedelta(days=index)
    if kind == "datetime":  # aware, far in the future, with a microsecond part
        base = datetime.datetime(2999, 1, 1, 0, 0, 0, 123_457, tzinfo=datetime.UTC)
        return base + datetime.timedelta(seconds=index)
    return f"\u2063prepared-parameter-{index}\u2063"  # INVISIBLE SEPARATOR: never in real data


@dataclass(frozen=True)
class _Compiled:
    sql: str
    native: str  # the same SQL with the driver's own placeholders (tutor.db.statements)
    # Constants, with a slot where a parameter goes: (name,) or (name, index in its list).
    params: tuple
    compiler: Any
    names: tuple[str, ...]
    empty: bool = False  # an empty IN list made the whole query match nothing
    # Read once at compile time rather than on every run (the ORM's
    # results_iter asks each selected expression for them each time):
    # (position in the row, converters, expression) of each converted column,
    slots: tuple = ()  # and (position in params, name, index in its list or None) of each slot.
    converters: tuple = ()
    # The converters of the columns ``raw`` names, left for the caller (``PreparedQuery.convert``).
    deferred: dict = dataclasses.field(default_factory=dict)


def model_columns(model, prefix: str = "") -> list[str]:
    """The ``values()`` names of every concrete column of ``model``, behind
    ``prefix`` (``"course__"`` for a related model's)."""
    return list(_columns(model, prefix))


@functools.cache
def _columns(model, prefix: str) -> tuple[str, ...]:
    return tuple(f"{prefix}{field.attname}" for field in model._meta.concrete_fields)


def model_from_row(model, row: dict, prefix: str = ""):
    """The instance a row of ``model_columns(model, prefix)`` holds, built with
    ``Model.from_db`` as the ORM builds it; None when its primary key is null
    (a LEFT JOIN that found nothing)."""
    names, keys, pk = _row_shape(model, prefix)
    values = [row[key] for key in keys]
    if values[pk] is None:
        return None
    return model.from_db("default", names, values)


@functools.cache
def _row_shape(model, prefix: str) -> tuple[list[str], tuple[str, ...], int]:
    names = list(_columns(model, ""))
    return names, _columns(model, prefix), names.index(model._meta.pk.attname)


class PreparedQuery:
    """``build(**params)`` returns a ``values()`` queryset; ``kinds`` names
    each parameter's kind ("int", "uuid", "str", "float", "date", "datetime",
    or a list of one: "str[]"). ``shape`` names the arguments that change the
    SQL itself (a LIMIT read from settings): they are passed to ``build`` as
    they are, and each distinct value compiles once."""

    def __init__(
        self,
        build: Callable[..., models.QuerySet],
        *,
        shape: tuple[str, ...] = (),
        raw: tuple[str, ...] = (),
        **kinds: str,
    ):
        unknown = {kind.removesuffix(LIST) for kind in kinds.values()} - set(KIND_FIELDS)
        if unknown:
            raise ValueError(f"unknown parameter kinds: {sorted(unknown)}")
        self.build = build
        # Columns returned as the database gives them: the caller converts
        # them (``convert``), when it needs to (``tutor.chat.selectors``: a task's
        # columns, whose model instances are kept per raw row).
        self.raw = frozenset(raw)
        self.kinds = kinds
        self._base_kinds = {name: kind.removesuffix(LIST) for name, kind in kinds.items()}
        self.shape = shape
        self.compiled_shapes: dict[tuple, _Compiled] = {}  # per shape and list lengths
        self._deferred: dict[str, dict] = {}  # per database vendor: ``raw`` columns' converters
        self._lock = threading.Lock()

    def db_value(self, name: str, value, connection):
        if value is None:
            # The ORM writes a comparison with None as IS NULL; bound, it would be "= NULL".
            raise ValueError(f"{name}: None is not a parameter value (write IS NULL in the queryset)")
        kind = self._base_kinds[name]
        if type(value) is _AS_IS.get(kind):
            return value
        return KIND_FIELDS[kind].get_db_prep_value(value, connection, prepared=False)

    def _is_list(self, name: str) -> bool:
        return self.kinds[name].endswith(LIST)

    def _compile(self, using: str, shape: dict, lengths: dict[str, int]) -> _Compiled:
        connection = connections[using]
        sentinels, slots = {}, {}
        for i, (name, kind) in enumerate(self.kinds.items()):
            base = kind.removesuffix(LIST)
            if self._is_list(name):
                sentinels[name] = [_sentinel(base, i * 1000 + j) for j in range(lengths[name])]
                for j, value in enumerate(sentinels[name]):
                    slots[self.db_value(name, value, connection)] = (name, j)
            else:
                sentinels[name] = _sentinel(base, i * 1000)
                slots[self.db_value(name, sentinels[name], connection)] = (name,)
        try:
            compiler, sql, params, names, fields = self._statement(self.build(**sentinels, **shape), using)
        except EmptyResultSet:
            return _Compiled(sql="", native="", params=(), compiler=None, names=(), empty=True)
        template, seen = [], set()
        for param in params:
            slot = slots.get(param) if isinstance(param, _PLAIN_VALUES) else None
            if slot is None:
                template.append(param)
            else:
                template.append(slot)
                seen.add(slot[0])
        expected = {name for name in self.kinds if not (self._is_list(name) and not lengths[name])}
        missing = expected - seen
        if missing:
            raise PreparationError(f"parameters {sorted(missing)} do not reach the SQL as plain values")
        every = compiler.get_converters(fields)
        converters = tuple(
            (position, tuple(convs), expression)
            for position, (convs, expression) in every.items()
            if names[position] not in self.raw
        )
        deferred = {
            names[position]: (tuple(convs), expression)
            for position, (convs, expression) in every.items()
            if names[position] in self.raw
        }
        slots = tuple(
            (position, slot[0], slot[1] if len(slot) == 2 else None)
            for position, slot in enumerate(template)
            if isinstance(slot, tuple)
        )
        self._deferred[connection.vendor] = deferred
        return _Compiled(
            sql=sql,
            native=native_sql(sql, connection.vendor),
            params=tuple(template),
            compiler=compiler,
            names=names,
            slots=slots,
            converters=converters,
            deferred=deferred,
        )

    @staticmethod
    def _statement(queryset, using: str) -> tuple:
        """The compiler, SQL and parameters of ``queryset`` on ``using``, the
        names of a row's columns and the expressions they are read from."""
        query = queryset.query
        compiler = query.get_compiler(using=using)
        sql, params = compiler.as_sql()
        # The row's own column order, as ``values()`` reads it: an annotation
        # may come before a field (``values(Value("r"), "id")``).
        if query.selected:
            names = tuple(query.selected)
        else:
            names = (*query.extra_select, *query.values_select, *query.annotation_select)
        fields = [column[0] for column in compiler.select[: compiler.col_count]]
        return compiler, sql, params, names, fields

    def compiled(self, using: str = "default", lengths: dict[str, int] | None = None, **shape) -> _Compiled:
        lengths = lengths or {}
        key = (
            using,
            connections[using].vendor,
            *(shape[name] for name in self.shape),
            *(lengths.get(name, 0) for name in self.kinds if self._is_list(name)),
        )
        compiled = self.compiled_shapes.get(key)
        if compiled is None:
            with self._lock:
                compiled = self.compiled_shapes.get(key) or self._compile(using, shape, lengths)
                self.compiled_shapes[key] = compiled
        return compiled

    def rows(self, using: str = "default", **values) -> list[dict]:
        """The rows of the query for ``values`` (and the ``shape`` arguments),
        as ``values()`` dicts."""
        compiled, fetched = self._fetch(using, values)
        names = compiled.names
        return [dict(zip(names, row, strict=True)) for row in fetched]

    def tuples(self, using: str = "default", **values) -> list[tuple]:
        """The same rows as tuples, in ``values()``'s column order."""
        return [tuple(row) for row in self._fetch(using, values)[1]]

    def bound(self, using: str, values: dict) -> tuple[_Compiled, list]:
        """The compiled statement for ``values`` (and the ``shape``
        arguments, taken out of ``values``) and its parameters, in the
        database's form."""
        shape = {name: values.pop(name) for name in self.shape}
        lists = {name: list(values[name]) for name in self.kinds if self._is_list(name)}
        compiled = self.compiled(using, lengths={name: len(v) for name, v in lists.items()}, **shape)
        if compiled.empty:
            return compiled, []
        connection = connections[using]
        params = list(compiled.params)
        # Each list converted once, however often its values are repeated (padding).
        for name, items in lists.items():
            lists[name] = [self.db_value(name, item, connection) for item in items]
        for position, name, index in compiled.slots:
            params[position] = (
                lists[name][index] if index is not None else self.db_value(name, values[name], connection)
            )
        return compiled, params

    def _fetch(self, using: str, values: dict) -> tuple[_Compiled, list]:
        compiled, params = self.bound(using, values)
        if compiled.empty:
            return compiled, []
        connection = connections[using]
        fetched = fetch_all(connection, compiled.sql, params, compiled.native)
        if compiled.converters:
            fetched = [self._converted(row, compiled.converters, connection) for row in fetched]
        return compiled, fetched

    @staticmethod
    def _converted(row, converters, connection) -> list:
        """The row's values in Python form, by the ORM's own converters (as
        ``SQLCompiler.apply_converters`` applies them)."""
        row = list(row)
        for position, convs, expression in converters:
            value = row[position]
            for convert in convs:
                value = convert(value, expression, connection)
            row[position] = value
        return row

    def first(self, using: str = "default", **values) -> dict | None:
        rows = self.rows(using, **values)
        return rows[0] if rows else None

    def convert(self, row: dict, names, using: str = "default", **shape) -> dict:
        """The ``raw`` columns ``names`` of a row of this query in their
        Python form, by the ORM's converters (as the other columns are)."""
        if not names:
            return {}
        connection = connections[using]
        deferred = self._deferred.get(connection.vendor)
        if deferred is None:  # as every shape of the query reads the same columns, any shape's
            deferred = self.compiled(using, **shape).deferred
        converted = {}
        for name in names:
            value = row[name]
            found = deferred.get(name)
            if found is not None:
                convs, expression = found
                for convert in convs:
                    value = convert(value, expression, connection)
            converted[name] = value
        return converted


def update_returning_supported(connection) -> bool:
    """``UPDATE … RETURNING``: PostgreSQL, and SQLite from 3.35 (Django 5.2
    supports SQLite from 3.31; the settings accept no other database)."""
    if connection.vendor == "sqlite":
        return connection.Database.sqlite_version_info >= (3, 35)
    return connection.vendor == "postgresql"


@dataclass(frozen=True)
class Updated:
    """What a ``PreparedUpdate`` did: how many rows it changed and, where the
    database returns them, their ``returning`` column as the update left it
    (None where it cannot: the count alone is known)."""

    count: int
    values: list | None
    rows: list[tuple] | None = None  # every ``returning`` column, when it names several


class PreparedUpdate(PreparedQuery):
    """``queryset.update(**values)`` compiled once per process, like a
    ``PreparedQuery``: ``build(**params)`` returns ``(queryset, values)``.

    The SQL is the ORM's own UPDATE with ``RETURNING`` of the ``returning``
    column (or columns) appended, so each run reports the rows it changed
    (their number and those columns) in the same statement. As ``QuerySet.update``, it sends
    no signals and calls no ``save()``. On a database without ``UPDATE …
    RETURNING`` it runs as ``queryset.update(**values)`` itself."""

    def __init__(
        self,
        build: Callable[..., tuple],
        *,
        returning: str | tuple[str, ...],
        shape: tuple[str, ...] = (),
        **kinds: str,
    ):
        super().__init__(build, shape=shape, **kinds)
        # One field, or several (their rows come back in ``Updated.rows``).
        self.returned = (returning,) if isinstance(returning, str) else tuple(returning)
        self.returning = self.returned[0]
        self.returning_column = self.returning  # the column's name, once compiled

    def _statement(self, built, using: str) -> tuple:
        queryset, values = built
        query = queryset.query
        if query.combinator:
            raise PreparationError(f"a combined queryset ({query.combinator}) cannot be updated")
        if query.is_sliced:
            raise PreparationError("a sliced queryset cannot be updated")
        query = query.chain(UpdateQuery)
        query.add_update_values(values)
        if query.related_updates:  # before compiling: a parent's rows are looked up then
            raise PreparationError("an update of a parent model's fields is more than one statement")
        # The rest as Django 5.2's QuerySet.update prepares it (the tests hold
        # the SQL to that method's): annotations in the ordering inlined, then
        # the SELECT clause cleared.
        ordering = []
        for column in query.order_by:
            name, descending = column, False
            if isinstance(name, str) and name.startswith("-"):
                name, descending = name.removeprefix("-"), True
            annotation = query.annotations.get(name)
            if annotation is None:
                ordering.append(column)
            elif getattr(annotation, "contains_aggregate", False):
                raise PreparationError(f"an update cannot be ordered by an aggregate: {annotation}")
            else:
                ordering.append(annotation.desc() if descending else annotation)
        query.order_by = tuple(ordering)
        query.clear_select_clause()
        compiler = query.get_compiler(using=using)
        sql, params = compiler.as_sql()  # a filter across a relation becomes pk IN (…) here
        if not sql:
            raise PreparationError("the update sets nothing")
        fields = [queryset.model._meta.get_field(name) for name in self.returned]
        self.returning_column = fields[0].column
        quoted = ", ".join(compiler.connection.ops.quote_name(field.column) for field in fields)
        return (
            compiler,
            f"{sql} RETURNING {quoted}",
            params,
            self.returned,
            [field.get_col(query.base_table) for field in fields],
        )

    def run(self, using: str, **values) -> Updated:
        """Run the update for ``values`` (and the ``shape`` arguments) on
        database ``using`` -- named by the caller, as the write router says
        (``QuerySet.update`` would ask the router itself)."""
        connection = connections[using]
        if not update_returning_supported(connection):
            shape = {name: values.pop(name) for name in self.shape}
            queryset, changes = self.build(**values, **shape)
            return Updated(count=queryset.using(using).update(**changes), values=None)
        # As QuerySet.update: a failed statement inside an atomic block marks it for rollback.
        with transaction.mark_for_rollback_on_error(using=using):
            fetched = self._fetch(using, values)[1]
        rows = [tuple(row) for row in fetched] if len(self.returned) > 1 else None
        return Updated(count=len(fetched), values=[row[0] for row in fetched], rows=rows)
