"""The cache of the embedded mode (no ``REDIS_URL``): files shared by every
web worker, for the throttle counters (SPEC §11: throttling is a courtesy,
with Redis in production).

Django's file cache writes each value to a new temporary file and renames it
over the old one, and lists the directory to cull it, on every ``set``:
about 0.4 ms here, on every throttled request. This one rewrites a key's file
in place under an exclusive lock (readers take a shared one, so none reads a
half-written value), uncompressed (a throttle's history is a list of
timestamps: compressing a benchmark's thousand of them took 1 ms), and
culls once in a while. A value that cannot be read counts as absent, which
lets the request through -- what the throttle does when its cache is down
(``tutor.throttling``).
"""

from __future__ import annotations

import os
import pickle
import random

from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.filebased import FileBasedCache
from django.core.files import locks

# One write in this many culls the directory (counts its files, and past
# MAX_ENTRIES removes a share of them).
CULL_ONE_IN = 200


class LockedFileCache(FileBasedCache):
    def get(self, key, default=None, version=None):
        try:
            with open(self._key_to_file(key, version), "rb") as f:
                locks.lock(f, locks.LOCK_SH)
                if not self._is_expired(f):
                    # Written by this app alone: the directory is 0700, its files 0600.
                    return pickle.load(f)  # noqa: S301
        except FileNotFoundError:
            pass
        except (EOFError, pickle.UnpicklingError, ValueError, TypeError, AttributeError):
            pass  # written by something else: absent
        return default

    def _write_content(self, file, timeout, value):
        pickle.dump(self.get_backend_timeout(timeout), file, self.pickle_protocol)
        pickle.dump(value, file, self.pickle_protocol)

    def touch(self, key, timeout=DEFAULT_TIMEOUT, version=None):
        try:
            with open(self._key_to_file(key, version), "r+b") as f:
                locks.lock(f, locks.LOCK_EX)
                if self._is_expired(f):
                    return False
                value = pickle.load(f)  # noqa: S301 -- as in get()
                f.seek(0)
                self._write_content(f, timeout, value)
                f.truncate()
                return True
        except FileNotFoundError:
            return False

    def has_key(self, key, version=None):
        try:
            with open(self._key_to_file(key, version), "rb") as f:
                locks.lock(f, locks.LOCK_SH)
                return not self._is_expired(f)
        except FileNotFoundError:
            return False

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        if random.randrange(CULL_ONE_IN) == 0:  # noqa: S311 -- not a secret
            self._cull()
        fname = self._key_to_file(key, version)
        try:
            fd = os.open(fname, os.O_RDWR | os.O_CREAT, 0o600)
        except FileNotFoundError:  # the directory was removed meanwhile
            self._createdir()
            fd = os.open(fname, os.O_RDWR | os.O_CREAT, 0o600)
        with open(fd, "r+b") as f:
            locks.lock(f, locks.LOCK_EX)
            self._write_content(f, timeout, value)
            f.truncate()
