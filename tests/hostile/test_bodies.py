"""Hostile request bodies on every JSON operation (SPEC §7): nesting around
the limit, NUL and lone surrogates in every key and value, wrong content
types, wrong types, oversize and malformed bodies.

Every POST operation of the OpenAPI document is covered (an operation other
apps add later is covered too); the bodies a real client sends come from
``valid_bodies``, so that each hostile variant goes as deep into the view as
a real one would.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from django.conf import settings
from drf_spectacular.generators import SchemaGenerator

from tests.hostile.conftest import (
    LMS_BROWSER_PATHS,
    assert_refused,
    random_id,
    row_counts,
    valid_bodies,
    wsgi_call,
)
from tutor.web.parsers import JSON_MAX_DEPTH

ROOT = Path(__file__).resolve().parents[2]


def post_operations() -> list[str]:
    """Every JSON POST operation of the OpenAPI document."""
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return sorted(
        path
        for path, operations in schema["paths"].items()
        if "post" in operations and path not in LMS_BROWSER_PATHS
    )


def token_for(world, who: str) -> str:
    return world.token(who)


def nested(depth: int) -> str:
    """A JSON value nested ``depth`` levels deep: [[...[1]...]]."""
    return "[" * depth + "1" + "]" * depth


@dataclass
class Operation:
    path: str
    body: dict
    token: str
    known: bool  # has a body of valid_bodies; else {} and only the generic promises hold


@pytest.fixture
def operations(world) -> list[Operation]:
    """Every POST operation of the OpenAPI document, with the body of
    valid_bodies where there is one."""
    bodies = valid_bodies(world)
    found = []
    for path in post_operations():
        body, who = bodies.get(("POST", path), ({}, "student"))
        filled = re.sub(r"\{[a-z_]+\}", lambda m: random_id(), world.path(path))
        found.append(Operation(filled, body, token_for(world, who), ("POST", path) in bodies))
    return found


def known(operations: list[Operation]) -> list[Operation]:
    return [op for op in operations if op.known]


def check(response, before, op: Operation, statuses) -> dict | None:
    """The promise of SPEC §7 for any operation; for one with a known body,
    also the exact refusal."""
    if op.known:
        return assert_refused(response, before, statuses=statuses)
    assert response.status < 500, (op.path, response.body[:300])
    assert response.content_type.startswith("application/json"), (op.path, response.headers)
    return None


def test_every_post_operation_has_a_valid_body_here(world):
    # "Every field of every POST body" holds only for operations with a body
    # in tests/hostile/conftest.py valid_bodies: a new operation gets one there.
    missing = sorted(set(post_operations()) - {path for _, path in valid_bodies(world)})
    assert missing == [], f"add a body for {missing} to valid_bodies in tests/hostile/conftest.py"


def test_every_post_operation_accepts_its_valid_body(world, operations):
    # The control for everything below: the bodies are right, so a refusal
    # below is about the one thing each case changes.
    for op in known(operations):
        response = wsgi_call("POST", op.path, body=json.dumps(op.body).encode(), token=op.token)
        assert response.status in (200, 201), (op.path, response.status, response.body[:300])


@pytest.mark.parametrize(
    "depth, refused_by_parser",
    [(JSON_MAX_DEPTH - 2, False), (JSON_MAX_DEPTH - 1, False), (JSON_MAX_DEPTH + 1, True), (950, True)],
)
def test_nesting_at_and_beyond_the_limit_is_a_400_never_a_recursion_error(
    world, operations, depth, refused_by_parser
):
    for op in operations:
        # The whole body is one level; the nested value adds ``depth`` more.
        text = json.dumps({**op.body, "deep": "DEEP"}).replace('"DEEP"', nested(depth))
        before = row_counts()

        response = wsgi_call("POST", op.path, body=text.encode(), token=op.token)

        if refused_by_parser:
            refused = check(response, before, op, {400})
            if refused is not None:
                assert refused["errors"][0]["code"] == "parse_error", (op.path, refused)
                assert f"deeper than {JSON_MAX_DEPTH} levels" in refused["errors"][0]["detail"]
        else:
            # Within the limit the body is parsed; the views then accept or
            # refuse the unknown key, never with a 5xx.
            assert response.status < 500, (op.path, response.body[:300])


def test_a_2kb_body_nested_1000_levels_is_a_400(world, operations):
    for op in operations:
        before = row_counts()

        response = wsgi_call("POST", op.path, body=nested(1000).encode(), token=op.token)

        check(response, before, op, {400})


def test_brackets_inside_strings_do_not_count_as_nesting(world):
    text = json.dumps({"content": "[" * 200 + '"{' * 50})
    path = world.path("/api/tutor/sessions/{session_id}/messages/")

    response = wsgi_call("POST", path, body=text.encode(), token=world.student_token)

    assert response.status == 201, response.body[:300]


# A string that never closes, made of escaped quotes: blanking strings with a
# pattern tried every quote of it to the end of the body (64 KB took 10 s).
UNCLOSED_ESCAPES = '{"content": "' + '\\"' * 30000


def test_an_unclosed_string_of_escaped_quotes_is_refused_at_once():
    """Found by an outside review. In a process of its own: a regular
    expression holds the interpreter until it returns, so only a process
    can be given up on; the generous bound only catches a hang."""
    code = (
        "import io, sys, django; django.setup()\n"
        "from rest_framework.exceptions import ParseError\n"
        "from tutor.web.parsers import StrictJSONParser\n"
        "try:\n"
        "    StrictJSONParser().parse(io.BytesIO(sys.stdin.buffer.read()))\n"
        "except ParseError as exc:\n"
        "    print(exc.detail)\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    done = subprocess.run(
        [sys.executable, "-c", code], input=UNCLOSED_ESCAPES.encode(), capture_output=True,
        cwd=ROOT, env=env, timeout=5, check=True,
    )  # fmt: skip

    assert done.stdout.decode().startswith("JSON parse error"), done.stdout


def test_an_unclosed_string_of_escaped_quotes_is_a_400_over_http(world):
    path = world.path("/api/tutor/sessions/{session_id}/messages/")
    before = row_counts()

    response = wsgi_call("POST", path, body=UNCLOSED_ESCAPES.encode(), token=world.student_token)

    assert_refused(response, before, statuses={400})


def string_paths(value, path=()):
    """Every (path, kind) of a string value ("value") or key ("key") of a JSON value."""
    if isinstance(value, str):
        yield path, "value"
    elif isinstance(value, dict):
        for key, child in value.items():
            yield (*path, key), "key"
            yield from string_paths(child, (*path, key))
    elif isinstance(value, list):
        for i, child in enumerate(value):
            yield from string_paths(child, (*path, i))


def poisoned(body, path, kind: str, poison: str):
    """A copy of ``body`` with ``poison`` appended to the value or key at ``path``."""
    body = json.loads(json.dumps(body))
    parent = body
    for step in path[:-1]:
        parent = parent[step]
    last = path[-1]
    if kind == "key":
        parent[last + poison] = parent.pop(last)
    else:
        parent[last] = parent[last] + poison
    return body


@pytest.mark.parametrize(
    "poison", ["\x00", "\ud800", "\udfff", "a\udc00b"], ids=["nul", "high", "low", "low-inside"]
)
def test_nul_or_lone_surrogate_in_any_key_or_value_is_a_400(world, operations, poison):
    cases = 0
    for op in known(operations):
        for where, kind in string_paths(op.body):
            before = row_counts()
            # ensure_ascii: the body carries the escape (\\ud800), as a client's JSON would.
            text = json.dumps(poisoned(op.body, where, kind, poison), ensure_ascii=True)

            response = wsgi_call("POST", op.path, body=text.encode(), token=op.token)

            errors = assert_refused(response, before, statuses={400})["errors"]
            assert errors[0]["code"] in ("null_characters_not_allowed", "surrogate_characters_not_allowed")
            cases += 1
    assert cases >= 20  # every field of every body: evidence alone has ten keys and values


@pytest.mark.parametrize(
    "content_type, body",
    [
        ("application/x-www-form-urlencoded", b"task=1&evidence=x"),
        (
            "multipart/form-data; boundary=XX",
            b'--XX\r\nContent-Disposition: form-data; name="task"\r\n\r\n1\r\n--XX--\r\n',
        ),
        ("text/plain", b'{"task": "1"}'),
        ("application/xml", b"<task>1</task>"),
        ("text/json", b'{"task": "1"}'),
    ],
    ids=["form", "multipart", "text", "xml", "text-json"],
)
def test_a_body_that_is_not_json_is_a_415(world, operations, content_type, body):
    for op in operations:
        before = row_counts()

        response = wsgi_call("POST", op.path, body=body, content_type=content_type, token=op.token)

        refused = check(response, before, op, {415})
        if refused is not None:
            assert refused["errors"][0]["code"] == "unsupported_media_type"


@pytest.mark.parametrize("text", ["[]", '"a string"', "1", "null", "true", "[{}]"])
def test_a_body_that_is_not_an_object_is_a_400(world, operations, text):
    for op in operations:
        before = row_counts()

        response = wsgi_call("POST", op.path, body=text.encode(), token=op.token)

        check(response, before, op, {400})


@pytest.mark.parametrize(
    "wrong", [{"nested": "object"}, ["a", "list"], 12345, 1.5], ids=["object", "list", "int", "float"]
)
def test_a_field_of_the_wrong_type_is_a_400_on_that_field(world, operations, wrong):
    cases = 0
    for op in known(operations):
        for key, value in op.body.items():
            if isinstance(wrong, int | float) and isinstance(value, bool):
                continue  # 1 and 0 are DRF's booleans too
            if isinstance(wrong, list) and isinstance(value, list) and all(isinstance(v, str) for v in value):
                continue  # a list of strings is the right type (tags, symptoms)
            before = row_counts()

            response = wsgi_call(
                "POST", op.path, body=json.dumps({**op.body, key: wrong}).encode(), token=op.token
            )

            errors = assert_refused(response, before, statuses={400})["errors"]
            assert any(e["attr"] == key or (e["attr"] or "").startswith(f"{key}.") for e in errors), errors
            cases += 1
    assert cases >= 8  # every top-level field of every body but the booleans


@pytest.mark.parametrize(
    "raw",
    [b"{", b'{"task": }', b'{"a": NaN}', b'{"a": Infinity}', b"\xff\xfe{}", b'{"a": ' + b"1" * 5000 + b"}"],
    ids=["truncated", "missing-value", "nan", "infinity", "not-utf8", "huge-integer"],
)
def test_a_malformed_body_is_a_400_parse_error(world, operations, raw):
    for op in operations:
        before = row_counts()

        response = wsgi_call("POST", op.path, body=raw, token=op.token)

        refused = check(response, before, op, {400})
        if refused is not None:
            assert refused["errors"][0]["code"] == "parse_error"


def test_a_body_over_the_upload_limit_is_a_413(world, operations):
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    filler = json.dumps({"content": "x" * (limit + 1)}).encode()
    for op in operations:
        before = row_counts()

        response = wsgi_call("POST", op.path, body=filler, token=op.token)

        refused = check(response, before, op, {413})
        if refused is not None:
            assert refused["errors"][0]["code"] == "payload_too_large"


# What gunicorn hands over for a chunked body: the chunks decoded, no length,
# and its word that the input ends where the body does.
CHUNKED = {"CONTENT_LENGTH": None, "HTTP_TRANSFER_ENCODING": "chunked", "wsgi.input_terminated": True}


def test_a_chunked_body_is_read_to_its_end(world):
    body = json.dumps({"task": str(world.task.pk), "evidence": {"report": "streamed"}}).encode()

    response = wsgi_call("POST", "/api/submissions/", body=body, token=world.student_token, server=CHUNKED)

    assert response.status == 201, response.body[:300]
    assert response.json()["evidence"]["report"] == "streamed"


def test_a_chunked_body_over_the_upload_limit_is_a_413_read_no_further(world, operations):
    """A body without a length is read up to one byte past the limit, and no
    more: the 413 of a body with a length, and no unbounded buffer."""
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    filler = json.dumps({"content": "x" * (limit + 1000)}).encode()
    for op in operations:
        before = row_counts()

        response = wsgi_call("POST", op.path, body=filler, token=op.token, server=CHUNKED)

        refused = check(response, before, op, {413})
        if refused is not None:
            assert refused["errors"][0]["code"] == "payload_too_large"
        assert response.unread == len(filler) - (limit + 1), op.path


def test_evidence_with_a_nested_file_value_is_a_400_on_that_file(world):
    before = row_counts()
    body = {"task": str(world.task.pk), "evidence": {"files": {"a.py": {"nested": "dict"}}}}

    response = wsgi_call(
        "POST", "/api/submissions/", body=json.dumps(body).encode(), token=world.student_token
    )

    errors = assert_refused(response, before, statuses={400})["errors"]
    assert errors[0]["attr"] == "evidence.files.a.py"


@pytest.mark.parametrize("host", ["evil.example", "bad host"])
def test_a_refused_host_leaves_no_body_unread(world, host):
    """A request refused for its Host is answered before anything reads its
    body: the rest is drained, so a kept-alive connection stays usable."""
    body = json.dumps({"task": "x", "evidence": {"report": "r" * 5000}}).encode()

    response = wsgi_call("POST", "/api/submissions", body=body, headers={"Host": host})

    assert response.status == 400
    assert response.unread == 0
