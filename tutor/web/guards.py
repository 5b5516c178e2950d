"""Django's request guards answer 400 on every path (SPEC §7): 413 for a form
over ``DATA_UPLOAD_MAX_MEMORY_SIZE``, 400 otherwise, one warning line and no
traceback. Details: docs/architecture.md, Request guards.
"""

from __future__ import annotations

import logging

from django.conf import settings
from django.core.exceptions import (
    DisallowedHost,
    RequestDataTooBig,
    SuspiciousMultipartForm,
    SuspiciousOperation,
    TooManyFieldsSent,
    TooManyFilesSent,
)
from django.http import JsonResponse


def refusal_detail(exc: SuspiciousOperation) -> tuple[int, str, str]:
    """(status, code, detail) for ``exc``: what a client can act on, never the request's text."""
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return 413, "payload_too_large", f"The request body is over {limit} bytes."
    if isinstance(exc, TooManyFieldsSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
        return 400, "too_many_fields", f"The request has more than {limit} query parameters or form fields."
    if isinstance(exc, TooManyFilesSent):
        limit = settings.DATA_UPLOAD_MAX_NUMBER_FILES
        return 400, "too_many_files", f"The request has more than {limit} files."
    if isinstance(exc, SuspiciousMultipartForm):
        return 400, "bad_request", "The request body is not a readable form."
    if isinstance(exc, DisallowedHost):
        return 400, "bad_request", "Bad request."
    return 400, "bad_request", "The request was refused as malformed."


def log_refusal(request, exc: SuspiciousOperation) -> None:
    """One line on Django's security logger for ``exc``'s class, as Django
    names it, without the traceback."""
    status, _, _ = refusal_detail(exc)
    logging.getLogger(f"django.security.{type(exc).__name__}").warning(
        "%s", exc, extra={"status_code": status, "request": request}
    )


def refusal(request, exc: SuspiciousOperation) -> JsonResponse:
    status, code, detail = refusal_detail(exc)
    log_refusal(request, exc)
    return JsonResponse(
        {"type": "client_error", "errors": [{"code": code, "detail": detail, "attr": None}]}, status=status
    )


class RequestGuardMiddleware:
    """Before ``CsrfViewMiddleware``: reads the form of a POST the CSRF check
    would read (one parse either way; the form is kept on the request), so a
    refused form is answered here; a view that trips a guard is answered in
    ``process_exception``."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_view(self, request, view, args, kwargs):
        if request.method != "POST" or getattr(view, "csrf_exempt", False):
            return None
        try:
            request.POST  # noqa: B018 -- parsed here, as the CSRF check would
        except SuspiciousOperation as exc:
            return refusal(request, exc)
        return None

    def process_exception(self, request, exc):
        if isinstance(exc, SuspiciousOperation):
            return refusal(request, exc)
        return None
