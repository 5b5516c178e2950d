"""A request for a host outside ``ALLOWED_HOSTS`` gets the API's error shape
(SPEC §7: JSON, DEBUG or not).

Django refuses such a request where a middleware first reads the host; under
DEBUG its answer is the HTML debug page, with the settings and the request
laid out. Checked here, before any other middleware reads it, the refusal is
the same 400 as without DEBUG (``tutor.web.handlers.bad_request``), logged to
Django's own security logger as Django logs it.
"""

from __future__ import annotations

import logging

from django.core.exceptions import DisallowedHost

from tutor.web.handlers import bad_request

security_log = logging.getLogger("django.security.DisallowedHost")


class AllowedHostMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        try:
            request.get_host()
        except DisallowedHost as exc:
            security_log.error(str(exc), extra={"status_code": 400, "request": request})
            return bad_request(request, exc)
        return self.get_response(request)
