"""The API's exception handler: domain errors (``tutor.kernel.errors``) and
DRF's own in the one error shape of drf-standardized-errors (SPEC §7)."""

from __future__ import annotations

import logging
import re
from collections import deque

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from drf_standardized_errors.formatter import ExceptionFormatter
from drf_standardized_errors.handler import ExceptionHandler as StandardizedExceptionHandler
from drf_standardized_errors.settings import package_settings
from drf_standardized_errors.types import Error
from rest_framework import exceptions, status

from tutor.kernel.errors import DomainError, InvalidInput, PayloadTooLarge
from tutor.web.guards import log_refusal, refusal_detail

log = logging.getLogger(__name__)


class _DomainAPIException(exceptions.APIException):
    def __init__(self, error: DomainError):
        self.status_code = error.status_code
        super().__init__(detail=error.public_message(), code=error.code)


def as_api_exception(error: DomainError) -> exceptions.APIException:
    if error.field is not None:
        # A flat dotted key reads the same as DRF's nested errors in the error
        # shape's ``attr`` (``criteria.2.rubric_id``).
        api_error = exceptions.ValidationError({error.field: [error.public_message()]}, code=error.code)
        api_error.status_code = error.status_code
        return api_error
    return _DomainAPIException(error)


# A 400 lists this many errors; the rest are counted in one last entry.
MAX_LISTED_ERRORS = 100


def errors_listed(detail, limit: int = MAX_LISTED_ERRORS) -> list[Error]:
    """The errors of a (nested) DRF error detail in the order and with the
    dotted ``attr`` of drf-standardized-errors' ``flatten_errors``: the first
    ``limit``, then a ``too_many_errors`` entry counting the rest. (Its own
    queue pops from the front of a list: quadratic in the number of
    errors, seconds for a body of 100,000 bad items.)"""
    separator = package_settings.NESTED_FIELD_SEPARATOR
    queue = deque([(detail, None)])
    listed: list[Error] = []
    more = 0
    while queue:
        item, attr = queue.popleft()
        if isinstance(item, list):
            index = -1
            for child in item:
                if isinstance(child, exceptions.ErrorDetail):
                    queue.append((child, attr))
                else:
                    index += 1
                    queue.append((child, f"{attr}{separator}{index}" if attr else str(index)))
        elif isinstance(item, dict):
            for key, child in item.items():
                queue.append((child, f"{attr}{separator}{key}" if attr else key))
        elif len(listed) < limit:
            listed.append(Error(getattr(item, "code", "invalid"), str(item), attr))
        else:
            more += 1
    if more:
        listed.append(Error("too_many_errors", f"{more} more errors are not listed.", None))
    return listed


class ErrorFormatter(ExceptionFormatter):
    """The standard error shape, with at most ``MAX_LISTED_ERRORS`` errors listed."""

    def get_errors(self) -> list[Error]:
        return errors_listed(self.exc.detail)


# Errors that teach (SPEC §7): what to send instead. The schema says the same
# (tutor.web.openapi.ERROR_DESCRIPTIONS).
EXPECTED_AUTHORIZATION = "Authorization: Token <key>"
EXPECTED_CONTENT_TYPE = "Content-Type: application/json"
# A first word this short, of letters only, is a scheme ("Bearer", "Basic"),
# safe to name; anything else may be the key itself and is never echoed.
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,19}")


def _not_authenticated(request, exc: exceptions.NotAuthenticated) -> exceptions.APIException:
    """A request that sent an Authorization header we do not read (another
    scheme, or a bare key) is told the scheme we expect."""
    header = (request.META.get("HTTP_AUTHORIZATION", "") if request is not None else "").strip()
    if not header:
        return exc
    words = header.split()
    if len(words) >= 2 and _SCHEME.fullmatch(words[0]):
        sent = f'the "{words[0]}" scheme'
    else:
        sent = "a header without a scheme"
    return exceptions.NotAuthenticated(
        f"Authentication credentials were not provided: the Authorization header uses {sent}; "
        f"send `{EXPECTED_AUTHORIZATION}`."
    )


def _unsupported_media_type(request, exc: exceptions.UnsupportedMediaType) -> exceptions.APIException:
    sent = (request.content_type if request is not None and request.content_type else "none")[:100]
    return exceptions.UnsupportedMediaType(
        sent, detail=f'Unsupported media type "{sent}": send the body as JSON with `{EXPECTED_CONTENT_TYPE}`.'
    )


class ExceptionHandler(StandardizedExceptionHandler):
    """The standard handler, plus the domain errors; a dependency outage we
    answer with a 503 on purpose (the model is down) is logged as a warning
    with its internal detail, not reported as a server error."""

    def convert_known_exceptions(self, exc: Exception) -> Exception:
        if isinstance(exc, RequestDataTooBig):
            # Django refuses a body over DATA_UPLOAD_MAX_MEMORY_SIZE when DRF
            # reads it: the API's 413, not a 500 (SPEC §2, §7).
            exc = PayloadTooLarge(f"the request body is over {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes")
        elif isinstance(exc, SuspiciousOperation):
            # Django's other request guards (too many query parameters, form
            # fields or files): a 400 with one log line, never a 500 (tutor.web.guards).
            request = self.context.get("request")
            log_refusal(getattr(request, "_request", request), exc)
            _, code, detail = refusal_detail(exc)
            exc = _DomainAPIException(InvalidInput(detail, code=code))
        if isinstance(exc, DomainError):
            return as_api_exception(exc)
        if isinstance(exc, exceptions.NotAuthenticated):
            exc = _not_authenticated(self.context.get("request"), exc)
        if isinstance(exc, exceptions.UnsupportedMediaType):
            exc = _unsupported_media_type(self.context.get("request"), exc)
        return super().convert_known_exceptions(exc)

    def report_exception(self, exc: exceptions.APIException, response) -> None:
        if isinstance(self.exc, DomainError) and self.exc.status_code == status.HTTP_503_SERVICE_UNAVAILABLE:
            log.warning("503 %s: %s", self.exc.code, self.exc.message)
            return
        super().report_exception(exc, response)
