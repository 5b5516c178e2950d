"""A snapshot behind its scope applies the rows the change log names instead of
loading the whole scope again (``tutor.db.snapshots``, SPEC §10); it loads
again whenever the log cannot say what changed."""

from __future__ import annotations

import pytest
from django.db import transaction

from tutor.db import snapshots
from tutor.db.snapshots import CHANGE_MAX_ROWS, SnapshotStore, changes_prune, scope_changed
from tutor.models import ScopeChange, ScopeVersion

KEYS = ("test:course", "test:global")


@pytest.fixture
def store():
    made = SnapshotStore("test", lambda argument: made.calls.append("load") or frozenset(), apply=None)
    made.calls = []

    def apply(value, argument, ids):
        made.calls.append(("apply", ids))
        return value | ids

    made.apply = apply
    yield made
    snapshots._STORES.remove(made)


def publish(capture, *keys, rows=None):
    """A change committed in a transaction of its own, its version published."""
    with capture(execute=True), transaction.atomic():
        scope_changed(*keys, rows=rows)


@pytest.mark.django_db
def test_the_rows_a_change_names_are_applied_not_loaded(store, django_capture_on_commit_callbacks):
    assert store.get(KEYS, "c") == frozenset()
    publish(django_capture_on_commit_callbacks, "test:course", rows=[1, 2])

    assert store.get(KEYS, "c") == {"1", "2"}
    assert store.calls == ["load", ("apply", frozenset({"1", "2"}))]
    assert store.get(KEYS, "c") == {"1", "2"}  # current again: nothing more read
    assert len(store.calls) == 2


@pytest.mark.django_db
def test_changes_between_two_reads_are_applied_at_once_whichever_scope(
    store, django_capture_on_commit_callbacks
):
    store.get(KEYS, "c")
    publish(django_capture_on_commit_callbacks, "test:course", rows=["a"])
    publish(django_capture_on_commit_callbacks, "test:global", rows=["b"])
    publish(django_capture_on_commit_callbacks, "test:course", rows=["c"])

    assert store.get(KEYS, "c") == {"a", "b", "c"}
    assert store.calls == ["load", ("apply", frozenset({"a", "b", "c"}))]


@pytest.mark.django_db
def test_one_transaction_publishes_the_rows_of_all_its_calls_once(store, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks, transaction.atomic():
        scope_changed("test:course", rows=["a"])
        scope_changed("test:course", rows=["b"])
    assert len(callbacks) == 1
    (change,) = ScopeChange.objects.filter(key="test:course")
    assert change.rows == ["a", "b"]
    assert ScopeVersion.objects.get(key="test:course").version == change.version


@pytest.mark.django_db
@pytest.mark.parametrize(
    "rows", [None, range(CHANGE_MAX_ROWS + 1)], ids=["rows not said", "more rows than the log keeps"]
)
def test_a_change_that_names_no_rows_loads_the_scope_again(store, django_capture_on_commit_callbacks, rows):
    store.get(KEYS, "c")
    publish(django_capture_on_commit_callbacks, "test:course", rows=["a"])
    publish(django_capture_on_commit_callbacks, "test:course", rows=rows)

    store.get(KEYS, "c")
    assert store.calls == ["load", "load"]


@pytest.mark.django_db
def test_a_version_the_log_does_not_hold_loads_the_scope_again(store, django_capture_on_commit_callbacks):
    store.get(KEYS, "c")
    publish(django_capture_on_commit_callbacks, "test:course", rows=["a"])
    ScopeVersion.objects.filter(key="test:course").update(version=12345)  # written without its log row

    store.get(KEYS, "c")
    assert store.calls == ["load", "load"]


@pytest.mark.django_db
def test_a_pruned_log_loads_the_scope_again(store, django_capture_on_commit_callbacks, settings):
    publish(django_capture_on_commit_callbacks, "test:course", rows=["a"])
    store.get(KEYS, "c")
    publish(django_capture_on_commit_callbacks, "test:course", rows=["b"])
    publish(django_capture_on_commit_callbacks, "test:course", rows=["c"])
    settings.TUTOR_SNAPSHOT_RELOAD_AGE = -3600  # every row is past the horizon
    assert changes_prune() == 2  # "a" (the snapshot's version) and "b"; "c" is the newest
    settings.TUTOR_SNAPSHOT_RELOAD_AGE = 3600

    store.get(KEYS, "c")
    assert store.calls == ["load", "load"]


@pytest.mark.django_db
def test_a_change_of_this_process_not_yet_in_the_log_loads_the_scope_again(store):
    store.get(KEYS, "c")
    snapshots._mark_stale(["test:course"])  # a write whose publication has not run

    store.get(KEYS, "c")
    assert store.calls == ["load", "load"]


@pytest.mark.django_db
def test_at_its_maximum_age_it_reads_the_log_and_at_its_reload_age_it_loads(
    store, settings, django_capture_on_commit_callbacks
):
    store.get(KEYS, "c")
    settings.TUTOR_SNAPSHOT_MAX_AGE = 0
    assert store.get(KEYS, "c") == frozenset()
    assert store.calls == ["load"]  # the log holds nothing newer

    settings.TUTOR_SNAPSHOT_RELOAD_AGE = 0
    store.get(KEYS, "c")
    assert store.calls == ["load", "load"]


@pytest.mark.django_db
def test_a_store_without_apply_loads_on_every_change(django_capture_on_commit_callbacks):
    loads = []
    plain = SnapshotStore("plain", lambda argument: loads.append(argument) or len(loads))
    try:
        plain.get(KEYS, "c")
        publish(django_capture_on_commit_callbacks, "test:course", rows=["a"])
        assert plain.get(KEYS, "c") == 2
    finally:
        snapshots._STORES.remove(plain)


@pytest.mark.django_db
def test_pruning_keeps_each_scopes_newest_row_where_its_readers_catch_up_from(
    store, django_capture_on_commit_callbacks, settings
):
    publish(django_capture_on_commit_callbacks, "test:course", rows=["a"])
    publish(django_capture_on_commit_callbacks, "test:course", rows=["b"])
    store.get(KEYS, "c")
    settings.TUTOR_SNAPSHOT_RELOAD_AGE = -3600  # every row is past the horizon
    assert changes_prune() == 1  # "a": "b" is the quiet scope's current version
    settings.TUTOR_SNAPSHOT_RELOAD_AGE = 3600
    publish(django_capture_on_commit_callbacks, "test:course", rows=["c"])

    assert store.get(KEYS, "c") == {"c"}
    assert store.calls == ["load", ("apply", frozenset({"c"}))]
