"""A JSON column written by orjson (SPEC §10: every tutor turn writes a few
kilobytes of JSON -- the model request, the recall trace, the reply's
context meta).

Django's ``JSONField`` encodes with the standard library's ``json.dumps``:
measured here, a recall trace's lines (47 small objects) took 85 µs and a
model request of 24 KB 41 µs, against 8 and 9 µs with orjson. The stored
JSON is the same document -- compact, and UTF-8 rather than ``\\u`` escapes,
which neither database minds; reading, lookups and the admin are Django's.

What orjson does not encode itself goes through ``DjangoJSONEncoder``
(and what it refuses, through ``json.dumps``: ``dumps``)
(``Decimal``, ``Promise``, ``timedelta``), dictionary keys that are not
strings become strings as ``json.dumps`` makes them, and a float that is no
JSON number (NaN, infinity), which ``json.dumps`` wrote as an invalid
``NaN`` that PostgreSQL refuses, is written ``null``.
"""

from __future__ import annotations

import json

import orjson
from django.core.serializers.json import DjangoJSONEncoder
from django.db import models

_OPTIONS = orjson.OPT_NON_STR_KEYS
_FALLBACK = DjangoJSONEncoder()


def dumps(value) -> bytes:
    """``value`` as JSON (UTF-8 bytes). What orjson refuses -- an integer
    beyond 64 bits, nesting deeper than it follows (a model provider's reply
    is stored as it came) -- is written by ``json.dumps``, as Django's
    ``JSONField`` writes everything."""
    try:
        return orjson.dumps(value, default=_FALLBACK.default, option=_OPTIONS)
    except orjson.JSONEncodeError:
        return json.dumps(value, cls=DjangoJSONEncoder, ensure_ascii=False, separators=(",", ":")).encode()


class CompactJSONField(models.JSONField):
    """``models.JSONField``, encoded by orjson (module docstring): Django's
    ``get_db_prep_value`` with orjson in place of ``adapt_json_value``'s
    ``json.dumps`` (``encoder`` is not used)."""

    def get_db_prep_value(self, value, connection, prepared=False):
        if not prepared:
            value = self.get_prep_value(value)
        if connection.vendor == "postgresql":
            from psycopg.types.json import Jsonb

            return Jsonb(value, dumps=dumps)
        return dumps(value).decode()
