"""The language of staff pages (SPEC §8, turn 3): Django's locale choice --
the language cookie set on the desk, else the browser's Accept-Language --
for the admin only. The API and the student client keep their own rules
(the client translates itself; API messages stay in one language)."""

from __future__ import annotations

from django.conf import settings
from django.middleware.locale import LocaleMiddleware


class AdminLocaleMiddleware(LocaleMiddleware):
    def _is_admin(self, request) -> bool:
        return request.path_info.startswith(settings.ADMIN_URL_PREFIX)

    def process_request(self, request):
        if self._is_admin(request):
            super().process_request(request)

    def process_response(self, request, response):
        if self._is_admin(request):
            return super().process_response(request, response)
        return response
