"""The one request body parser of the API (SPEC §7 transport rules).

JSON only: form-encoded and multipart bodies find no parser and are a 415.
Before anything recurses into the body it is bounded:

- size: at most ``DATA_UPLOAD_MAX_MEMORY_SIZE`` bytes (413 above);
- nesting: deeper than ``JSON_MAX_DEPTH`` levels is a 400, found by a flat
  scan over the brackets outside strings -- the JSON decoder recurses per
  level, and ~1000 levels (a 2 KB body) would end in a RecursionError;
- text: a NUL or a lone surrogate in any key or value is a 400 naming the
  field. Neither can be stored (PostgreSQL refuses ``\\u0000`` in text and
  jsonb; a lone surrogate cannot be encoded as UTF-8) nor is ever needed.
"""

from __future__ import annotations

import codecs
import json
import re

from django.conf import settings
from rest_framework import exceptions, parsers

JSON_MAX_DEPTH = 32  # SPEC §7: "nesting deeper than 32 levels → 400"

# A string's opening quote or a bracket; and the rest of a string after its opening quote.
_QUOTE_OR_BRACKET = re.compile(r'["\[\]{}]')
_STRING_REST = re.compile(r'(?:[^"\\]++|\\.)*+"', re.DOTALL)
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")


def nesting_exceeds(text: str, limit: int) -> bool:
    """Whether the JSON text nests arrays/objects deeper than ``limit``.
    Brackets inside strings do not count. One pass: a string is skipped
    from its opening quote to its closing one, and a string that never
    closes ends the scan (the text is no JSON; the decoder says so) --
    blanking strings with a pattern first tried every quote of an unclosed
    string to the end of the body (64 KB of escaped quotes took 10 s)."""
    depth, position = 0, 0
    while (match := _QUOTE_OR_BRACKET.search(text, position)) is not None:
        found = match.group()
        if found == '"':
            rest = _STRING_REST.match(text, match.end())
            if rest is None:
                return False
            position = rest.end()
            continue
        position = match.end()
        if found in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def unstorable_text(value) -> tuple[str, str] | None:
    """(field path, problem) of the first key or string value holding a NUL
    or a lone surrogate, walking without recursion; None when there is none.
    The path names the key's parent for a bad key (the key itself cannot be
    shown) and the value's own path for a bad value."""
    stack: list[tuple[object, str]] = [(value, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if _UNSTORABLE.search(item):
                return path, _problem(item)
        elif isinstance(item, dict):
            for key, child in item.items():
                if _UNSTORABLE.search(key):
                    return path, "a key " + _problem(key)
                stack.append((child, f"{path}.{key}" if path else key))
        elif isinstance(item, list):
            stack.extend((child, f"{path}.{i}" if path else str(i)) for i, child in enumerate(item))
    return None


def _problem(text: str) -> str:
    return "contains a NUL character" if "\x00" in text else "contains a lone surrogate character"


class StrictJSONParser(parsers.JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        parser_context = parser_context or {}
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        # DRF hands JSON parsers ``request.body``, where Django already refused
        # a larger body (RequestDataTooBig, a 413 in tutor.kernel.errors); the bound
        # here holds whatever the stream is.
        raw = stream.read(limit + 1)
        if len(raw) > limit:
            # Imported here: tutor.kernel.errors imports DRF's views, which load this parser.
            from tutor.kernel.errors import PayloadTooLarge

            raise PayloadTooLarge(f"the request body is over {limit} bytes")
        encoding = parser_context.get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = codecs.decode(raw, encoding)
        except (LookupError, UnicodeDecodeError) as exc:
            raise exceptions.ParseError(f"the body is not {encoding} text: {exc}") from None
        if nesting_exceeds(text, JSON_MAX_DEPTH):
            raise exceptions.ParseError(f"JSON nested deeper than {JSON_MAX_DEPTH} levels")
        try:
            data = json.loads(text, parse_constant=self._refuse_constant)
        except ValueError as exc:
            raise exceptions.ParseError(f"JSON parse error - {exc}") from None
        found = unstorable_text(data)
        if found is not None:
            path, problem = found
            code = "null_characters_not_allowed" if "NUL" in problem else "surrogate_characters_not_allowed"
            raise exceptions.ValidationError(
                {path or "non_field_errors": [exceptions.ErrorDetail(f"this field {problem}", code=code)]}
            )
        return data

    @staticmethod
    def _refuse_constant(name: str):
        raise ValueError(f"{name} is not valid JSON")
