"""Request bodies nobody read (SPEC §7 transport).

A request refused before its body is parsed -- 401 anonymous, 403, 404, 415,
429 -- leaves the body unread on the connection. The server then has to
drain it before the next request on a kept-alive connection, and gunicorn,
which already announced keep-alive, closes the connection instead when the
drain does not finish at once: the client's (or a reverse proxy's) next
request on it fails. Reading the rest of the body here, up to the upload
limit, keeps the connection usable.
"""

from __future__ import annotations

import logging

from django.conf import settings

log = logging.getLogger(__name__)

DRAIN_CHUNK = 64 * 1024


class DrainUnreadBodyMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        length = request.META.get("CONTENT_LENGTH") or ""
        unread = not getattr(request, "_read_started", False)
        if unread and length.isdigit() and 0 < int(length) <= settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
            try:
                while request.read(DRAIN_CHUNK):
                    continue
            except OSError:
                log.info("client went away before its body was read")  # nothing left to keep alive
        return response
