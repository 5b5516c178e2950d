"""Log lines (SPEC §10 Observability): one JSON object per line, each with
the correlation id, never a message's content or a secret.

The formatter is python-json-logger's, restricted to a fixed set of keys:
Django attaches the request object to its ``django.request`` records, and
its repr holds the query string -- a draft tutor message sent as
``?message=`` would otherwise reach the log through it. The same reason
strips query strings from the development server's request lines.

``logging_config`` is the one configuration, used by ``tutor.settings``
(``LOGGING``) and by ``gunicorn.conf.py`` for gunicorn's own loggers.
"""

from __future__ import annotations

import logging
import re

from pythonjsonlogger.json import JsonFormatter as _JsonFormatter

# The keys a line may carry. Anything else a record holds stays out.
LINE_KEYS = (
    "timestamp",
    "level",
    "logger",
    "message",
    "correlation_id",
    "status_code",
    "exc_info",
    "stack_info",
)
_QUERY_STRING = re.compile(r"\?[^\s\"]*")


class JsonFormatter(_JsonFormatter):
    def __init__(self, *args, **kwargs):
        super().__init__(
            "{levelname}{name}{message}{correlation_id}",
            style="{",
            rename_fields={"levelname": "level", "name": "logger"},
            timestamp=True,
        )

    def process_log_record(self, log_data):
        return {key: log_data[key] for key in LINE_KEYS if key in log_data}


class RequestLineFilter(logging.Filter):
    """Drops query strings from the development server's request lines
    (``"GET /api/tutor/context/?message=… HTTP/1.1" 200``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name == "django.server" and record.args and isinstance(record.args, tuple):
            first, *rest = record.args
            if isinstance(first, str):
                record.args = (_QUERY_STRING.sub("", first), *rest)
        return True


class SecurityLineFilter(logging.Filter):
    """A line of Django's security loggers (``django.security.*``: a refused
    host, too many fields) without its traceback: the request was the
    client's fault, and ``tutor.web.guards`` answers it. Whatever still
    reaches Django's own handling of such an exception is one line too."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name.startswith("django.security.") and record.exc_info:
            record.exc_info = None
            record.exc_text = None
        return True


def logging_config(level: str, *, extra_loggers: dict | None = None) -> dict:
    """The ``dictConfig`` of every process: one JSON handler on the root
    logger. Django's own loggers (``django``, ``django.server``) are named
    so that the handlers Django's default configuration gave them are
    dropped: under DEBUG they would print each line a second time."""
    propagate = {"handlers": [], "propagate": True}
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {
            "correlation": {"()": "tutor.kernel.correlation.CorrelationIdFilter"},
            "request_line": {"()": "tutor.ops.logs.RequestLineFilter"},
            "security_line": {"()": "tutor.ops.logs.SecurityLineFilter"},
        },
        "formatters": {"json": {"()": "tutor.ops.logs.JsonFormatter"}},
        "handlers": {
            "json": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "filters": ["correlation", "request_line", "security_line"],
            }
        },
        "root": {"handlers": ["json"], "level": level},
        "loggers": {
            "django": {**propagate, "level": "INFO"},
            "django.server": {**propagate, "level": "INFO"},
            "django.db.backends": {**propagate, "level": "INFO"},
            # gunicorn's own lines (manage.py serve, tutor/ops/gunicorn_conf.py) through the same handler.
            "gunicorn.error": {**propagate, "level": "INFO"},
            "gunicorn.access": {**propagate, "level": "INFO"},
            # A line per model request would name the provider's URL; the ModelCall row has the detail.
            "httpx": {**propagate, "level": "WARNING"},
            **(extra_loggers or {}),
        },
    }
