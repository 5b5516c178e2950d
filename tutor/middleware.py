"""Correlation ids (SPEC §10): one id follows a request through model calls,
reviews and audit rows, and appears on every log line."""

from __future__ import annotations

import contextvars
import logging
import re
import uuid

_current: contextvars.ContextVar[str] = contextvars.ContextVar("correlation_id", default="-")
_VALID = re.compile(r"^[A-Za-z0-9._:-]{1,64}$")
HEADER = "X-Correlation-ID"


def get_correlation_id() -> str:
    """The current id, or a fresh one when none is set (e.g. in a worker)."""
    value = _current.get()
    return value if value != "-" else uuid.uuid4().hex


def set_correlation_id(value: str | None) -> contextvars.Token:
    return _current.set(value if value and _VALID.match(value) else uuid.uuid4().hex)


def reset_correlation_id(token: contextvars.Token) -> None:
    _current.reset(token)


class CorrelationIdMiddleware:
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
            reset_correlation_id(token)


class CorrelationIdFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.correlation_id = _current.get()
        return True
