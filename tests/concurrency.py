"""Helpers of the tests that cross transactions or migrate the schema: two
transactions interleaved statement by statement on their own connections,
the triggers a table carries, a migration back and forth."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence

from django.db import connection, connections, transaction
from django.db.migrations.executor import MigrationExecutor


def interleave(
    *transactions: Sequence[Callable[[], object]], timeout: float = 30
) -> list[BaseException | None]:
    """Run each sequence of statements in a transaction of its own (a thread,
    so a connection of its own), step by step in lockstep: every transaction
    runs its first statement, then all wait for each other, then their second,
    and so on; a transaction blocked on another's lock keeps the others
    waiting only until its own statement returns. Returns each transaction's
    error (None when it committed)."""
    steps = max(len(t) for t in transactions)
    barrier = threading.Barrier(len(transactions), timeout=timeout)
    errors: list[BaseException | None] = [None] * len(transactions)

    def run(index: int, statements: Sequence[Callable[[], object]]) -> None:
        try:
            with transaction.atomic():
                for step in range(steps):
                    if step < len(statements):
                        statements[step]()
                    if step < steps - 1:
                        _wait(barrier)
        except BaseException as error:  # noqa: BLE001 -- reported to the test
            errors[index] = error
            barrier.abort()
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(i, t)) for i, t in enumerate(transactions)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout * steps)
    assert not any(thread.is_alive() for thread in threads), "a transaction never finished"
    return errors


def _wait(barrier: threading.Barrier) -> None:
    # A peer that failed has aborted the barrier: this transaction goes on alone.
    with contextlib.suppress(threading.BrokenBarrierError):
        barrier.wait()


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
