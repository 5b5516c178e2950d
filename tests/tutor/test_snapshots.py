"""Snapshot stores (tutor.db.snapshots): one load per scope however many threads
miss at once, a bounded number of snapshots, and a version per scope."""

from __future__ import annotations

import threading
import time

import pytest
from django.db import connections

from tutor.db import snapshots
from tutor.db.snapshots import SnapshotStore, read_versions, scope_changed
from tutor.models import ScopeVersion


@pytest.fixture
def store():
    loads: list = []

    def load(argument):
        loads.append(argument)
        time.sleep(0.05)  # long enough for every thread to miss meanwhile
        return {"argument": argument, "load": len(loads)}

    made = SnapshotStore("test", load)
    made.loads = loads
    yield made
    snapshots._STORES.remove(made)


@pytest.mark.django_db(transaction=True)
def test_threads_that_miss_at_once_share_one_load(store):
    got: list = []

    def read():
        try:
            got.append(store.get(("test:a",), "a"))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=read) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)

    assert store.loads == ["a"]
    assert got == [{"argument": "a", "load": 1}] * 6


@pytest.mark.django_db
def test_a_new_version_reloads_and_the_oldest_snapshots_leave_first(store, monkeypatch):
    monkeypatch.setattr(snapshots, "SNAPSHOT_MAX_ENTRIES", 2)
    first = store.get(("test:a",), "a")
    assert store.get(("test:a",), "a") is first
    store.get(("test:b",), "b")
    store.get(("test:c",), "c")  # "a" was used least recently: it leaves

    assert store.get(("test:c",), "c")["load"] == 3
    assert store.get(("test:a",), "a")["load"] == 4
    ScopeVersion.objects.create(key="test:a", version=5, changed_at="2026-12-01T00:00:00Z")
    assert store.get(("test:a",), "a")["load"] == 5


@pytest.mark.django_db(transaction=True)
def test_versions_are_read_in_one_query_and_a_changed_scope_gets_a_new_one(django_assert_num_queries):
    scope_changed("test:x")  # autocommit: written at once
    with django_assert_num_queries(1):
        versions = read_versions(["test:x", "test:y"])

    assert set(versions.found) == {"test:x"} and versions.signature(("test:y",)) == (0,)
    scope_changed("test:x")
    assert read_versions(["test:x"]).found["test:x"] != versions.found["test:x"]
