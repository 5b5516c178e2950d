"""The language of staff pages (SPEC §8, turn 3): Django's locale choice --
the language cookie set on the desk, else the browser's Accept-Language --
for the admin only. The API and the student client keep their own rules
(the client translates itself; API messages stay in one language)."""

from __future__ import annotations

from django.conf import settings
from django.middleware.locale import LocaleMiddleware
from django.utils import translation


class AdminLocaleMiddleware(LocaleMiddleware):
    def _is_admin(self, request) -> bool:
        return request.path_info.startswith(settings.ADMIN_URL_PREFIX)

    def process_request(self, request):
        if self._is_admin(request):
            super().process_request(request)
        else:
            # A thread's language outlives its request: an admin page in
            # Chinese must not leave the next API answer in Chinese.
            translation.activate(settings.LANGUAGE_CODE)
            request.LANGUAGE_CODE = settings.LANGUAGE_CODE

    def process_response(self, request, response):
        if self._is_admin(request):
            return super().process_response(request, response)
        return response
