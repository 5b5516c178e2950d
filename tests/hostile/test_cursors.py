"""Forged pagination cursors (SPEC §7: a forged or malformed cursor → 400).

A cursor is base64 of ``o=<offset>&r=<reverse>&p=<position>``; the position
is a value of the integer sequence the list is ordered by. Each forgery used
to reach the database as ``submission_seq < 'abc'`` (a 500 on both
databases) or end as a 404.
"""

from __future__ import annotations

import base64
import json
from urllib.parse import urlencode, urlsplit

import pytest

from tests.hostile.conftest import assert_refused, row_counts, wsgi_call


def b64(text: str | bytes) -> str:
    raw = text.encode("latin-1") if isinstance(text, str) else text
    return base64.b64encode(raw).decode("ascii")


FORGED = [
    pytest.param(b64("p=abc"), id="position-not-a-number"),
    pytest.param(b64("p=1.5"), id="position-a-float"),
    pytest.param(b64("r=1&p=x"), id="reverse-with-text-position"),
    pytest.param(b64("p=\x00"), id="position-nul"),
    pytest.param(b64("p=1\n"), id="position-trailing-newline"),
    pytest.param(b64("p=" + "9" * 40), id="position-beyond-bigint"),
    pytest.param(b64("p=%00"), id="position-quoted-nul"),
    pytest.param(b64("o=abc"), id="offset-not-a-number"),
    pytest.param(b64("r=yes"), id="reverse-not-a-number"),
    pytest.param(b64(b"p=\xff\xfe"), id="not-ascii-inside"),
    pytest.param("!!!not-base64!!!", id="not-base64"),
    pytest.param("cD1hYmM", id="bad-padding"),
    pytest.param("é", id="not-ascii"),
    pytest.param("A" * 5000, id="very-long"),
]

LISTS = [
    pytest.param("/api/submissions/", "student", id="submissions"),
    pytest.param("/api/tutor/sessions/{session_id}/messages/", "student", id="messages"),
    pytest.param("/api/corrections/", "student", id="corrections"),
    pytest.param("/api/lessons/", "staff", id="lessons"),
    pytest.param("/api/lessons/traces/", "staff", id="recall-traces"),
    pytest.param("/api/lessons/skill-candidates/", "staff", id="skill-candidates"),
]
# Lists ordered by a time: a position that is a number is no time either.
TIME_ORDERED = [p for p in LISTS if p.id in ("corrections", "lessons", "recall-traces", "skill-candidates")]


@pytest.mark.parametrize(("path", "who"), LISTS)
@pytest.mark.parametrize("cursor", FORGED)
def test_forged_cursor_is_a_400_on_the_cursor_parameter(world, path, who, cursor):
    before = row_counts()

    response = wsgi_call("GET", world.path(path), query=urlencode({"cursor": cursor}), token=world.token(who))

    body = assert_refused(response, before, statuses={400})
    assert [e["attr"] for e in body["errors"]] == ["cursor"]
    assert body["errors"][0]["detail"].startswith("Invalid cursor")


# Lists the world holds two rows of at least, so that there is a next page.
PAGED = [p for p in LISTS if p.id not in ("recall-traces", "skill-candidates")]


@pytest.mark.parametrize(("path", "who"), PAGED)
def test_a_cursor_the_server_handed_out_still_pages(world, path, who):
    # The control: a next link of the list itself is accepted.
    if "submissions" in path:  # a second row, so that there is a next page
        body = json.dumps({"task": str(world.task.pk), "evidence": {"report": "second"}}).encode()
        assert wsgi_call("POST", path, body=body, token=world.student_token).status == 201
    first = wsgi_call("GET", world.path(path), query="page_size=1", token=world.token(who))
    assert first.status == 200, first.body
    next_link = first.json()["next"]
    assert next_link is not None

    parts = urlsplit(next_link)
    second = wsgi_call("GET", parts.path, query=parts.query, token=world.token(who))

    assert second.status == 200, second.body
    assert set(second.json()) == {"next", "previous", "results"}
    assert second.json()["previous"] is not None


@pytest.mark.parametrize(("path", "who"), TIME_ORDERED)
@pytest.mark.parametrize("position", ["9999", "-1", "2026-13-45"])
def test_a_number_is_no_position_in_a_list_ordered_by_time(world, path, who, position):
    before = row_counts()

    response = wsgi_call(
        "GET", world.path(path), query=urlencode({"cursor": b64(f"o=1&p={position}")}), token=world.token(who)
    )

    body = assert_refused(response, before, statuses={400})
    assert [e["attr"] for e in body["errors"]] == ["cursor"]
