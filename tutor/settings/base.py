"""The Django project's settings (SPEC §1, §2, §4, §10, §11, §13): apps and
middleware, database, Redis, Celery and the timeouts that must nest, the web
request budget, REST framework, static files and logging."""

from __future__ import annotations

import math
import secrets
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from tutor.ops.env import env_bool, env_days, env_int, env_list, env_number, env_rate, env_str, env_url
from tutor.ops.logs import logging_config

BASE_DIR = Path(__file__).resolve().parent.parent.parent

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
    "tutor.desk.apps.DeskAdminConfig",  # Django's admin, opening on the staff desk
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI's files, served locally (works offline)
    "drf_standardized_errors",
    "tutor",
    "feedback",
    "corrections",
    "lessons",
    # --- LMS integration (LTI 1.3) ---
    "tutor.lti",
]

MIDDLEWARE = [
    # First, so that every response -- also one made by a middleware below --
    # carries X-Correlation-ID and every line logged on the way has the id.
    "tutor.kernel.correlation.CorrelationIdMiddleware",
    # Reads what a refused request left of its body: the connection stays usable.
    "tutor.web.bodies.DrainUnreadBodyMiddleware",
    # A Host outside ALLOWED_HOSTS: the JSON 400, DEBUG or not (Django's DEBUG
    # answer is HTML); inside the drain, so that refusal leaves no body behind.
    "tutor.web.hosts.AllowedHostMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "tutor.web.static_serving.StaticFilesMiddleware",
    # Before CommonMiddleware: a path answers the same with or without its
    # trailing slash, never with a redirect (SPEC §7).
    "tutor.web.slashes.TrailingSlashMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # Staff pages in the person's language (zh-hans or English): admin only.
    "tutor.web.locale.AdminLocaleMiddleware",
    "django.middleware.common.CommonMiddleware",
    # Django's request guards (too many fields or files, ...) answer the
    # JSON 400 on every path, with no traceback; before the CSRF check,
    # which reads the form first (SPEC §7).
    "tutor.web.guards.RequestGuardMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # --- LMS integration (LTI 1.3): lets the LMS frame the tool when LTI_FRAME_ANCESTORS is set ---
    "tutor.lti.middleware.FrameAncestorsMiddleware",
]
# A redirect of a POST loses its body (clients re-send it as a GET), and
# under DEBUG Django answers it with an HTML 500: tutor.web.slashes resolves the
# other spelling of the path in place instead.
APPEND_SLASH = False

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
# instead (SPEC §11). A 16 MiB page cache per connection: with SQLite's 2 MB,
# one tutor context's statements over a big database evict each other's pages
# (the bench's context: 3.9 -> 3.7 ms).
SQLITE_OPTIONS = {
    "transaction_mode": "IMMEDIATE",
    "timeout": 20,
    "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; PRAGMA cache_size=-16384;",
}
_database_url = env_str("DATABASE_URL", f"sqlite:///{BASE_DIR / 'db.sqlite3'}")
# Connections are kept between requests and Celery tasks (SPEC §10: opening a
# PostgreSQL connection cost ~5.5 ms of every review task), and checked before
# reuse, so a server restart costs one failed check, not an error.
DATABASE_CONN_MAX_AGE = env_int("DATABASE_CONN_MAX_AGE", 300)
# Seconds a process uses a snapshot of a scope's rows (tutor.db.snapshots) before checking the
# change log again whatever its version (a student's memory is loaded again then).
TUTOR_SNAPSHOT_MAX_AGE = env_int("TUTOR_SNAPSHOT_MAX_AGE", 300)
# After this long a snapshot is loaded again whatever the change log says (tutor.db.snapshots):
# the bound on staleness should a publication be lost; before it, it applies the rows changed.
TUTOR_SNAPSHOT_RELOAD_AGE = env_int("TUTOR_SNAPSHOT_RELOAD_AGE", 3600)
# Long-lived objects (start-up's, a course snapshot's once loaded) are frozen out of Python's
# cyclic collector's full passes (tutor.db.freezing, tutor/wsgi.py).
TUTOR_GC_FREEZE = env_bool("TUTOR_GC_FREEZE", True)
# PostgreSQL: the hot path's precompiled queries run as server-side prepared
# statements (tutor.db.statements); off for a pooler that cannot keep them.
DATABASE_PREPARED_STATEMENTS = env_bool("DATABASE_PREPARED_STATEMENTS", True)
try:
    _database = dj_database_url.parse(
        _database_url, conn_max_age=DATABASE_CONN_MAX_AGE, conn_health_checks=True
    )
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
REVIEW_PROMPT_VERSION = env_str("REVIEW_PROMPT_VERSION", "review-prompt-2")
REVIEW_ENGINE_VERSION = env_str("REVIEW_ENGINE_VERSION", "review-engine-1")
REVIEW_SOFT_TIME_LIMIT = env_int("REVIEW_SOFT_TIME_LIMIT", 360, minimum=1)
REVIEW_HARD_TIME_LIMIT = env_int("REVIEW_HARD_TIME_LIMIT", 420, minimum=1)
CELERY_VISIBILITY_TIMEOUT = env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=1)
REVIEW_SWEEP_INTERVAL = env_int("REVIEW_SWEEP_INTERVAL", 60, minimum=1)
# Retention per kind of data (SPEC §13), in days; 0 keeps that kind. A course
# may override each in admin (RetentionOverride); `manage.py retention_apply`
# and the daily beat task below apply them. MODEL_CALL_RETENTION_DAYS is the
# earlier name of RETENTION_MODEL_CALLS_DAYS, still read.
RETENTION_MESSAGES_DAYS = env_days("RETENTION_MESSAGES_DAYS", 365)
RETENTION_MEMORY_DAYS = env_days("RETENTION_MEMORY_DAYS", 365)
RETENTION_RECALL_TRACES_DAYS = env_days("RETENTION_RECALL_TRACES_DAYS", 180)
RETENTION_MODEL_CALLS_DAYS = env_days("RETENTION_MODEL_CALLS_DAYS", env_days("MODEL_CALL_RETENTION_DAYS", 90))
RETENTION_SUBMISSIONS_DAYS = env_days("RETENTION_SUBMISSIONS_DAYS", 0)
RETENTION_AUDIT_DAYS = env_days("RETENTION_AUDIT_DAYS", 0)
MODEL_CALL_RETENTION_DAYS = RETENTION_MODEL_CALLS_DAYS
# Rows per retention batch: each batch is its own short transaction.
RETENTION_BATCH = env_int("RETENTION_BATCH", 500, minimum=1)
# The AI notice (SPEC §13): its text version (bump it when the wording changes;
# a new provider, model or retention asks again by itself) and the provider's
# name as students read it (default: the host of TUTOR_LLM_BASE_URL).
AI_NOTICE_VERSION = env_str("AI_NOTICE_VERSION", "1")
AI_NOTICE_PROVIDER = env_str("AI_NOTICE_PROVIDER", "")
# Model-staff agreement (review-agreement): a criterion whose model verdicts
# staff agree with less often than the floor, over at least the minimum number
# of staff verdicts, is flagged, and new model FAILs on it wait for staff.
REVIEW_AGREEMENT_FLOOR = env_number("REVIEW_AGREEMENT_FLOOR", 0.8)
REVIEW_AGREEMENT_MIN_VERDICTS = env_int("REVIEW_AGREEMENT_MIN_VERDICTS", 10, minimum=1)
if REVIEW_AGREEMENT_FLOOR > 1:
    raise ImproperlyConfigured(
        f"REVIEW_AGREEMENT_FLOOR must be between 0 and 1; got {env_str('REVIEW_AGREEMENT_FLOOR')!r}"
    )

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

# --- web request budget (SPEC §4, §10 Production) -----------------------------
# A tutor turn makes one model call inside the web request. Its worst case
# (every try timing out, plus the backoff) and the request's own work is the
# tutor request budget; the web server's worker timeout must exceed it, or a
# hung model ends as the web server's own HTML 500 instead of the JSON 503.
# A pending reply older than the budget belongs to a request that no longer
# runs (tutor.chat.services). In the embedded mode (no REDIS_URL) the review runs
# eagerly inside the submitting request, so the web budget covers it too.
TUTOR_REQUEST_OVERHEAD = 10  # seconds: context assembly and the writes around the model call
_worst_model_call = (TUTOR_LLM_RETRIES + 1) * TUTOR_LLM_TIMEOUT + sum(
    TUTOR_LLM_BACKOFF * 2**i for i in range(TUTOR_LLM_RETRIES)
)
TUTOR_REQUEST_BUDGET = _worst_model_call + TUTOR_REQUEST_OVERHEAD
WEB_REQUEST_BUDGET = (
    TUTOR_REQUEST_BUDGET if REDIS_URL else max(TUTOR_REQUEST_BUDGET, _worst_review + TUTOR_REQUEST_OVERHEAD)
)
WEB_TIMEOUT = env_int("WEB_TIMEOUT", math.ceil(WEB_REQUEST_BUDGET) + 30, minimum=1)
if not WEB_REQUEST_BUDGET < WEB_TIMEOUT:
    raise ImproperlyConfigured(
        f"WEB_TIMEOUT ({WEB_TIMEOUT}s) must exceed the worst-case web request {WEB_REQUEST_BUDGET:.0f}s = "
        "(TUTOR_LLM_RETRIES+1) x TUTOR_LLM_TIMEOUT + backoff + overhead"
        + ("" if REDIS_URL else ", or an eager review without REDIS_URL")
    )
# A stored user message's detection is sent again by the sweep one
# visibility timeout after it was stored (corrections.services.dispatch):
# never while its own tutor turn may still be calling the model (SPEC §5).
if not TUTOR_REQUEST_BUDGET < CELERY_VISIBILITY_TIMEOUT:
    raise ImproperlyConfigured(
        f"CELERY_VISIBILITY_TIMEOUT ({CELERY_VISIBILITY_TIMEOUT}s) must exceed the tutor request budget "
        f"{TUTOR_REQUEST_BUDGET:.0f}s = (TUTOR_LLM_RETRIES+1) x TUTOR_LLM_TIMEOUT + backoff + overhead"
    )

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
# Worker lines go through LOGGING (JSON, with the task's correlation id), not
# through Celery's own plain-text root handler.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_BEAT_SCHEDULE = {
    "sweep-review-attempts": {
        "task": "feedback.tasks.sweep_attempts",
        "schedule": float(REVIEW_SWEEP_INTERVAL),
    },
    # Retention of every kind of data, model calls included (SPEC §13).
    "apply-retention": {"task": "tutor.tasks.apply_retention", "schedule": 86400.0},
    "optimize-database": {"task": "tutor.tasks.optimize_database", "schedule": 3600.0},
    # Reply claims of killed web workers (tutor.chat.services.sessions_release_stale).
    "release-stale-replies": {
        "task": "tutor.tasks.release_stale_replies",
        "schedule": float(REVIEW_SWEEP_INTERVAL),
    },
}

if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "tutor.ops.redis_cache.CountingRedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": {"socket_connect_timeout": 1, "socket_timeout": 1},
        }
    }
else:
    # The embedded mode serves with several gunicorn workers (WEB_CONCURRENCY):
    # a per-process memory cache would give each its own throttle counters, so
    # a user would get the configured rate once per worker. Files are shared.
    CACHES = {
        "default": {
            "BACKEND": "tutor.ops.file_cache.LockedFileCache",
            "LOCATION": env_str("CACHE_DIR", str(BASE_DIR / "cache")),
            # The counters of a few thousand active users, each in three scopes.
            "OPTIONS": {"MAX_ENTRIES": 10000},
        }
    }

# --- REST framework -----------------------------------------------------------
TUTOR_THROTTLE_SUBMISSIONS = env_rate("TUTOR_THROTTLE_SUBMISSIONS", "30/min")
TUTOR_THROTTLE_MESSAGES = env_rate("TUTOR_THROTTLE_MESSAGES", "60/min")
TUTOR_THROTTLE_REGRADES = env_rate("TUTOR_THROTTLE_REGRADES", "10/hour")
TUTOR_THROTTLE_EXPORTS = env_rate("TUTOR_THROTTLE_EXPORTS", "10/hour")
CSRF_FAILURE_VIEW = "tutor.web.handlers.csrf_failure"
REST_FRAMEWORK = {
    # JSON only (SPEC §7): the browsable API would answer ?format=api and
    # Accept: text/html with HTML pages. DRF's JSON, written by orjson (tutor.web.renderers).
    "DEFAULT_RENDERER_CLASSES": ["tutor.web.renderers.FastJSONRenderer"],
    # Token first: an anonymous request is answered 401 with a WWW-Authenticate
    # header rather than 403 (SPEC §7).
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "tutor.web.authentication.PreparedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PAGINATION_CLASS": "tutor.web.pagination.DefaultPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": ["django_filters.rest_framework.DjangoFilterBackend"],
    # JSON bodies only (SPEC §7): form and multipart bodies are a 415; the
    # parser bounds size and nesting and refuses NUL and lone surrogates.
    "DEFAULT_PARSER_CLASSES": ["tutor.web.parsers.StrictJSONParser"],
    "DEFAULT_SCHEMA_CLASS": "tutor.web.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "drf_standardized_errors.handler.exception_handler",
    "DEFAULT_THROTTLE_RATES": {
        "submissions": TUTOR_THROTTLE_SUBMISSIONS,
        "messages": TUTOR_THROTTLE_MESSAGES,
        "regrade_requests": TUTOR_THROTTLE_REGRADES,
        "exports": TUTOR_THROTTLE_EXPORTS,
    },
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}
DRF_STANDARDIZED_ERRORS = {
    "ENABLE_IN_DEBUG_FOR_UNHANDLED_EXCEPTIONS": True,
    "EXCEPTION_HANDLER_CLASS": "tutor.web.errors.ExceptionHandler",
    "EXCEPTION_FORMATTER_CLASS": "tutor.web.errors.ErrorFormatter",
    # 413 on every operation with a body (the upload limit); 403, 409 and 503
    # are declared by the operations that can answer them (tutor.web.openapi).
    "ALLOWED_ERROR_STATUS_CODES": ["400", "401", "403", "404", "405", "406", "413", "415", "429", "500"],
    "ERROR_SCHEMAS": {
        "400": "tutor.web.openapi.ErrorResponse400Serializer",
        "413": "tutor.web.openapi.ErrorResponse413Serializer",
    },
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Tutor feedback loop API",
    "DESCRIPTION": "Submissions, immutable review attempts and the feedback-aware tutor.",
    "VERSION": "0.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "COMPONENT_SPLIT_REQUEST": True,
    # tutor.web.converters: a public id in a path is a UUID (either case).
    "PATH_CONVERTER_OVERRIDES": {"public_id": {"type": "string", "format": "uuid"}},
    "ENUM_NAME_OVERRIDES": {
        "ValidationErrorEnum": "drf_standardized_errors.openapi_serializers.ValidationErrorEnum.choices",
        "ClientErrorEnum": "drf_standardized_errors.openapi_serializers.ClientErrorEnum.choices",
        "ServerErrorEnum": "drf_standardized_errors.openapi_serializers.ServerErrorEnum.choices",
        "ErrorCode401Enum": "drf_standardized_errors.openapi_serializers.ErrorCode401Enum.choices",
        "ErrorCode403Enum": "drf_standardized_errors.openapi_serializers.ErrorCode403Enum.choices",
        "ErrorCode404Enum": "drf_standardized_errors.openapi_serializers.ErrorCode404Enum.choices",
        "ErrorCode405Enum": "drf_standardized_errors.openapi_serializers.ErrorCode405Enum.choices",
        "ErrorCode406Enum": "drf_standardized_errors.openapi_serializers.ErrorCode406Enum.choices",
        "ErrorCode409Enum": "tutor.kernel.errors.ErrorCode409Enum.choices",
        "ErrorCode413Enum": "tutor.kernel.errors.ErrorCode413Enum.choices",
        "ErrorCode415Enum": "drf_standardized_errors.openapi_serializers.ErrorCode415Enum.choices",
        "ErrorCode429Enum": "drf_standardized_errors.openapi_serializers.ErrorCode429Enum.choices",
        "ErrorCode500Enum": "drf_standardized_errors.openapi_serializers.ErrorCode500Enum.choices",
        "ErrorCode503Enum": "tutor.kernel.errors.ErrorCode503Enum.choices",
        "ErrorType400Enum": [("validation_error", "validation_error"), ("client_error", "client_error")],
        "CheckStateEnum": [("ok", "ok"), ("down", "down"), ("not_configured", "not_configured")],
        "VerdictEnum": "tutor.kernel.rubrics.Verdict.choices",
        "CriterionKindEnum": "tutor.kernel.rubrics.CriterionKind.choices",
        "BasisEnum": "feedback.results.Basis.choices",
        "AttemptStatusEnum": "feedback.models.AttemptStatus.choices",
        "FeedbackStateEnum": "feedback.selectors.FeedbackState.choices",
        "InvalidReasonEnum": "feedback.selectors.InvalidReason.choices",
        "CiStatusEnum": [("passed", "passed"), ("failed", "failed")],
        "MessageRoleEnum": [("user", "User"), ("assistant", "Assistant")],
        "ChatRoleEnum": [("system", "system"), ("user", "user"), ("assistant", "assistant")],
    },
    "POSTPROCESSING_HOOKS": [
        "drf_standardized_errors.openapi_hooks.postprocess_schema_enums",
        "tutor.web.openapi.add_links",
    ],
    # Swagger UI from the drf-spectacular-sidecar package, not a CDN (SPEC §10).
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
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
# The staff pages' languages (SPEC §8): chosen by the desk's switch (a cookie)
# or the browser's Accept-Language; the student client has its own (i18n.js).
LANGUAGES = [("en", "English"), ("zh-hans", "简体中文")]
LOCALE_PATHS = [BASE_DIR / "tutor" / "locale"]
ADMIN_URL_PREFIX = "/admin/"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = BASE_DIR / "staticfiles"
# whitenoise serves the admin's, DRF's and Swagger UI's files under any WSGI
# server (SPEC §10). From the apps' own static directories, so that no
# collectstatic step stands between an install and a working admin page;
# after `collectstatic`, the compressed copies in STATIC_ROOT are served too.
WHITENOISE_USE_FINDERS = True
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

# One JSON object per line with the correlation id (tutor.ops.logs, SPEC §10).
LOGGING = logging_config(env_str("LOG_LEVEL", "INFO"))
