"""Django settings, read from environment variables only (SPEC §1).

The embedded default (nothing set) is SQLite in the project directory, Celery
running tasks eagerly in-process and the offline reviewer/tutor. Every value is
validated here so that a bad one stops start-up with a message naming it.
"""

from __future__ import annotations

import secrets
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from tutor.env import env_bool, env_int, env_list, env_number, env_rate, env_str, env_url

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", False)
SECRET_KEY = env_str("SECRET_KEY")
# The key signs what the web process hands out (sessions, CSRF tokens), so the
# web entry points (tutor.wsgi, tutor.asgi) refuse to start without one unless
# DEBUG is on. Management commands and workers sign nothing that outlives
# them: they get a throwaway key, so `manage.py migrate` or `import_course`
# runs without one.
SECRET_KEY_FROM_ENV = SECRET_KEY is not None
if SECRET_KEY is None:
    SECRET_KEY = "insecure-development-key-only-for-DEBUG" if DEBUG else secrets.token_urlsafe(50)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"] if DEBUG else [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_standardized_errors",
    "tutor",
    "feedback",
    "lessons",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "tutor.correlation.CorrelationIdMiddleware",
]

ROOT_URLCONF = "tutor.urls"
WSGI_APPLICATION = "tutor.wsgi.application"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

# --- database -----------------------------------------------------------------
# SQLite's default DEFERRED transactions fail read-then-write under concurrency
# with "database is locked"; IMMEDIATE + WAL + a busy timeout serialise writers
# instead (SPEC §11).
SQLITE_OPTIONS = {
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
}
_database_url = env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}")
try:
    _database = dj_database_url.parse(_database_url, conn_max_age=0)
except Exception as exc:  # the library raises several types for a bad URL
    raise ImproperlyConfigured(f"DATABASE_URL is not a valid database URL: {exc}") from None
if _database["ENGINE"] == "django.db.backends.sqlite3":
    _database["OPTIONS"] = {**SQLITE_OPTIONS, **_database.get("OPTIONS", {})}
elif _database["ENGINE"] != "django.db.backends.postgresql":
    raise ImproperlyConfigured("DATABASE_URL must be a sqlite:/// or postgres:// URL")
DATABASES = {"default": _database}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Redis, Celery, cache -----------------------------------------------------
REDIS_URL = env_url("REDIS_URL", ("redis", "rediss"))

# Timeouts nest (SPEC §2, §11): the worst case of one review -- every model
# generation retried to the end -- must finish before the soft limit, the soft
# limit before the hard one, and the hard one before Redis redelivers the
# unacknowledged message to another worker.
TUTOR_LLM_BASE_URL = env_url("TUTOR_LLM_BASE_URL", ("http", "https"))
TUTOR_LLM_MODEL = env_str("TUTOR_LLM_MODEL", "offline" if TUTOR_LLM_BASE_URL is None else None)
if TUTOR_LLM_BASE_URL and not TUTOR_LLM_MODEL:
    raise ImproperlyConfigured("TUTOR_LLM_MODEL must be set when TUTOR_LLM_BASE_URL is set")
TUTOR_LLM_API_KEY = env_str("TUTOR_LLM_API_KEY", "")
TUTOR_LLM_TIMEOUT = env_number("TUTOR_LLM_TIMEOUT", 30.0, minimum=0.1)
TUTOR_LLM_RETRIES = env_int("TUTOR_LLM_RETRIES", 2)  # extra tries after the first
TUTOR_LLM_BACKOFF = env_number("TUTOR_LLM_BACKOFF", 0.5)  # seconds, doubled per retry
REVIEW_MAX_GENERATIONS = env_int("REVIEW_MAX_GENERATIONS", 3, minimum=1)
REVIEW_PROMPT_VERSION = env_str("REVIEW_PROMPT_VERSION", "review-prompt-1")
REVIEW_ENGINE_VERSION = env_str("REVIEW_ENGINE_VERSION", "review-engine-1")
REVIEW_SOFT_TIME_LIMIT = env_int("REVIEW_SOFT_TIME_LIMIT", 360, minimum=1)
REVIEW_HARD_TIME_LIMIT = env_int("REVIEW_HARD_TIME_LIMIT", 420, minimum=1)
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=1)
REVIEW_SWEEP_INTERVAL = env_int("REVIEW_SWEEP_INTERVAL", 60, minimum=1)
REVIEW_QUEUED_REDISPATCH_AFTER = env_int("REVIEW_QUEUED_REDISPATCH_AFTER", 120, minimum=1)
MODEL_CALL_RETENTION_DAYS = env_int("MODEL_CALL_RETENTION_DAYS", 90, minimum=1)

_worst_review = REVIEW_MAX_GENERATIONS * (
    (TUTOR_LLM_RETRIES + 1) * TUTOR_LLM_TIMEOUT
    + sum(TUTOR_LLM_BACKOFF * 2**i for i in range(TUTOR_LLM_RETRIES))
)
if not _worst_review < REVIEW_SOFT_TIME_LIMIT:
    raise ImproperlyConfigured(
        f"REVIEW_SOFT_TIME_LIMIT ({REVIEW_SOFT_TIME_LIMIT}s) must exceed the worst-case review "
        f"time {_worst_review:.0f}s = REVIEW_MAX_GENERATIONS x (TUTOR_LLM_RETRIES+1) x "
        "TUTOR_LLM_TIMEOUT + backoff"
    )
if not REVIEW_SOFT_TIME_LIMIT < REVIEW_HARD_TIME_LIMIT:
    raise ImproperlyConfigured("REVIEW_HARD_TIME_LIMIT must be greater than REVIEW_SOFT_TIME_LIMIT")
if not REVIEW_HARD_TIME_LIMIT < CELERY_VISIBILITY_TIMEOUT:
    raise ImproperlyConfigured("CELERY_VISIBILITY_TIMEOUT must be greater than REVIEW_HARD_TIME_LIMIT")

CELERY_TASK_ALWAYS_EAGER = REDIS_URL is None
CELERY_TASK_EAGER_PROPAGATES = False
CELERY_BROKER_URL = REDIS_URL or "memory://"
CELERY_RESULT_BACKEND = None
CELERY_TASK_IGNORE_RESULT = True
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# A publish to a stopped Redis must fail fast: the queued row is the outbox and
# the sweep re-dispatches it, so the request need not wait for the broker.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": CELERY_VISIBILITY_TIMEOUT,
    "socket_connect_timeout": 2,
    "socket_timeout": 5,
    "max_retries": 1,
    "interval_start": 0,
    "interval_step": 0.2,
    "interval_max": 0.5,
}
CELERY_TASK_PUBLISH_RETRY = False
CELERY_BEAT_SCHEDULE = {
    "sweep-review-attempts": {
        "task": "feedback.tasks.sweep_attempts",
        "schedule": float(REVIEW_SWEEP_INTERVAL),
    },
    "purge-model-calls": {"task": "tutor.tasks.purge_model_calls", "schedule": 86400.0},
}

if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- REST framework -----------------------------------------------------------
TUTOR_THROTTLE_SUBMISSIONS = env_rate("TUTOR_THROTTLE_SUBMISSIONS", "30/min")
TUTOR_THROTTLE_MESSAGES = env_rate("TUTOR_THROTTLE_MESSAGES", "60/min")
REST_FRAMEWORK = {
    # Token first: an anonymous request is answered 401 with a WWW-Authenticate
    # header rather than 403 (SPEC §7).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "tutor.pagination.DefaultPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    "DEFAULT_SCHEMA_CLASS": "drf_standardized_errors.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "drf_standardized_errors.handler.exception_handler",
    "DEFAULT_THROTTLE_RATES": {
        "submissions": TUTOR_THROTTLE_SUBMISSIONS,
        "messages": TUTOR_THROTTLE_MESSAGES,
    },
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}
DRF_STANDARDIZED_ERRORS = {
    "ENABLE_IN_DEBUG_FOR_UNHANDLED_EXCEPTIONS": True,
    "EXCEPTION_HANDLER_CLASS": "tutor.errors.ExceptionHandler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Tutor feedback loop API",
    "DESCRIPTION": "Submissions, immutable review attempts and the feedback-aware tutor.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    "ENUM_NAME_OVERRIDES": {
        "ValidationErrorEnum": "drf_standardized_errors.openapi_serializers.ValidationErrorEnum.choices",
        "ClientErrorEnum": "drf_standardized_errors.openapi_serializers.ClientErrorEnum.choices",
        "ServerErrorEnum": "drf_standardized_errors.openapi_serializers.ServerErrorEnum.choices",
        "ErrorCode401Enum": "drf_standardized_errors.openapi_serializers.ErrorCode401Enum.choices",
        "ErrorCode403Enum": "drf_standardized_errors.openapi_serializers.ErrorCode403Enum.choices",
        "ErrorCode404Enum": "drf_standardized_errors.openapi_serializers.ErrorCode404Enum.choices",
        "ErrorCode405Enum": "drf_standardized_errors.openapi_serializers.ErrorCode405Enum.choices",
        "ErrorCode406Enum": "drf_standardized_errors.openapi_serializers.ErrorCode406Enum.choices",
        "ErrorCode409Enum": "tutor.errors.ErrorCode409Enum.choices",
        "ErrorCode413Enum": "tutor.errors.ErrorCode413Enum.choices",
        "ErrorCode415Enum": "drf_standardized_errors.openapi_serializers.ErrorCode415Enum.choices",
        "ErrorCode429Enum": "drf_standardized_errors.openapi_serializers.ErrorCode429Enum.choices",
        "ErrorCode500Enum": "drf_standardized_errors.openapi_serializers.ErrorCode500Enum.choices",
        "ErrorCode503Enum": "tutor.errors.ErrorCode503Enum.choices",
    },
    "POSTPROCESSING_HOOKS": ["drf_standardized_errors.openapi_hooks.postprocess_schema_enums"],
}

# Evidence may be up to 1 MiB of JSON (SPEC §2); Django's own 2.5 MB cap must
# sit above that so our API, not Django, answers an oversized body with a 413.
EVIDENCE_MAX_BYTES = 1024 * 1024
EVIDENCE_MAX_FILES = 200
EVIDENCE_MAX_FILE_BYTES = 256 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 8 * 1024 * 1024

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"correlation": {"()": "tutor.correlation.CorrelationIdFilter"}},
    "formatters": {
        "structured": {"format": "%(asctime)s %(levelname)s %(name)s cid=%(correlation_id)s %(message)s"}
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "formatter": "structured",
            "filters": ["correlation"],
        }
    },
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "INFO"}},
}

# --- lessons (SPEC §6; seed 003) -------------------------------------------------
# Recall: score = W_TAG*tag + W_SYMPTOM*symptom + W_DECAY*exp(-age_days/DECAY_DAYS),
# then the brakes floor -> top_k -> token budget; a stored trace keeps MAX_LINES lines.
LESSON_RECALL_W_TAG = env_number("LESSON_RECALL_W_TAG", 0.5)
LESSON_RECALL_W_SYMPTOM = env_number("LESSON_RECALL_W_SYMPTOM", 0.3)
LESSON_RECALL_W_DECAY = env_number("LESSON_RECALL_W_DECAY", 0.2)
LESSON_DECAY_DAYS = env_number("LESSON_DECAY_DAYS", 30, minimum=1)
LESSON_RECALL_FLOOR = env_number("LESSON_RECALL_FLOOR", 0.4)
LESSON_RECALL_TOP_K = env_int("LESSON_RECALL_TOP_K", 3)
LESSON_RECALL_BUDGET_TOKENS = env_int("LESSON_RECALL_BUDGET_TOKENS", 800)
LESSON_TRACE_MAX_LINES = env_int("LESSON_TRACE_MAX_LINES", 200, minimum=1)
LESSON_PROMOTE_HITS = env_int("LESSON_PROMOTE_HITS", 3, minimum=1)  # real uses before a skill candidate
LESSON_QUARANTINE_HARMFUL = env_int("LESSON_QUARANTINE_HARMFUL", 3, minimum=1)
LESSON_DUPLICATE_JACCARD = env_number("LESSON_DUPLICATE_JACCARD", 0.8)
LESSON_REVIEW_DAYS = env_int("LESSON_REVIEW_DAYS", 90, minimum=1)  # default review_by of a new lesson
if not 0 < LESSON_DUPLICATE_JACCARD <= 1:
    raise ImproperlyConfigured("LESSON_DUPLICATE_JACCARD must be in (0, 1]")
CELERY_BEAT_SCHEDULE["lessons-review-due"] = {"task": "lessons.tasks.report_review_due", "schedule": 86400.0}
SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"].update(
    {
        "LessonStatusEnum": "lessons.models.LessonStatus.choices",
        "LessonKindEnum": "lessons.models.LessonKind.choices",
        "LessonSourceEnum": "lessons.models.LessonSource.choices",
        "RejectReasonEnum": "lessons.models.RejectReason.choices",
        "RecallDecisionEnum": "lessons.recall.Decision.choices",
        "SkillCandidateStatusEnum": "lessons.models.SkillCandidateStatus.choices",
    }
)
