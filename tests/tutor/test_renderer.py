"""The API's JSON renderer writes what DRF's JSONRenderer writes (tutor.web.renderers)."""

from __future__ import annotations

import datetime
import decimal
import json
import uuid
from collections import OrderedDict
from typing import NamedTuple

import pytest
from django.db import models
from django.http import QueryDict
from django.utils.safestring import mark_safe
from django.utils.translation import gettext_lazy
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.serializer_helpers import ReturnDict, ReturnList

from tests.factories import make_submission
from tests.tutor.test_context import open_session, send
from tutor.web.renderers import FastJSONRenderer

FAST, DRF = FastJSONRenderer(), JSONRenderer()

# Any text a body can carry: control characters, quotes, backslashes, the two
# separators DRF escapes, characters outside the BMP (no lone surrogates).
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=40) | st.sampled_from(
    ["\u2028", "a\u2029b", '"\\/', "\x00\x1f\x7f", "\U0001f600 \u4e2d\u6587", "</script>"]
)
# orjson writes 64-bit integers; the rest goes to DRF's renderer.
BEYOND_64_BITS = st.sampled_from([2**64, -(2**63) - 1, 10**30])
INTEGERS = st.integers(min_value=-(2**63), max_value=2**64 - 1) | BEYOND_64_BITS
SCALARS = st.none() | st.booleans() | INTEGERS | TEXT
KEYS = TEXT | st.integers(min_value=-1000, max_value=1000) | st.booleans() | st.none()


def documents(scalars):
    return st.recursive(
        scalars,
        lambda children: (
            st.lists(children, max_size=5)
            | st.tuples(children, children)
            | st.dictionaries(KEYS, children, max_size=5)
        ),
        max_leaves=30,
    )


@settings(max_examples=300, deadline=None)
@given(documents(SCALARS))
def test_same_bytes_as_drf_for_any_document_without_floats(document):
    assert FAST.render(document) == DRF.render(document)


@settings(max_examples=200, deadline=None)
@given(documents(SCALARS | st.floats(allow_nan=False, allow_infinity=False)))
def test_floats_are_the_same_numbers(document):
    if document is None:  # no body at all, as DRF renders it
        assert FAST.render(document) == DRF.render(document) == b""
        return
    assert json.loads(FAST.render(document)) == json.loads(DRF.render(document))


def test_types_json_does_not_know_are_written_by_drfs_encoder():
    moment = datetime.datetime(2026, 12, 4, 1, 2, 3, 456789, tzinfo=datetime.UTC)
    document = {
        "at": moment,
        "local": moment.astimezone(datetime.timezone(datetime.timedelta(hours=8))),
        "naive": moment.replace(tzinfo=None),
        "day": moment.date(),
        "time": datetime.time(9, 30),
        "took": datetime.timedelta(seconds=90),
        "price": decimal.Decimal("12.50"),
        "id": uuid.UUID(int=7),
        "label": gettext_lazy("Submissions"),
        "raw": b"bytes",
        "ids": {uuid.UUID(int=1), uuid.UUID(int=1)},
    }
    assert FAST.render(document) == DRF.render(document)
    assert json.loads(FAST.render(document))["at"] == "2026-12-04T01:02:03.456789Z"


def test_what_orjson_refuses_is_drfs_to_render_or_to_refuse():
    deep = []
    for _ in range(300):  # deeper than orjson's limit
        deep = [deep]
    assert FAST.render(deep) == DRF.render(deep)
    with pytest.raises(UnicodeEncodeError):  # a lone surrogate cannot be UTF-8, as DRF says
        FAST.render({"text": "\ud800"})
    with pytest.raises(TypeError):
        FAST.render({"thing": object()})


def test_indented_rendering_is_drfs():
    document = {"a": [1, {"b": "c"}], "d": "\u2028"}
    media_type = "application/json; indent=2"
    assert FAST.render(document, media_type) == DRF.render(document, media_type)
    assert b"\n  " in FAST.render(document, media_type)
    assert FAST.render(None) == b""


def test_the_api_answers_with_it_and_its_bodies_are_drfs(student, student_client, task):
    """Real responses -- a tutor context with a submission's review, a sent
    message, a page of a list, an error -- are the bytes DRF's renderer
    writes for the same data."""
    make_submission(student, task)
    session_id = open_session(student_client, task)
    responses = [
        student_client.get("/api/tutor/context/", {"task": task.pk, "message": "why \u2028 fail?"}),
        send(student_client, session_id, "how do I test the empty input? \U0001f600"),
        student_client.get("/api/submissions/"),
        student_client.get("/api/courses/"),
        student_client.post("/api/submissions/", {"task": "nope"}, format="json"),
    ]
    assert [r.status_code for r in responses] == [200, 201, 200, 200, 400]
    for response in responses:
        assert isinstance(response.accepted_renderer, FastJSONRenderer)
        assert response.content == DRF.render(response.data), response.request["PATH_INFO"]


class Level(models.IntegerChoices):
    LOW = 1, "low"


class Colour(models.TextChoices):
    RED = "red", "Red"


class Point(NamedTuple):
    x: int
    y: int


def test_subclasses_of_json_types_are_written_as_json_dumps_writes_them():
    ordered = OrderedDict(a=1, b=2)
    ordered.move_to_end("a")
    document = {
        "choices": [Colour.RED, Level.LOW, {Colour.RED: Level.LOW}],
        "query": QueryDict("a=1&a=2&b=3"),
        "ordered": ordered,
        "serialized": ReturnDict({"id": 1}, serializer=None),
        "page": ReturnList([{"id": 1}], serializer=None),
        "point": Point(1, 2),
        "safe": mark_safe("<b>"),
    }
    assert FAST.render(document) == DRF.render(document)
    assert json.loads(FAST.render(document))["query"] == {"a": "2", "b": "3"}


def test_a_generator_is_read_once_when_drf_renders_the_rest():
    def numbers():
        yield from (1, 2, 3)

    rendered = FAST.render({"numbers": numbers(), "big": 2**64})  # orjson refuses the big integer
    assert rendered == DRF.render({"numbers": numbers(), "big": 2**64})
    assert json.loads(rendered)["numbers"] == [1, 2, 3]


def test_a_float_drf_refuses_is_written_as_null():
    with pytest.raises(ValueError):
        DRF.render({"score": float("nan")})
    assert json.loads(FAST.render({"score": float("nan"), "top": float("inf")})) == {
        "score": None,
        "top": None,
    }


def _routed_views(patterns=None):
    """Every view class the URLconf routes to (DRF views, viewsets, Django views)."""
    from django.urls import URLPattern, URLResolver, get_resolver

    for entry in get_resolver().url_patterns if patterns is None else patterns:
        if isinstance(entry, URLResolver):
            yield from _routed_views(entry.url_patterns)
        elif isinstance(entry, URLPattern):
            view = getattr(entry.callback, "cls", None) or getattr(entry.callback, "view_class", None)
            if view is not None:
                yield entry.pattern, view


OWN_APPS = {"tutor", "feedback", "corrections", "lessons"}


def test_every_routed_api_view_renders_its_json_with_the_apis_renderer():
    """One JSON renderer for the whole API: a view that names DRF's own
    renderer (as the LTI views did) would answer in DRF's slower way, and
    with another renderer's differences."""
    from drf_spectacular.views import SpectacularAPIView
    from rest_framework.views import APIView

    json_renderers = {}
    for pattern, view in _routed_views():
        if not issubclass(view, APIView) or view.__module__.split(".")[0] not in OWN_APPS:
            continue
        if issubclass(view, SpectacularAPIView):
            continue  # the OpenAPI document in JSON is drf-spectacular's rendering (its errors are ours)
        for renderer in view.renderer_classes:
            if renderer.media_type == "application/json":
                json_renderers[f"{view.__module__}.{view.__name__} ({pattern})"] = renderer
    assert any("tutor.lti" in name for name in json_renderers)  # the LTI views are among them
    assert {name: r for name, r in json_renderers.items() if not issubclass(r, FastJSONRenderer)} == {}
