"""Framing by the LMS (SPEC §12): a tool launched inside an LMS iframe must be
allowed to render there. With ``LTI_FRAME_ANCESTORS`` set (the LMS origins),
every response carries ``Content-Security-Policy: frame-ancestors 'self' …``
and Django's ``X-Frame-Options: DENY`` is dropped -- browsers that know CSP
obey frame-ancestors, and the origins named there are the only framers.
Unset, nothing changes and X-Frame-Options keeps refusing every frame.
"""

from __future__ import annotations

from django.conf import settings


class FrameAncestorsMiddleware:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        origins = settings.LTI_FRAME_ANCESTORS
        if origins and "Content-Security-Policy" not in response:
            response["Content-Security-Policy"] = "frame-ancestors 'self' " + " ".join(origins)
            # Listed after XFrameOptionsMiddleware, so this runs first on the way
            # out and the exemption makes that middleware skip the header.
            response.xframe_options_exempt = True
        return response
