"""Request bodies the application would otherwise not read (SPEC §7
transport): a chunked body, and the rest of a refused request's body, so the
kept-alive connection stays usable. Details: docs/architecture.md, Request guards.
"""

from __future__ import annotations

import logging
import tempfile

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


class ChunkedBodyApplication:
    """WSGI: a body without a length that the server says ends where the
    request does (``wsgi.input_terminated``: gunicorn has decoded the chunks)
    read up to ``DATA_UPLOAD_MAX_MEMORY_SIZE + 1`` bytes and passed on with
    its ``CONTENT_LENGTH``; a longer one is then refused as too large."""

    def __init__(self, application):
        self.application = application

    def __call__(self, environ, start_response):
        if (
            not environ.get("CONTENT_LENGTH")
            and environ.get("wsgi.input_terminated")
            and "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        ):
            body, length = _spooled(environ["wsgi.input"], settings.DATA_UPLOAD_MAX_MEMORY_SIZE + 1)
            environ = {**environ, "wsgi.input": body, "CONTENT_LENGTH": str(length)}
        return self.application(environ, start_response)


SPOOL_MEMORY = 256 * 1024  # a chunked body beyond this waits on disk until the view reads it


def _spooled(stream, limit: int):
    """Up to ``limit`` bytes of ``stream`` in a file -- in memory up to
    ``SPOOL_MEMORY``, on disk beyond -- rewound, and how many: a request that
    is refused (anonymous, throttled) before its body is read holds no more
    than that in memory, as one with a length holds none."""
    # Handed on as wsgi.input, not closed here: it goes with the request's
    # environ (a file on disk is unlinked from the start).
    spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_MEMORY)  # noqa: SIM115
    length = 0
    while length < limit:
        piece = stream.read(min(DRAIN_CHUNK, limit - length))
        if not piece:
            break
        spool.write(piece)
        length += len(piece)
    spool.seek(0)
    return spool, length
