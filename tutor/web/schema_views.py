"""The OpenAPI document and its Swagger UI page (SPEC §7, §11).

Apart from ``tutor.web.openapi``, which drf-spectacular's settings name: its
views import those settings.
"""

from __future__ import annotations

from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.settings import api_settings


class JsonErrorsMixin:
    """An error of a view whose answer is no JSON -- the YAML document, the
    Swagger UI page -- in the API's JSON error shape (SPEC §7), not rendered
    as YAML or as an HTML "405 Method Not Allowed"."""

    def finalize_response(self, request, response, *args, **kwargs):
        response = super().finalize_response(request, response, *args, **kwargs)
        if response.status_code >= 400:
            renderer = api_settings.DEFAULT_RENDERER_CLASSES[0]()
            response.accepted_renderer = renderer
            response.accepted_media_type = renderer.media_type
        return response


class SchemaView(JsonErrorsMixin, SpectacularAPIView):
    """``/api/schema/``: the OpenAPI document, YAML (``?format=json``: JSON)."""


class DocsView(JsonErrorsMixin, SpectacularSwaggerView):
    """``/api/docs/``: Swagger UI. GET and HEAD only: an OPTIONS request would
    make DRF render the page's metadata through a template the view does not
    name."""

    http_method_names = ["get", "head"]
