"""The API's JSON renderer (SPEC §7: JSON only; §10: the hot path's cost):
DRF's output, written by orjson (``json.dumps`` was about a tenth of the tutor
context's request). Details: docs/architecture.md, JSON with orjson.
"""

from __future__ import annotations

import orjson
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.encoders import JSONEncoder

# Types orjson would write in its own form, not DRF's: passed to the default.
_OPTIONS = (
    orjson.OPT_NON_STR_KEYS  # an int key becomes "1", as json.dumps writes it
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)
_DRF_DEFAULT = JSONEncoder().default

# Line and paragraph separators, escaped as DRF escapes them (JavaScript strings cannot hold them raw).
_LINE_SEPARATOR, _PARAGRAPH_SEPARATOR = "\u2028".encode(), "\u2029".encode()


def _as_json_dumps_writes(obj):
    """A subclass of a JSON type as the C encoder of ``json.dumps`` reads it;
    anything else by DRF's encoder."""
    if isinstance(obj, str):
        return str.__str__(obj)
    if isinstance(obj, int):
        return int.__int__(obj)
    if isinstance(obj, dict):
        return dict(obj.items())
    if isinstance(obj, list):
        return list.copy(obj)
    return _DRF_DEFAULT(obj)


class FastJSONRenderer(JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        if not (self.compact and self.strict and not self.ensure_ascii) or self.get_indent(
            accepted_media_type, renderer_context or {}
        ):
            return super().render(data, accepted_media_type, renderer_context)
        converted: dict[int, tuple] = {}  # id → (the object, kept alive; what it became)

        def default(obj):
            found = converted.get(id(obj))
            if found is None:
                found = converted[id(obj)] = (obj, _as_json_dumps_writes(obj))
            return found[1]

        try:
            rendered = orjson.dumps(data, default=default, option=_OPTIONS)
        except orjson.JSONEncodeError:
            return self._drf_render(data, accepted_media_type, renderer_context, converted)
        if b"\xe2\x80" in rendered:  # the first two bytes of both separators
            rendered = rendered.replace(_LINE_SEPARATOR, b"\\u2028").replace(_PARAGRAPH_SEPARATOR, b"\\u2029")
        return rendered

    def _drf_render(self, data, accepted_media_type, renderer_context, converted: dict):
        base = self.encoder_class

        class Remembering(base):
            def default(self, obj):
                found = converted.get(id(obj))
                return found[1] if found is not None else super().default(obj)

        self.encoder_class = Remembering  # this instance renders this response only
        try:
            return super().render(data, accepted_media_type, renderer_context)
        finally:
            self.encoder_class = base
