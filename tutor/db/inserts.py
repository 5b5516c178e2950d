"""Model.objects.create(**values) with the ORM's INSERT compiled once per process
(SPEC §10): the tutor turn's rows -- its two messages, the model call, the recall
trace, the detection outbox. Details: docs/architecture.md, Precompiled statements."""

from __future__ import annotations

from django.db import connections, models, router, transaction
from django.db.models.constants import OnConflict
from django.db.models.signals import post_save, pre_save
from django.db.models.sql import InsertQuery

from tutor.db.prepared import PreparationError


class PreparedInsert:
    """``model.objects.create(**values)`` with the ORM's INSERT compiled once
    per database (SPEC §10: a tutor turn writes six rows; building and
    compiling each INSERT again cost more than the database's work).

    A run does what ``create()`` does for a model of this kind: the instance
    is built, each field's ``pre_save`` fills it (``auto_now_add``) and its
    ``get_db_prep_save`` gives the value sent -- as the ORM's insert
    compiler calls them -- the ``pre_save`` and ``post_save`` signals are
    sent, and a failed INSERT inside an atomic block marks it for rollback.
    The SQL is the ORM's own INSERT of one row of these fields, never
    written by hand; the tests hold it and the stored rows to ``create()``'s
    on both databases.

    For a model whose rows the database completes, nothing is prepared: a
    model with a parent (multi-table inheritance) or with a column the
    database fills in (``db_default``, a generated field) is refused. An
    automatic primary key is left to the database and not read back
    (``create_many`` of such rows, as ``bulk_create`` on a database that
    cannot return them); values must be plain values, not expressions."""

    def __init__(self, model: type[models.Model]):
        opts = model._meta
        if opts.parents:
            raise PreparationError(f"{opts.label} has a parent model: its insert is more than one statement")
        filled = [field for field in opts.db_returning_fields if field is not opts.auto_field]
        if filled:
            raise PreparationError(f"{opts.label}: the database fills {[f.name for f in filled]}")
        self.model = model
        self.fields = tuple(field for field in opts.local_concrete_fields if field is not opts.auto_field)
        self._sql: dict[tuple, str] = {}

    def sql(self, using: str, ignore_conflicts: bool = False) -> str:
        """The ORM's INSERT of one row of ``fields`` on database ``using`` (with
        ``ignore_conflicts``, the ORM's own form that skips a row a unique
        constraint already holds, as ``bulk_create`` writes it)."""
        sql = self._sql.get((using, ignore_conflicts))
        if sql is None:
            query = InsertQuery(self.model, on_conflict=OnConflict.IGNORE if ignore_conflicts else None)
            query.insert_values(list(self.fields), [self.model()])
            [(sql, params)] = query.get_compiler(using=using).as_sql()
            if len(params) != len(self.fields) or sql.count("%s") != len(self.fields):
                raise PreparationError(f"{self.model._meta.label}: an insert that is not one value per field")
            self._sql[(using, ignore_conflicts)] = sql
        return sql

    def insert_ignoring(self, objs: list[models.Model], using: str) -> None:
        """Insert ``objs`` but those a unique constraint already holds a row
        for: ``bulk_create(objs, ignore_conflicts=True)``, compiled once -- as
        it, no signals, and which rows were written is not known."""
        if not objs:
            return
        connection = connections[using]
        rows = [self.params(obj, connection) for obj in objs]
        with transaction.mark_for_rollback_on_error(using=using), connection.cursor() as cursor:
            cursor.executemany(self.sql(using, ignore_conflicts=True), rows)

    def params(self, obj, connection) -> list:
        """The values of ``obj``'s row as the INSERT sends them (each field's
        ``pre_save``, then its ``get_db_prep_save``, as the ORM's insert compiler)."""
        params = []
        for field in self.fields:
            value = field.pre_save(obj, True)
            if hasattr(value, "resolve_expression"):
                raise PreparationError(f"{field.name}: an expression, not a value (use create())")
            params.append(field.get_db_prep_save(value, connection))
        return params

    def create(self, using: str | None = None, **values) -> models.Model:
        """Insert one row of ``values`` (on the database the write router
        names, unless ``using``); the instance, as ``create()`` returns it."""
        [obj] = self.create_many([self.model(**values)], using=using)
        return obj

    def create_many(self, objs: list[models.Model], using: str | None = None) -> list[models.Model]:
        """Insert ``objs``, one INSERT run per row (``executemany``: a
        pipeline on PostgreSQL), each with its signals."""
        if not objs:
            return objs
        using = using or router.db_for_write(self.model, instance=objs[0])
        connection = connections[using]
        model = self.model
        signalled = pre_save.has_listeners(model), post_save.has_listeners(model)
        if signalled[0]:
            for obj in objs:
                pre_save.send(sender=model, instance=obj, raw=False, using=using, update_fields=None)
        rows = [self.params(obj, connection) for obj in objs]
        sql = self.sql(using)
        with transaction.mark_for_rollback_on_error(using=using), connection.cursor() as cursor:
            if len(rows) == 1:
                cursor.execute(sql, rows[0])
            else:
                cursor.executemany(sql, rows)
        for obj in objs:
            obj._state.adding = False
            obj._state.db = using
            if signalled[1]:
                post_save.send(
                    sender=model, instance=obj, created=True, update_fields=None, raw=False, using=using
                )
        return objs


_INSERTS: dict[type[models.Model], PreparedInsert] = {}


def prepared_insert(model: type[models.Model]) -> PreparedInsert:
    """This process's one ``PreparedInsert`` of ``model``, made at its first
    use: what stores the unsaved instances a hook or a section hands the
    tutor turn (``tutor.db.guarded_writes.Row.of``)."""
    found = _INSERTS.get(model)
    if found is None:
        found = _INSERTS.setdefault(model, PreparedInsert(model))
    return found
