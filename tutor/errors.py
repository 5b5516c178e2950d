"""Domain errors mapped to 4xx/5xx with a message a person can act on (SPEC §7, §11)."""

import logging

from django.db import models
from drf_standardized_errors.handler import ExceptionHandler as StandardizedExceptionHandler
from rest_framework import status
from rest_framework.exceptions import APIException

log = logging.getLogger(__name__)


class Conflict(APIException):
    status_code = status.HTTP_409_CONFLICT
    default_detail = "The request conflicts with the current state."
    default_code = "conflict"


class PayloadTooLarge(APIException):
    status_code = status.HTTP_413_REQUEST_ENTITY_TOO_LARGE
    default_detail = "The request body is too large."
    default_code = "payload_too_large"


class ServiceUnavailable(APIException):
    status_code = status.HTTP_503_SERVICE_UNAVAILABLE
    default_detail = "A dependency is unavailable; try again later."
    default_code = "service_unavailable"


class ErrorCode409Enum(models.TextChoices):
    CONFLICT = "conflict"


class ErrorCode413Enum(models.TextChoices):
    PAYLOAD_TOO_LARGE = "payload_too_large"


class ErrorCode503Enum(models.TextChoices):
    SERVICE_UNAVAILABLE = "service_unavailable"
    MODEL_UNAVAILABLE = "model_unavailable"


class ExceptionHandler(StandardizedExceptionHandler):
    """The standard handler, except that a dependency outage we answer with a
    503 on purpose (the model is down) is logged as a warning, not reported
    as a server error with a traceback."""

    def report_exception(self, exc: APIException, response) -> None:
        if isinstance(exc, ServiceUnavailable):
            log.warning("%s: %s", response.status_code, exc.detail)
            return
        super().report_exception(exc, response)
