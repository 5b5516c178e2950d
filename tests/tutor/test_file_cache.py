"""The embedded mode's cache (``tutor.ops.file_cache``): files every web worker
shares, rewritten in place under a lock."""

from __future__ import annotations

import threading

import pytest

from tutor.ops.file_cache import LockedFileCache


@pytest.fixture
def cache(tmp_path):
    return LockedFileCache(str(tmp_path / "cache"), {"OPTIONS": {"MAX_ENTRIES": 50}})


def test_values_are_kept_replaced_and_expire(cache):
    cache.set("k", [1.5, 2.5], 60)
    assert cache.get("k") == [1.5, 2.5] and cache.has_key("k")
    cache.set("k", ["shorter"], 60)  # in place: nothing of the longer value is left behind
    assert cache.get("k") == ["shorter"]
    assert cache.add("k", "other") is False and cache.add("new", "v") is True
    assert cache.get("new") == "v"
    cache.set("gone", "v", 0)  # a timeout of 0 expires at once
    assert cache.get("gone", "default") == "default" and not cache.has_key("gone")
    assert cache.delete("k") is True and cache.get("k") is None


def test_a_file_that_is_no_value_reads_as_absent(cache):
    cache.set("k", "v", 60)
    path = cache._key_to_file("k")
    with open(path, "wb") as f:
        f.write(b"\x80\x05garbage")

    assert cache.get("k", "absent") == "absent"
    cache.set("k", "again", 60)
    assert cache.get("k") == "again"


def test_a_pickle_in_the_directory_is_never_unpickled(cache):
    """Values are JSON: a file someone else put there cannot run code."""
    import pickle

    cache.set("k", "v", 60)
    with open(cache._key_to_file("k"), "wb") as f:
        pickle.dump((None, "planted"), f)

    assert cache.get("k", "absent") == "absent" and not cache.has_key("k")


def test_a_first_write_is_not_lost_to_a_reader_of_the_empty_file(cache):
    """Found by an outside review: a reader that locked the new, still empty
    file first took it for expired and removed it, and the value went into
    the removed file (1,291 of 3,000 first writes were lost)."""
    lost = 0
    for n in range(300):
        key, stop = f"throttle_user_{n}", threading.Event()

        def read(key=key, stop=stop):
            while not stop.is_set():
                cache.get(key)

        reader = threading.Thread(target=read)
        reader.start()
        cache.set(key, [1.0], 60)
        stop.set()
        reader.join()
        lost += cache.get(key) is None

    assert lost == 0


def test_a_write_waiting_for_the_lock_outlives_a_delete(cache):
    cache.set("k", [1.0], 60)
    path = cache._key_to_file("k")
    with open(path, "rb") as held:
        from django.core.files import locks

        locks.lock(held, locks.LOCK_SH)
        writer = threading.Thread(target=cache.set, args=("k", [2.0], 60))
        writer.start()
        writer.join(timeout=0.2)  # waiting for the lock
        cache.delete("k")
        locks.unlock(held)
    writer.join()

    assert cache.get("k") == [2.0]


def test_a_removed_directory_is_made_again(cache, tmp_path):
    cache.clear()
    (tmp_path / "cache").rmdir()

    cache.set("k", "v", 60)

    assert cache.get("k") == "v"


def test_readers_never_see_a_half_written_value(cache):
    """Four writers and readers on one key: with the locks every read finds
    a whole value (without them a read caught a rewrite half done)."""
    cache.set("k", list(range(5000)), 60)
    seen, errors = [], []

    def work(n):
        try:
            for i in range(150):
                cache.set("k", [n * 1000 + i] * 5000, 60)
                value = cache.get("k", "torn")
                seen.append(value == "torn" or len(value) != 5000 or len(set(value)) != 1)
        except Exception as exc:  # noqa: BLE001 -- reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert not errors
    assert len(seen) == 600 and not any(seen)


def test_past_max_entries_writes_cull_the_directory(cache, monkeypatch):
    import tutor.ops.file_cache

    monkeypatch.setattr(tutor.ops.file_cache, "CULL_ONE_IN", 1)
    for n in range(120):
        cache.set(f"k{n}", n, 60)

    assert len(cache._list_cache_files()) <= 50 + 1


def test_touch_gives_a_value_a_new_lifetime(cache):
    cache.set("k", {"history": [1.0, 2.0]}, 0)
    assert cache.touch("k", 60) is False  # expired already
    cache.set("k", {"history": [1.0, 2.0]}, 60)

    assert cache.touch("k", 0) is True
    assert cache.get("k") is None


# --- the throttle's counter (tutor.web.throttling.window_hit) --------------------------------------


def test_a_window_counts_under_one_lock_and_ends_at_its_expiry(cache, monkeypatch):
    clock = [1_000.0]
    monkeypatch.setattr("time.time", lambda: clock[0])
    assert [cache.window_hit("w", 60) for _ in range(3)] == [(1, 1_060.0), (2, 1_060.0), (3, 1_060.0)]
    assert cache.get("w") == 3  # the count is an ordinary value of the cache
    clock[0] = 1_060.5
    assert cache.window_hit("w", 60) == (1, 1_120.5)  # the next window opens with the next request


@pytest.mark.parametrize("planted", [b"", b"\x80garbage", b'[1e300, "many"]', b"[null, true]", b"{}"])
def test_a_counter_file_that_holds_no_count_opens_a_window(cache, planted):
    cache.window_hit("w", 60)
    with open(cache._key_to_file("w"), "wb") as f:
        f.write(planted)

    assert cache.window_hit("w", 60)[0] == 1


COUNTING_PROCESS = """
import sys
from tutor.ops.file_cache import LockedFileCache
cache = LockedFileCache(sys.argv[1], {})
for _ in range(int(sys.argv[2])):
    cache.window_hit("shared", 600)
"""


def test_web_processes_counting_at_once_lose_no_count(cache, tmp_path):
    """gunicorn's workers are processes: each takes the file's lock for its step."""
    import subprocess
    import sys

    from django.conf import settings

    directory = str(tmp_path / "cache")
    runs = [
        subprocess.Popen([sys.executable, "-c", COUNTING_PROCESS, directory, "150"], cwd=settings.BASE_DIR)
        for _ in range(4)
    ]
    assert [run.wait(timeout=120) for run in runs] == [0, 0, 0, 0]

    assert cache.get("shared") == 600
