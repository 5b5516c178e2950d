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
