"""JSON answers for requests that never reach a DRF view (SPEC §7)."""

from django.http import JsonResponse


def not_found(request, exception=None):
    return JsonResponse(
        {
            "type": "client_error",
            "errors": [{"code": "not_found", "detail": "Not found.", "attr": None}],
        },
        status=404,
    )


def server_error(request):
    return JsonResponse(
        {
            "type": "server_error",
            "errors": [{"code": "error", "detail": "A server error occurred.", "attr": None}],
        },
        status=500,
    )


def _error(status: int, code: str, detail: str) -> JsonResponse:
    return JsonResponse(
        {"type": "client_error", "errors": [{"code": code, "detail": detail, "attr": None}]}, status=status
    )


def bad_request(request, exception=None):
    """A request Django refuses before any view (e.g. a Host header outside
    ALLOWED_HOSTS): the one error shape, not Django's HTML page."""
    return _error(400, "bad_request", "Bad request.")


def csrf_failure(request, reason=""):
    """A session-authenticated write without its CSRF token. The API answers
    in its error shape; a browser page (admin, sign-in) keeps Django's own
    page, which tells a person what to do."""
    if request.path.startswith("/api/"):
        return _error(403, "permission_denied", f"CSRF check failed: {reason}")
    from django.views.csrf import csrf_failure as django_csrf_failure

    return django_csrf_failure(request, reason=reason)
