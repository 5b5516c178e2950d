"""Domain errors: one base class, mapped once for the API and once for
management commands (SPEC §7; STYLE "Writes and state").

A service raises a ``DomainError`` subclass carrying its HTTP status, a
machine-readable code and a message a person can act on; it never knows
whether a view, an admin action or a command called it. The API's exception
handler turns it into the one error shape (a field error when ``field`` is
set), and ``tutor.commands.DomainCommand`` turns it into exit status 1.
"""

from __future__ import annotations

import logging
from collections import deque

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.db import models
from drf_standardized_errors.formatter import ExceptionFormatter
from drf_standardized_errors.handler import ExceptionHandler as StandardizedExceptionHandler
from drf_standardized_errors.settings import package_settings
from drf_standardized_errors.types import Error
from rest_framework import exceptions, status

log = logging.getLogger(__name__)


class DomainError(Exception):
    """A refusal by the domain. ``field`` names the request field at fault
    (a dotted path such as ``criteria.2.rubric_id``), or None."""

    status_code = status.HTTP_400_BAD_REQUEST
    code = "invalid"
    default_message = "The request was refused."

    def __init__(self, message: str | None = None, *, field: str | None = None, code: str | None = None):
        super().__init__(message or self.default_message)
        self.field = field
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        return str(self)

    def public_message(self) -> str:
        """What a client is told; a subclass holding internal detail overrides it."""
        return self.message


class InvalidInput(DomainError):
    pass


class PermissionRefused(DomainError):
    status_code = status.HTTP_403_FORBIDDEN
    code = "permission_denied"
    default_message = "You may not do this."


class NotFound(DomainError):
    status_code = status.HTTP_404_NOT_FOUND
    code = "not_found"
    default_message = "Not found."


class Conflict(DomainError):
    status_code = status.HTTP_409_CONFLICT
    code = "conflict"
    default_message = "The request conflicts with the current state."


class PayloadTooLarge(DomainError):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    code = "payload_too_large"
    default_message = "The request body is too large."


class ServiceUnavailable(DomainError):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    code = "service_unavailable"
    default_message = "A dependency is unavailable; try again later."


class ErrorCode409Enum(models.TextChoices):
    CONFLICT = "conflict"


class ErrorCode413Enum(models.TextChoices):
    PAYLOAD_TOO_LARGE = "payload_too_large"


class ErrorCode503Enum(models.TextChoices):
    SERVICE_UNAVAILABLE = "service_unavailable"
    MODEL_UNAVAILABLE = "model_unavailable"


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


class ExceptionHandler(StandardizedExceptionHandler):
    """The standard handler, plus the domain errors; a dependency outage we
    answer with a 503 on purpose (the model is down) is logged as a warning
    with its internal detail, not reported as a server error."""

    def convert_known_exceptions(self, exc: Exception) -> Exception:
        if isinstance(exc, RequestDataTooBig):
            # Django refuses a body over DATA_UPLOAD_MAX_MEMORY_SIZE when DRF
            # reads it: the API's 413, not a 500 (SPEC §2, §7).
            exc = PayloadTooLarge(f"the request body is over {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes")
        if isinstance(exc, DomainError):
            return as_api_exception(exc)
        return super().convert_known_exceptions(exc)

    def report_exception(self, exc: exceptions.APIException, response) -> None:
        if isinstance(self.exc, DomainError) and self.exc.status_code == status.HTTP_503_SERVICE_UNAVAILABLE:
            log.warning("503 %s: %s", self.exc.code, self.exc.message)
            return
        super().report_exception(exc, response)
