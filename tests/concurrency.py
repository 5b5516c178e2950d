"""Helpers of the tests that cross transactions or migrate the schema: two
transactions interleaved statement by statement on their own connections,
the triggers a table carries, a migration back and forth."""

from __future__ import annotations

import io
import threading
from collections.abc import Callable, Sequence

import pytest
from django.core.management import call_command
from django.db import connection, connections, transaction
from django.db.migrations.executor import MigrationExecutor

# Transactions that cross need a database with row locks: SQLite takes one
# writer at a time (the suite opens its transactions IMMEDIATE), so there a
# second transaction queues behind the first until it commits and never runs
# beside it. CI runs these tests on PostgreSQL.
concurrent_writers = pytest.mark.skipif(
    connection.vendor != "postgresql",
    reason="SQLite has one writer at a time: concurrent transactions queue, never cross",
)


def interleave(
    *transactions: Sequence[Callable[[], object]], lock_wait: float = 3, timeout: float = 30
) -> list[BaseException | None]:
    """Run each sequence of statements in a transaction of its own (a thread,
    so a connection of its own), step by step in lockstep: every transaction
    runs its first statement, then all wait for each other, then their second,
    and so on. Returns each transaction's error (None when it committed).

    A statement that waits on another transaction's lock fails after
    ``lock_wait`` seconds on PostgreSQL (``lock_timeout``), so being blocked
    is an error of its own, not a pause the test cannot see; the others then
    go on without the failed one. A step the transactions never all reach
    within ``timeout`` fails them all."""
    steps = max(len(t) for t in transactions)
    barrier = threading.Barrier(len(transactions), timeout=timeout)
    errors: list[BaseException | None] = [None] * len(transactions)
    failed = threading.Event()

    def wait() -> None:
        try:
            barrier.wait()
        except threading.BrokenBarrierError:
            if not failed.is_set():
                raise  # a timeout: no peer failed, one never came
            # a peer failed and aborted the barrier: this transaction goes on alone

    def run(index: int, statements: Sequence[Callable[[], object]]) -> None:
        try:
            with transaction.atomic():
                if connection.vendor == "postgresql":
                    with connection.cursor() as cursor:
                        cursor.execute(
                            "SELECT set_config('lock_timeout', %s, true)", [f"{int(lock_wait * 1000)}ms"]
                        )
                for step in range(steps):
                    if step < len(statements):
                        statements[step]()
                    if step < steps - 1:
                        wait()
        except BaseException as error:  # noqa: BLE001 -- reported to the test
            errors[index] = error
            failed.set()
            barrier.abort()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i, t), daemon=True) for i, t in enumerate(transactions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join((timeout + lock_wait) * steps)
    assert not any(thread.is_alive() for thread in threads), "a transaction never finished"
    return errors


def table_triggers(table: str) -> set[str]:
    """The names of the triggers a table carries, on the suite's database."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT tgname FROM pg_trigger WHERE tgrelid = %s::regclass AND NOT tgisinternal", [table]
            )
        else:
            cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s", [table])
        return {name for (name,) in cursor.fetchall()}


def table_exists(table: str) -> bool:
    with connection.cursor() as cursor:
        return table in connection.introspection.table_names(cursor)


def migrate(app: str, target: str | None):
    """Migrate ``app`` to ``target`` (None: its latest migration) and return
    the historical models of the state migrated to."""
    executor = MigrationExecutor(connection)
    targets = executor.loader.graph.leaf_nodes(app) if target is None else [(app, target)]
    executor.migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


def assert_reloads_from_dump(app_label: str, queryset, fields: Sequence[str], tmp_path) -> None:
    """``dumpdata`` of the whole app, the rows of ``queryset`` deleted, then
    ``loaddata`` of the dump: the same rows are back."""
    dump = io.StringIO()
    call_command("dumpdata", app_label, format="json", stdout=dump)
    before = sorted(queryset.values_list(*fields))
    queryset.delete()
    fixture = tmp_path / "dump.json"
    fixture.write_text(dump.getvalue())
    call_command("loaddata", str(fixture), verbosity=0)
    assert sorted(queryset.all().values_list(*fields)) == before
