"""Test settings: overrides of tutor.settings, never a fork of it."""

import os

os.environ.setdefault("SECRET_KEY", "test-secret-key-not-for-production")

from tutor.settings import *  # noqa: E402,F403
from tutor.settings import BASE_DIR, DATABASES  # noqa: E402

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
# Threads in concurrency tests need a database file they can all open; an
# in-memory SQLite database is private to one connection.
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["TEST"] = {"NAME": str(BASE_DIR / f"test_db_{os.getpid()}.sqlite3")}

# The cache holds only throttle counters. Tests clear it between cases, and a
# Redis cache shares its database with the Celery broker, so clearing it
# would drop queued review tasks of the worker tests.
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# Reviews run in-process in tests even when REDIS_URL is set; the worker tests
# (tests/worker) switch to the real broker while their worker process runs.
CELERY_TASK_ALWAYS_EAGER = True

# A course snapshot's full load ends with gc.freeze() (tutor.db.freezing):
# in the suite, thousands of loads would keep every test's cyclic garbage.
TUTOR_GC_FREEZE = False
