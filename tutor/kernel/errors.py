"""Domain errors: one base class, mapped once for the API and once for
management commands (SPEC §7; STYLE "Writes and state").

A service raises a ``DomainError`` subclass carrying its HTTP status, a
machine-readable code and a message a person can act on; it never knows
whether a view, an admin action or a command called it. The API's exception
handler (``tutor.web.errors``) turns it into the one error shape (a field error when ``field`` is
set), and ``tutor.commands.DomainCommand`` turns it into exit status 1.
"""

from __future__ import annotations

from django.db import models
from rest_framework import status


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
    AI_NOTICE_REQUIRED = "ai_notice_required"


class ErrorCode413Enum(models.TextChoices):
    PAYLOAD_TOO_LARGE = "payload_too_large"


class ErrorCode503Enum(models.TextChoices):
    SERVICE_UNAVAILABLE = "service_unavailable"
    MODEL_UNAVAILABLE = "model_unavailable"
