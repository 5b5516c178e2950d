"""Snapshots of course-scoped rows, kept in each process (SPEC §10): a read
costs one indexed query for the versions (``ScopeVersion``), whatever the
rows' number; writers call ``scope_changed(key, rows=ids)`` in the
transaction of the change. A process whose snapshot is behind applies the
rows changed since (``ScopeChange``, one indexed query) instead of loading
the scope again: at 10k facts a change cost 0.7 s, now a few ms. Details:
docs/architecture.md, Snapshots.
"""

from __future__ import annotations

import functools
import logging
import secrets
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.db import DEFAULT_DB_ALIAS, DatabaseError, connections, transaction
from django.db.models import Max, Q, Subquery
from django.utils import timezone

from tutor.db.freezing import freeze_after_request
from tutor.db.prepared import PreparedQuery
from tutor.kernel.conf import optional_setting
from tutor.models import ScopeChange, ScopeVersion

logger = logging.getLogger(__name__)

SNAPSHOT_MAX_AGE_SECONDS = 300
# A snapshot is loaded again after this long whatever the change log says:
# the bound on staleness should a publication be lost. The log is kept as long.
SNAPSHOT_RELOAD_AGE_SECONDS = 3600
# A change of more rows than this is published as "load again".
CHANGE_MAX_ROWS = 500
# Snapshots one store keeps by default (least recently used dropped first):
# one per course in use.
SNAPSHOT_MAX_ENTRIES = 256
_DIRTY_ATTRIBUTE = "tutor_dirty_scopes"


@functools.lru_cache(maxsize=4096)
def scope_key(name: str, course_id) -> str:
    """The version key of ``name``'s rows of one course (its id in hex, as
    ``version_subqueries`` writes it in SQL), or of the global ones
    (``course_id`` None). Kept per (name, id): a request names its course's
    keys a few times."""
    return f"{name}:{uuid.UUID(str(course_id)).hex if course_id is not None else 'global'}"


def user_scope_key(name: str, user_id) -> str:
    """The version key of ``name``'s rows of one user."""
    return f"{name}:user:{user_id}"


# The scopes whose versions a tutor request reads with its task
# (``version_subqueries``): (name, "course" | "global" | "user", sends only).
_REQUEST_SCOPES: list[tuple[str, str, bool]] = []
SCOPE_KINDS = ("course", "global", "user")


def register_request_scope(name: str, kind: str, *, sends_only: bool = False) -> None:
    """A snapshot scope every tutor request reads (from ``AppConfig.ready()``);
    ``sends_only``: only the statements of a session's requests read it (a
    context preview never does)."""
    if kind not in SCOPE_KINDS:
        raise ValueError(f"kind must be one of {SCOPE_KINDS}")
    if not any(entry[:2] == (name, kind) for entry in _REQUEST_SCOPES):
        _REQUEST_SCOPES.append((name, kind, sends_only))


def _request_scopes(sends: bool) -> list[tuple[int, str, str]]:
    return [
        (index, name, kind)
        for index, (name, kind, sends_only) in enumerate(_REQUEST_SCOPES)
        if sends or not sends_only
    ]


def version_subqueries(course_ref: str, user_ref, *, sends: bool = True) -> dict:
    """Annotations reading each registered scope's version in the request's
    own task statement (no query of their own): ``course_ref`` is the field
    path of the course id, ``user_ref`` the user id (a value or an
    expression). Their keys are written in SQL as ``scope_key`` writes them.
    Without ``sends`` (a context preview's statement) the scopes only a
    session's requests read are left out."""
    from django.db.models import CharField, OuterRef, Value
    from django.db.models.functions import Cast, Concat, Replace

    hex_course = Replace(Cast(OuterRef(course_ref), output_field=CharField()), Value("-"), Value(""))
    annotations = {}
    for index, name, kind in _request_scopes(sends):
        if kind == "course":
            key = Concat(Value(f"{name}:"), hex_course, output_field=CharField())
        elif kind == "global":
            key = Value(scope_key(name, None))
        else:
            user = Cast(user_ref, output_field=CharField())
            key = Concat(Value(f"{name}:user:"), user, output_field=CharField())
        versions = ScopeVersion.objects.filter(key=key).values("version")[:1]
        annotations[f"scope_version_{index}"] = Subquery(versions)
    return annotations


def _request_keys(course_id, user_id, sends: bool) -> list[tuple[int, str]]:
    return [
        (
            index,
            user_scope_key(name, user_id)
            if kind == "user"
            else scope_key(name, course_id if kind == "course" else None),
        )
        for index, name, kind in _request_scopes(sends)
    ]


def request_scope_keys(*, course_id, user_id, sends: bool = True) -> list[str]:
    """The keys of every registered scope a tutor request of this course and
    user reads (``register_request_scope``); without ``sends``, a preview's."""
    return [key for _, key in _request_keys(course_id, user_id, sends)]


def versions_from_row(row: dict, *, course_id, user_id, sends: bool = True) -> Versions:
    """The versions a row annotated by ``version_subqueries`` carries."""
    found = {}
    keys = set()
    for index, key in _request_keys(course_id, user_id, sends):
        keys.add(key)
        if row.get(f"scope_version_{index}") is not None:
            found[key] = row[f"scope_version_{index}"]
    return Versions(keys=frozenset(keys), found=found)


def scope_versions_queryset(*, keys):
    return ScopeVersion.objects.filter(key__in=keys).values("key", "version")


SCOPE_VERSIONS = PreparedQuery(scope_versions_queryset, keys="str[]")


def dirty_scopes(connection) -> dict[str, Callable]:
    """The scopes whose change this connection's open transaction has yet to
    publish, each with its pending publication. A mark lasts while that
    publication waits in the connection's commit callbacks: a commit runs
    it (and it drops its marks), a rollback -- of the transaction or of the
    savepoint that registered it -- discards it, and so the mark."""
    marks = connection.__dict__.setdefault(_DIRTY_ATTRIBUTE, {})
    if marks:
        # Django keeps (savepoints, callback, robust) per pending callback.
        pending = {id(entry[1]) for entry in connection.run_on_commit}
        for key in [key for key, publish in marks.items() if id(publish) not in pending]:
            del marks[key]
    return marks


def still_pending(connection, publish) -> bool:
    """Whether ``publish`` still waits in this connection's commit callbacks
    (the newest are last: a mark of this transaction is found soon)."""
    if publish is None or not connection.in_atomic_block:
        return False
    return any(entry[1] is publish for entry in reversed(connection.run_on_commit))


class _Publication:
    """The versions a transaction will write after its commit: per scope key,
    the ids of the rows it changed (None: not said)."""

    def __init__(self, using: str):
        self.using = using
        self.rows: dict[str, set[str] | None] = {}
        self.__qualname__ = "snapshot versions publication"  # Django's on_commit logs name it

    def add(self, key: str, rows) -> None:
        if rows is None:
            self.rows[key] = None
        elif key not in self.rows:
            self.rows[key] = {str(row) for row in rows}
        elif self.rows[key] is not None:
            self.rows[key].update(str(row) for row in rows)

    def __call__(self) -> None:
        versions_publish(tuple(self.rows), self.using, rows=self.rows)


def scope_changed(*keys: str, rows: Iterable | None = None, using: str = DEFAULT_DB_ALIAS) -> None:
    """Record that ``rows`` (their ids; None: unknown) of the scopes ``keys``
    change in the current transaction: a new version is written with them
    after the commit (at once in autocommit, and never inside a transaction
    managed by hand, which Django's ``on_commit`` refuses). Called for each of
    many rows of one transaction, the version is written once, with them all."""
    rows = None if rows is None else tuple(rows)
    _mark_stale(keys)
    connection = connections[using]
    marks = connection.__dict__.setdefault(_DIRTY_ATTRIBUTE, {})
    publication = None
    # Only the marks of these keys are checked (a full prune per call made a
    # transaction deleting thousands of rows quadratic).
    for key in dict.fromkeys(keys):
        pending = marks.get(key)
        if still_pending(connection, pending):
            pending.add(key, rows)
            continue
        if publication is None:
            publication = _Publication(using)
        publication.add(key, rows)
    if publication is None:
        return
    if connection.in_atomic_block:
        for key in publication.rows:
            marks[key] = publication
    transaction.on_commit(publication, using=using, robust=True)


def versions_publish(keys: tuple[str, ...], using: str, rows: dict | None = None) -> None:
    """Write new versions of ``keys`` and the change log's rows (``rows``:
    key → the changed rows' ids, or None). Should the write fail (the change
    itself has committed), it is logged, this process's snapshots of them are
    dropped, and other processes keep theirs until ``TUTOR_SNAPSHOT_RELOAD_AGE``."""
    rows = rows or {}
    try:
        now = timezone.now()
        versions = {key: secrets.randbits(62) for key in sorted(set(keys))}
        changes = []
        for key, version in versions.items():
            changed = rows.get(key)
            if changed is not None and len(changed) > CHANGE_MAX_ROWS:
                changed = None
            changed = None if changed is None else sorted(changed)
            changes.append(ScopeChange(key=key, version=version, rows=changed, changed_at=now))
        # One short transaction, the versions first: their rows' locks (keys in
        # order) make each scope's log ids follow the commit order, which a
        # reader catching up relies on (a sequence hands ids out at insert, so
        # two publications in autocommit could commit out of id order).
        with transaction.atomic(using=using):
            ScopeVersion.objects.using(using).bulk_create(
                [ScopeVersion(key=key, version=version, changed_at=now) for key, version in versions.items()],
                update_conflicts=True,
                unique_fields=["key"],
                update_fields=["version", "changed_at"],
            )
            ScopeChange.objects.using(using).bulk_create(changes)
    except DatabaseError:
        logger.exception(
            "the new versions of %s were not written: other processes reload at their maximum age", keys
        )
        _forget(keys)
    finally:
        marks = dirty_scopes(connections[using])
        for key in keys:
            marks.pop(key, None)


def changes_prune(using: str = DEFAULT_DB_ALIAS) -> int:
    """Drop the change log older than any snapshot can be (hourly, with the
    database upkeep) but each scope's newest row: the row of a quiet scope's
    current version is where its readers catch up from. Returns the rows deleted."""
    horizon = timezone.now() - timedelta(seconds=2 * _reload_age() + 60)
    log = ScopeChange.objects.using(using)
    newest = log.values("key").annotate(last=Max("id")).values("last")
    deleted, _ = log.filter(changed_at__lt=horizon).exclude(id__in=Subquery(newest)).delete()
    return deleted


@dataclass(frozen=True)
class Versions:
    """The versions of ``keys`` as one query read them (a scope without a row: 0)."""

    keys: frozenset[str]
    found: dict[str, int]

    def signature(self, keys: tuple[str, ...]) -> tuple[int, ...]:
        return tuple(self.found.get(key, 0) for key in keys)


def read_versions(keys, using: str = DEFAULT_DB_ALIAS) -> Versions:
    """The versions of ``keys``, in one query (none for no keys). A scope
    this connection's transaction changed is not read: its rows are."""
    dirty = dirty_scopes(connections[using])
    keys = sorted(key for key in set(keys) if key not in dirty)
    rows = SCOPE_VERSIONS.rows(using, keys=keys) if keys else []
    return Versions(keys=frozenset(keys), found={row["key"]: row["version"] for row in rows})


@dataclass
class _Entry:
    signature: tuple
    loaded_at: float  # of its full load
    checked_at: float  # when it was last known current
    value: Any
    stale: bool = False  # this process changed a scope of it since


_STORES: list[SnapshotStore] = []


class SnapshotStore:
    """Snapshots built by ``load(argument)``, one per tuple of scope keys; with
    ``apply``, a snapshot behind its scopes becomes ``apply(snapshot,
    argument, ids)`` -- ids of the rows changed since, as ``str`` -- instead
    of a new load. With ``freeze``, a full load asks for ``gc.freeze()``
    once its request has finished (``tutor.db.freezing``)."""

    def __init__(
        self,
        name: str,
        load: Callable[[Any], Any],
        max_entries: int | None = None,
        apply: Callable[[Any, Any, frozenset[str]], Any] | None = None,
        freeze: bool = False,
    ):
        self.name = name
        self.load = load
        self.apply = apply
        self.max_entries = max_entries
        self.freeze = freeze
        self._entries: OrderedDict[tuple, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._loading: dict[tuple, threading.Lock] = {}
        self._by_key: dict[str, set[tuple]] = {}  # scope key → the entries that depend on it
        _STORES.append(self)

    def get(
        self,
        keys: tuple[str, ...],
        argument: Hashable,
        versions: Versions | None = None,
        using: str = DEFAULT_DB_ALIAS,
    ) -> Any | None:
        """The snapshot of ``keys`` (built by ``load(argument)``), current as of
        ``versions`` -- read by the caller for several stores at once, before
        this call -- or of a read of its own; None when this connection's
        transaction changed one of the scopes (the caller reads the rows
        themselves)."""
        connection = connections[using]
        if not dirty_scopes(connection).keys().isdisjoint(keys):
            return None
        if versions is None or not versions.keys.issuperset(keys):
            versions = read_versions(keys, using)
        signature = versions.signature(keys)
        entry = self._current(keys, signature)
        if entry is not None:
            return entry.value
        # One load per scope at a time: the process's other threads that miss
        # meanwhile wait for it and take its snapshot, when it is as current.
        with self._loading_lock(keys):
            entry = self._current(keys, signature)
            if entry is not None:
                return entry.value
            value = self._caught_up(keys, argument, signature, using)
            if value is None:
                now = time.monotonic()
                value = self.load(argument)
                self._keep(keys, _Entry(signature, now, now, value))
                if self.freeze:
                    freeze_after_request()
        return value

    def _current(self, keys: tuple[str, ...], signature: tuple) -> _Entry | None:
        with self._lock:
            entry = self._entries.get(keys)
            if (
                entry is None
                or entry.stale
                or entry.signature != signature
                or time.monotonic() - entry.checked_at >= _max_age()
            ):
                return None
            self._entries.move_to_end(keys)
            return entry

    def _caught_up(self, keys: tuple[str, ...], argument, signature: tuple, using: str) -> Any | None:
        """The snapshot of ``keys`` brought up to ``signature`` by applying
        the rows the change log names since it was made; None when it cannot
        be (no snapshot, too old, a change that named no rows, a version the
        log does not hold: the caller loads it)."""
        with self._lock:
            entry = self._entries.get(keys)
        now = time.monotonic()
        if entry is None or self.apply is None or now - entry.loaded_at >= _reload_age():
            return None
        # Per scope, the log after the row of the version the snapshot holds
        # (a scope never changed: all of it; a row pruned or never written:
        # nothing, and the version check below asks for a load).
        log = ScopeChange.objects.using(using)
        since = Q()
        for key, version in zip(keys, entry.signature, strict=True):
            if version:
                after = log.filter(key=key, version=version).values("id")[:1]
                since |= Q(key=key, id__gt=Subquery(after))
            else:
                since |= Q(key=key)
        changes = list(log.filter(since).order_by("id").values_list("id", "key", "version", "rows"))
        latest = {key: version for _, key, version, _ in changes}
        for key, old, new in zip(keys, entry.signature, signature, strict=True):
            if old != new and latest.get(key) != new:
                return None  # a version written without its log row, or lost
        if entry.stale and not changes:
            return None  # this process changed it, and the log does not say how yet
        if any(rows is None for *_, rows in changes):
            return None
        value = entry.value
        if changes:
            ids = frozenset(row for *_, rows in changes for row in rows)
            value = self.apply(entry.value, argument, ids)
        self._keep(keys, _Entry(signature, entry.loaded_at, now, value))
        return value

    def _keep(self, keys: tuple[str, ...], entry: _Entry) -> None:
        with self._lock:
            self._entries[keys] = entry
            self._entries.move_to_end(keys)
            for key in keys:
                self._by_key.setdefault(key, set()).add(keys)
            while len(self._entries) > (self.max_entries or SNAPSHOT_MAX_ENTRIES):
                evicted, _ = self._entries.popitem(last=False)
                for key in evicted:
                    dependents = self._by_key.get(key)
                    if dependents is not None:
                        dependents.discard(evicted)
                        if not dependents:
                            del self._by_key[key]

    def mark_stale(self, keys: Iterable[str]) -> None:
        """This process changed rows of ``keys``: their snapshots are not used
        before they caught up with the change log (or loaded again)."""
        with self._lock:
            for key in keys:
                for entry_keys in self._by_key.get(key, ()):
                    entry = self._entries.get(entry_keys)
                    if entry is not None:
                        entry.stale = True

    def _loading_lock(self, keys: tuple[str, ...]) -> threading.Lock:
        with self._lock:
            lock = self._loading.get(keys)
            if lock is None:
                lock = self._loading[keys] = threading.Lock()
                if len(self._loading) > 2 * (self.max_entries or SNAPSHOT_MAX_ENTRIES):  # scopes long gone
                    for stale in [k for k in self._loading if k not in self._entries and k != keys][:64]:
                        del self._loading[stale]
            return lock

    def forget(self, keys: Iterable[str] | None = None) -> None:
        """Drop the snapshots that depend on any of ``keys`` (None: all)."""
        with self._lock:
            if keys is None:
                self._entries.clear()
                self._by_key.clear()
                return
            for key in keys:
                for entry_keys in self._by_key.pop(key, ()):
                    self._entries.pop(entry_keys, None)


def _max_age() -> float:
    return float(optional_setting("TUTOR_SNAPSHOT_MAX_AGE", SNAPSHOT_MAX_AGE_SECONDS))


def _reload_age() -> float:
    return float(optional_setting("TUTOR_SNAPSHOT_RELOAD_AGE", SNAPSHOT_RELOAD_AGE_SECONDS))


def _mark_stale(keys: Iterable[str]) -> None:
    keys = tuple(keys)
    for store in _STORES:
        store.mark_stale(keys)


def _forget(keys: Iterable[str]) -> None:
    keys = tuple(keys)
    for store in _STORES:
        store.forget(keys)


def forget_all() -> None:
    """Drop every snapshot of this process (tests: rows roll back between them)."""
    for store in _STORES:
        store.forget()
