"""The path converter of public ids (SPEC §7: public ids are UUIDs; a path
with anything else is the JSON 404).

Django's own ``uuid`` converter takes lower-case hex only, so a client that
writes a UUID in upper case -- as RFC 9562 allows, its hex digits being
case-insensitive on input -- got a 404 for an object it may read. This one
takes the hyphenated form in either case and hands the view a ``uuid.UUID``.
"""

from __future__ import annotations

import uuid

from django.urls import register_converter

_HEX = "[0-9a-fA-F]"


class PublicIdConverter:
    regex = f"{_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}"

    def to_python(self, value: str) -> uuid.UUID:
        return uuid.UUID(value)

    def to_url(self, value) -> str:
        return str(value)


PUBLIC_ID = "public_id"
register_converter(PublicIdConverter, PUBLIC_ID)
