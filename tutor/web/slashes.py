"""Every path answers the same with or without its trailing slash (SPEC §7).

Django's APPEND_SLASH answers ``POST /api/submissions`` with a redirect
(which a client re-sends as a GET: the submission is lost) or, under DEBUG,
with an HTML 500. Instead, a path that does not resolve but whose other
spelling does (one slash more, or one less: ``/healthz/``) is served in place
as that path: same view, same answer, no redirect for any method. A path
that resolves neither way gets the API's JSON 404, DEBUG or not (Django's
DEBUG 404 is an HTML page).
"""

from __future__ import annotations

from django.urls import Resolver404, get_resolver

from tutor.web.handlers import not_found


def _resolves(path: str, urlconf) -> bool:
    try:
        get_resolver(urlconf).resolve(path)
    except Resolver404:
        return False
    return True


def other_spelling(path: str) -> str:
    return path[:-1] if path.endswith("/") and path != "/" else path + "/"


class TrailingSlashMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        urlconf = getattr(request, "urlconf", None)
        path = request.path_info
        if not _resolves(path, urlconf):
            other = other_spelling(path)
            if not _resolves(other, urlconf):
                return not_found(request)
            # Links built from the request (pagination's next/previous) name
            # the path as routed.
            request.path_info = other
            request.path = request.path[: len(request.path) - len(path)] + other
        return self.get_response(request)
