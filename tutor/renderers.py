"""The API's JSON renderer (SPEC §7: JSON only; §10: the hot path's cost).

DRF's ``JSONRenderer`` with the compact, UTF-8, strict settings this API
uses spends most of a large response's rendering in ``json.dumps`` (the
tutor context's 24 KB body: about a tenth of the request). ``orjson``
writes the same text several times faster; this renderer hands it the data
and keeps DRF's output:

- the same bytes for strings, integers, booleans, null, lists and objects
  (compact separators, no ASCII escaping, U+2028 and U+2029 escaped);
- dates, times and every type ``orjson`` does not write itself (Decimal,
  lazy translations, querysets, ...) go through DRF's own encoder, so a
  datetime still reads ``...Z`` for UTC;
- what ``orjson`` refuses (an integer beyond 64 bits, nesting deeper than
  its limit, a lone surrogate) is rendered by DRF's renderer itself, with
  its result or its error;
- a float may be written in another notation of the same number
  (``1e16`` for DRF's ``1e+16``); a NaN or an infinity, which DRF's strict
  mode refuses with an error, is written as ``null``.

An indented rendering (``Accept: application/json; indent=4``) is DRF's.
"""

from __future__ import annotations

import orjson
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.encoders import JSONEncoder

# Types orjson would write in its own form, not DRF's: passed to ``_default``.
_OPTIONS = (
    orjson.OPT_NON_STR_KEYS  # an int key becomes "1", as json.dumps writes it
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
)
_DRF_DEFAULT = JSONEncoder().default

# Line and paragraph separators, escaped as DRF escapes them (JavaScript strings cannot hold them raw).
_LINE_SEPARATOR, _PARAGRAPH_SEPARATOR = "\u2028".encode(), "\u2029".encode()


class FastJSONRenderer(JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None):
        if data is None:
            return b""
        if not (self.compact and self.strict and not self.ensure_ascii) or self.get_indent(
            accepted_media_type, renderer_context or {}
        ):
            return super().render(data, accepted_media_type, renderer_context)
        try:
            rendered = orjson.dumps(data, default=_DRF_DEFAULT, option=_OPTIONS)
        except orjson.JSONEncodeError:
            return super().render(data, accepted_media_type, renderer_context)
        if b"\xe2\x80" in rendered:  # the first two bytes of both separators
            rendered = rendered.replace(_LINE_SEPARATOR, b"\\u2028").replace(_PARAGRAPH_SEPARATOR, b"\\u2029")
        return rendered
