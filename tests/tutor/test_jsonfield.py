"""The JSON columns a tutor turn writes, encoded by orjson (``tutor.kernel.jsonfield``):
the same documents ``models.JSONField`` stores, read and queried as before,
on the database the suite runs on."""

from __future__ import annotations

import datetime
import json
import math
import uuid
from decimal import Decimal

import pytest
from django.db import connection

from tutor.models import ModelCall

pytestmark = pytest.mark.django_db


def stored(**values) -> ModelCall:
    call = ModelCall.objects.create(purpose="tutor", correlation_id="c", model="m", **values)
    return ModelCall.objects.get(pk=call.pk)


def test_a_document_comes_back_as_json_dumps_would_have_stored_it():
    document = [
        {"role": "system", "content": 'Ünïcödé 北京 \u2028 "quoted" \\ and an emoji 🙂'},
        {"nested": {"list": [1, 2.5, -3, True, False, None], "empty": {}}, "big": 2**62},
    ]
    row = stored(request_messages=document, response_json={"choices": []})

    assert row.request_messages == json.loads(json.dumps(document)) == document
    assert row.response_json == {"choices": []}


def test_values_json_dumps_could_not_write_are_written_as_django_writes_them():
    moment = datetime.datetime(2026, 12, 6, 12, 0, 5, 123000, tzinfo=datetime.UTC)
    key = uuid.UUID(int=7)
    row = stored(
        request_messages={"when": moment, "id": key, "price": Decimal("1.50"), 3: "int key", "bad": math.nan},
        response_json=None,
    )

    assert row.request_messages == {
        "when": "2026-12-06T12:00:05.123000+00:00",
        "id": str(key),
        "price": "1.50",
        "3": "int key",  # json.dumps turns keys into strings too
        "bad": None,  # no JSON number: PostgreSQL refused json.dumps' NaN
    }
    assert row.response_json is None  # SQL NULL, as JSONField(null=True) stores None


def test_lookups_into_the_document_still_work():
    stored(request_messages=[{"role": "user", "content": "first"}], response_json={"id": "x", "n": 2})
    stored(request_messages=[], response_json={"id": "y", "n": 3})

    assert ModelCall.objects.filter(response_json__id="x").count() == 1
    assert ModelCall.objects.filter(response_json__n__gt=2).count() == 1
    assert ModelCall.objects.filter(request_messages__0__role="user").count() == 1


def test_the_stored_text_is_compact_utf8():
    call = stored(request_messages=[{"content": "北京"}])
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT request_messages FROM tutor_modelcall WHERE id = %s",
            [call.pk.hex if connection.vendor == "sqlite" else call.pk],
        )
        (text,) = cursor.fetchone()
    assert "北京" in text and "\\u" not in text


def test_what_orjson_refuses_is_written_as_json_dumps_writes_it():
    """A model provider's reply is stored as it came: an integer beyond 64
    bits or nesting deeper than orjson follows is still written (found by a
    review: a reply with such a number made the tutor turn a 500)."""
    deep = current = {}
    for _ in range(300):
        current["next"] = current = {}
    row = stored(request_messages=[{"n": 2**70}], response_json={"usage": {"tokens": -(2**80)}, "deep": deep})

    assert row.request_messages == [{"n": 2**70}]
    assert row.response_json["usage"] == {"tokens": -(2**80)}
    assert row.response_json["deep"] == deep
