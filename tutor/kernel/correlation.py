"""Correlation ids (SPEC §10): one id follows a request through model calls,
recall traces, corrections, audit rows and Celery tasks, and appears on every
log line.

The id lives in a context variable for the code that runs inside a request or
a task. ``django.request`` logs its lines *after* the middleware has reset the
variable, so the log filter also reads the id the middleware left on the
request object that those records carry. The development server's request
line (``django.server``) is logged later still, by the thread that served the
request, from a record without the request: the middleware leaves the id in
a thread-local for it. Gunicorn's access lines carry the response headers,
``X-Correlation-ID`` among them.
"""

from __future__ import annotations

import contextvars
import logging
import re
import threading
import uuid

_current: contextvars.ContextVar[str] = contextvars.ContextVar("correlation_id", default="-")
_VALID = re.compile(r"[A-Za-z0-9._:-]{1,64}")
HEADER = "X-Correlation-ID"
UNSET = "-"
# The id of the request this thread served last (for django.server lines).
_served = threading.local()
GUNICORN_HEADER_ATOM = "{x-correlation-id}o"


def get_correlation_id() -> str:
    """The current id, or a fresh one when none is set (e.g. in a worker)."""
    value = _current.get()
    return value if value != UNSET else uuid.uuid4().hex


def current_or_none() -> str | None:
    value = _current.get()
    return None if value == UNSET else value


def set_correlation_id(value: str | None) -> contextvars.Token:
    """Make ``value`` (or, when it is not a valid id, a fresh one) current."""
    # UNSET ("-") is the "no id" sentinel: as an incoming id it would switch
    # correlation off for the whole request.
    return _current.set(value if value and value != UNSET and _VALID.fullmatch(value) else uuid.uuid4().hex)


def reset_correlation_id(token: contextvars.Token) -> None:
    _current.reset(token)


class CorrelationIdMiddleware:
    """Honours an incoming ``X-Correlation-ID`` and answers with the id used."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        token = set_correlation_id(request.headers.get(HEADER))
        try:
            request.correlation_id = _current.get()
            response = self.get_response(request)
            response[HEADER] = request.correlation_id
            return response
        finally:
            _served.correlation_id = getattr(request, "correlation_id", UNSET)
            reset_correlation_id(token)


class CorrelationIdFilter(logging.Filter):
    """Puts ``correlation_id`` on every record: the current one, else the one
    of the request a ``django.request`` record carries, the one a gunicorn
    access line answered with, or -- for the development server's request
    line -- the one of the request this thread served last."""

    def filter(self, record: logging.LogRecord) -> bool:
        value = _current.get()
        if value == UNSET:
            request = getattr(record, "request", None)
            value = getattr(request, "correlation_id", None) or UNSET
        if value == UNSET and record.name == "gunicorn.access" and isinstance(record.args, dict):
            value = record.args.get(GUNICORN_HEADER_ATOM) or UNSET
            value = UNSET if value == "-" else value
        if value == UNSET and record.name == "django.server":
            value = getattr(_served, "correlation_id", UNSET)
        record.correlation_id = value
        return True
