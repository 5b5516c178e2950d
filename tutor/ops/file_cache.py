"""The cache of the embedded mode (no ``REDIS_URL``): files shared by every
web worker, for the throttle counters (SPEC §11). A key's file is rewritten in
place under a lock (Django's file cache cost about 0.4 ms per ``set``).
Details: docs/architecture.md, Throttling and the embedded cache.
"""

from __future__ import annotations

import json
import os
import random
import time

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.filebased import FileBasedCache
from django.core.files import locks

# One write in this many culls the directory (counts its files, and past
# MAX_ENTRIES removes a share of them).
CULL_ONE_IN = 200
_ABSENT = object()


class LockedFileCache(FileBasedCache):
    def _read(self, f):
        """The value of an open, locked file, or ``_ABSENT`` (expired, empty, unreadable)."""
        try:
            expiry, value = json.loads(f.read())
        except (ValueError, TypeError, UnicodeDecodeError):
            return _ABSENT
        if expiry is not None and (not isinstance(expiry, (int, float)) or expiry < time.time()):
            return _ABSENT
        return value

    def _write(self, f, timeout, value) -> None:
        f.seek(0)
        f.write(json.dumps([self.get_backend_timeout(timeout), value]).encode())
        f.truncate()

    def get(self, key, default=None, version=None):
        try:
            with open(self._key_to_file(key, version), "rb") as f:
                locks.lock(f, locks.LOCK_SH)
                value = self._read(f)
        except FileNotFoundError:
            return default
        return default if value is _ABSENT else value

    def has_key(self, key, version=None):
        return self.get(key, _ABSENT, version) is not _ABSENT

    def _locked_for_writing(self, key, version):
        """The key's file, open and exclusively locked (created if absent):
        a file removed while this waited for the lock is opened again."""
        if random.randrange(CULL_ONE_IN) == 0:  # noqa: S311 -- not a secret
            self._cull()
        fname = self._key_to_file(key, version)
        for _ in range(3):
            try:
                fd = os.open(fname, os.O_RDWR | os.O_CREAT, 0o600)
            except FileNotFoundError:  # the directory was removed meanwhile
                self._createdir()
                fd = os.open(fname, os.O_RDWR | os.O_CREAT, 0o600)
            f = open(fd, "r+b")  # noqa: SIM115 -- returned open, closed by the caller
            locks.lock(f, locks.LOCK_EX)
            if os.fstat(f.fileno()).st_nlink == 0:
                f.close()  # removed while this waited for the lock: lock the file that is there now
                continue
            return f
        raise OSError(f"the cache file of {key!r} kept being removed")

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        with self._locked_for_writing(key, version) as f:
            self._write(f, timeout, value)

    def window_hit(self, key, seconds: int, version=None) -> tuple[int, float]:
        """One more request in ``key``'s window, read and written under one
        lock (``tutor.web.throttling.window_hit``): the window's count and end.
        An absent, expired or unreadable counter opens a window of ``seconds``."""
        with self._locked_for_writing(key, version) as f:
            try:
                end, count = json.loads(f.read())
            except (ValueError, TypeError, UnicodeDecodeError):
                end = count = None
            now = time.time()
            valid = isinstance(end, (int, float)) and isinstance(count, int) and not isinstance(count, bool)
            if not valid or end < now:
                end, count = now + seconds, 0
            count += 1
            f.seek(0)
            f.write(json.dumps([end, count]).encode())
            f.truncate()
            return count, end

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        try:
            with open(self._key_to_file(key, version), "r+b") as f:
                locks.lock(f, locks.LOCK_EX)
                value = self._read(f)
                if value is _ABSENT:
                    return False
                self._write(f, timeout, value)
                return True
        except FileNotFoundError:
            return False
