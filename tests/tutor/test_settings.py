"""Start-up configuration (SPEC §1, §11): bad values stop the process with the
variable's name; the embedded default is SQLite with safe options and eager Celery.

Each case starts a fresh interpreter with ``tutor.settings``, because settings are
read once at import time and the test process already has its own.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Everything tutor.settings reads; a value inherited from the CI environment
# (e.g. a real DATABASE_URL or REDIS_URL) must not leak into these cases.
SETTINGS_VARIABLES = (
    "DEBUG",
    "SECRET_KEY",
    "ALLOWED_HOSTS",
    "DATABASE_URL",
    "REDIS_URL",
    "CACHE_DIR",
    "TUTOR_LLM_BASE_URL",
    "TUTOR_LLM_MODEL",
    "TUTOR_LLM_API_KEY",
    "TUTOR_LLM_TIMEOUT",
    "TUTOR_LLM_RETRIES",
    "TUTOR_LLM_BACKOFF",
    "REVIEW_MAX_GENERATIONS",
    "REVIEW_PROMPT_VERSION",
    "REVIEW_ENGINE_VERSION",
    "REVIEW_SOFT_TIME_LIMIT",
    "REVIEW_HARD_TIME_LIMIT",
    "CELERY_VISIBILITY_TIMEOUT",
    "TUTOR_THROTTLE_SUBMISSIONS",
    "TUTOR_THROTTLE_MESSAGES",
    "TUTOR_THROTTLE_REGRADES",
    "REVIEW_AGREEMENT_FLOOR",
    "REVIEW_AGREEMENT_MIN_VERDICTS",
    "DATABASE_CONN_MAX_AGE",
    "DATABASE_PREPARED_STATEMENTS",
    "LOG_LEVEL",
    "WEB_TIMEOUT",
    "WEB_BIND",
    "WEB_CONCURRENCY",
    "WEB_THREADS",
    "CORRECTIONS_AUTO_VERIFY_SUPPORTERS",
)

SETUP = "import django; django.setup()"


def start(code: str = SETUP, **env: str) -> subprocess.CompletedProcess:
    """Run ``code`` in a new interpreter configured only by ``env``."""
    environ = {k: v for k, v in os.environ.items() if k not in SETTINGS_VARIABLES}
    environ.update({"DJANGO_SETTINGS_MODULE": "tutor.settings", "SECRET_KEY": "start-up-test-key"})
    environ.update(env)
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=60
    )


def test_embedded_default_starts():
    # The control for every failure case below: the same command with nothing
    # wrong in the environment succeeds.
    result = start()

    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("DEBUG", "maybe"),
        ("TUTOR_THROTTLE_SUBMISSIONS", "fast"),
        ("TUTOR_THROTTLE_MESSAGES", "60 per minute"),
        ("REDIS_URL", "http://x"),
        ("TUTOR_LLM_BASE_URL", "ftp://models.example"),
        ("TUTOR_LLM_TIMEOUT", "abc"),
        ("TUTOR_LLM_TIMEOUT", "0"),
        ("TUTOR_LLM_RETRIES", "1.5"),
        ("REVIEW_MAX_GENERATIONS", "0"),
        ("TUTOR_THROTTLE_REGRADES", "often"),
        ("REVIEW_AGREEMENT_FLOOR", "high"),
        ("REVIEW_AGREEMENT_FLOOR", "1.5"),
        ("REVIEW_AGREEMENT_MIN_VERDICTS", "0"),
        ("DATABASE_CONN_MAX_AGE", "-1"),
        ("LESSON_RECALL_W_TAG", "nan"),
        ("LESSON_RECALL_FLOOR", "inf"),
        ("LESSON_DECAY_DAYS", "Infinity"),
        ("CORRECTIONS_AUTO_VERIFY_SUPPORTERS", "1"),  # one student would verify a fact alone
        ("CORRECTIONS_AUTO_VERIFY_SUPPORTERS", "-2"),
    ],
)
def test_bad_value_stops_start_up_naming_the_variable(variable, value):
    result = start(**{variable: value})

    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert variable in result.stderr
    assert repr(value) in result.stderr  # the offending value is quoted back


def test_an_integer_beyond_64_bits_stops_start_up_with_a_message_not_a_traceback():
    result = start(DATABASE_CONN_MAX_AGE="9" * 400)

    assert result.returncode != 0
    assert "ImproperlyConfigured: DATABASE_CONN_MAX_AGE must be at most 9223372036854775807" in result.stderr
    assert "OverflowError" not in result.stderr


@pytest.mark.parametrize(
    "url", ["mysql://tutor:hunter2@db.example/tutor", "postgres://tutor:hunter2@db.example:port/tutor"]
)
def test_bad_database_url_stops_start_up_without_echoing_the_password(url):
    result = start(DATABASE_URL=url)

    assert result.returncode != 0
    assert "DATABASE_URL" in result.stderr
    assert "hunter2" not in result.stderr


@pytest.mark.parametrize(
    ("env", "named"),
    [
        # 3 generations x 3 tries x 30 s already exceed one second.
        ({"REVIEW_SOFT_TIME_LIMIT": "1"}, "REVIEW_SOFT_TIME_LIMIT"),
        ({"TUTOR_LLM_TIMEOUT": "200"}, "REVIEW_SOFT_TIME_LIMIT"),
        ({"REVIEW_HARD_TIME_LIMIT": "360"}, "REVIEW_HARD_TIME_LIMIT"),
        ({"CELERY_VISIBILITY_TIMEOUT": "420"}, "CELERY_VISIBILITY_TIMEOUT"),
        # Reviews nest (one generation, one try of 100 s), but a tutor turn may
        # take 110 s: the sweep could send its detection during the model call.
        (
            {
                "REVIEW_MAX_GENERATIONS": "1",
                "TUTOR_LLM_RETRIES": "0",
                "TUTOR_LLM_TIMEOUT": "100",
                "REVIEW_SOFT_TIME_LIMIT": "101",
                "REVIEW_HARD_TIME_LIMIT": "102",
                "CELERY_VISIBILITY_TIMEOUT": "103",
            },
            "CELERY_VISIBILITY_TIMEOUT (103s) must exceed the tutor request budget 110s",
        ),
    ],
)
def test_timeouts_that_do_not_nest_stop_start_up(env, named):
    result = start(**env)

    assert result.returncode != 0
    assert named in result.stderr


@pytest.mark.parametrize("entry_point", ["tutor.wsgi", "tutor.asgi"])
def test_missing_secret_key_outside_debug_stops_the_web_process(entry_point):
    result = start(f"import {entry_point}", SECRET_KEY="")

    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off" in result.stderr


@pytest.mark.parametrize("entry_point", ["tutor.wsgi", "tutor.asgi"])
def test_web_process_starts_with_a_secret_key(entry_point):
    result = start(f"import {entry_point}")

    assert result.returncode == 0, result.stderr


def test_management_commands_run_without_a_secret_key():
    # migrate, import_course, enroll and makemigrations sign nothing that outlives them.
    result = start(
        "import django; django.setup(); from django.conf import settings; "
        "assert len(settings.SECRET_KEY) > 40 and not settings.SECRET_KEY_FROM_ENV",
        SECRET_KEY="",
    )

    assert result.returncode == 0, result.stderr


def test_model_server_without_model_name_stops_start_up():
    result = start(TUTOR_LLM_BASE_URL="http://127.0.0.1:9/v1")

    assert result.returncode != 0
    assert "TUTOR_LLM_MODEL" in result.stderr


def test_any_sqlite_url_gets_immediate_transactions_wal_busy_timeout_and_page_cache(tmp_path):
    # Connects for real: the options must reach SQLite, not only the settings dict.
    code = (
        SETUP
        + "\nimport json; from django.db import connection; from django.conf import settings"
        + "\nwith connection.cursor() as c:"
        + "\n    c.execute('PRAGMA journal_mode'); mode = c.fetchone()[0]"
        + "\n    c.execute('PRAGMA busy_timeout'); busy = c.fetchone()[0]"
        + "\n    c.execute('PRAGMA cache_size'); cache = c.fetchone()[0]"
        + "\nprint(json.dumps({'options': settings.DATABASES['default']['OPTIONS'],"
        + " 'journal_mode': mode, 'busy_timeout': busy, 'cache_size': cache,"
        + " 'transaction_mode': connection.transaction_mode}))"
    )
    result = start(code, DATABASE_URL=f"sqlite:///{tmp_path / 'db.sqlite3'}")

    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["options"]["transaction_mode"] == "IMMEDIATE"
    assert report["options"]["timeout"] == 20
    assert "journal_mode=WAL" in report["options"]["init_command"]
    assert report["transaction_mode"] == "IMMEDIATE"
    assert report["journal_mode"] == "wal"
    assert report["busy_timeout"] == 20000
    assert report["cache_size"] == -16384  # KiB: a 16 MiB page cache per connection


CELERY_MODE = (
    SETUP
    + "\nimport json; from django.conf import settings; from tutor.celery import app"
    + "\nprint(json.dumps({'eager': app.conf.task_always_eager, 'broker': app.conf.broker_url,"
    + " 'cache': settings.CACHES['default']['BACKEND'],"
    + " 'visibility': app.conf.broker_transport_options['visibility_timeout'],"
    + " 'acks_late': app.conf.task_acks_late, 'prefetch': app.conf.worker_prefetch_multiplier}))"
)


def test_without_redis_url_celery_runs_tasks_eagerly_in_process():
    result = start(CELERY_MODE)

    assert result.returncode == 0, result.stderr
    mode = json.loads(result.stdout)
    assert mode["eager"] is True
    assert mode["broker"] == "memory://"
    assert mode["cache"] == "tutor.ops.file_cache.LockedFileCache"  # shared by the web workers


def test_with_redis_url_celery_uses_the_broker_with_redelivery_settings():
    result = start(CELERY_MODE, REDIS_URL="redis://127.0.0.1:1/0")

    assert result.returncode == 0, result.stderr
    mode = json.loads(result.stdout)
    assert mode["eager"] is False
    assert mode["broker"] == "redis://127.0.0.1:1/0"
    assert mode["cache"].endswith("RedisCache")
    assert mode["visibility"] == 3600
    assert mode["acks_late"] is True
    assert mode["prefetch"] == 1


@pytest.mark.parametrize(("env", "max_age"), [({}, 300), ({"DATABASE_CONN_MAX_AGE": "0"}, 0)])
def test_database_connections_are_kept_and_health_checked(env, max_age):
    code = (
        SETUP + "; from django.conf import settings; import json; d = settings.DATABASES['default']; "
        "print(json.dumps([d['CONN_MAX_AGE'], d['CONN_HEALTH_CHECKS']]))"
    )
    result = start(code, DATABASE_URL="postgres://u:p@127.0.0.1:1/db", **env)

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [max_age, True]


@pytest.mark.parametrize(("env", "on"), [({}, True), ({"DATABASE_PREPARED_STATEMENTS": "0"}, False)])
def test_hot_queries_prepare_on_postgresql_unless_turned_off_and_nothing_else_does(env, on):
    code = (
        SETUP + "; from django.conf import settings; import json; "
        "print(json.dumps([settings.DATABASE_PREPARED_STATEMENTS, "
        "settings.DATABASES['default']['OPTIONS'].get('prepare_threshold')]))"
    )
    result = start(code, DATABASE_URL="postgres://u:p@127.0.0.1:1/db", **env)

    assert result.returncode == 0, result.stderr
    # The connection's own threshold stays Django's None: psycopg counts no other query.
    assert json.loads(result.stdout) == [on, None]
