"""GET /api/me/export/ and ``export_student`` (SPEC §13): everything the
life created, as the person reads it, and nothing of a classmate's."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.core.management import call_command

from tests.factories import client_for, enroll
from tests.rights.life import live
from tests.rights.test_erasure import nocap

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def staff(course):
    return enroll(course, "teacher", "staff")


def test_the_export_holds_the_whole_life_and_nothing_of_a_classmate(
    course, task, staff, registration, platform, fake_llm
):
    life = live(course=course, task=task, platform=platform, staff=staff, fake_llm=fake_llm, capture=nocap)
    client = client_for(life.person)

    response = client.get("/api/me/export/")

    assert response.status_code == 200, response.content
    document = response.json()
    text = json.dumps(document, ensure_ascii=False)
    # Every canary the person wrote is in it, and their LMS identity.
    missing = [c for c in life.canaries if c not in text]
    assert missing == []
    assert document["user"]["username"] == life.person.username and document["user"]["email"] == life.email
    assert [i["subject"] for i in document["lti_identities"]] == [life.sub]
    assert [s["id"] for s in document["submissions"]] == life.submissions
    assert {a["result"]["overall"] for s in document["submissions"] for a in s["attempts"]} == {
        "FAIL",
        "PASS",
    }
    assert [
        r["reason"].startswith("I did name it")
        for s in document["submissions"]
        for r in s["regrade_requests"]
    ] == [True]
    kinds = {m["kind"] for m in document["corrections"]["memory"]}
    assert "preference" in kinds
    assert len(document["corrections"]["corrections"]) == 3
    assert document["recall"] and all("lines" not in trace for trace in document["recall"])
    assert [e["course"] for e in document["tutor"]["enrollments"]] == ["se-101"]
    assert sum(len(s["messages"]) for s in document["tutor"]["sessions"]) == 8
    assert any(e["event"] == "regrade_requested" and e["by_you"] for e in document["tutor"]["audit_events"])
    # Nothing of the classmate's.
    assert "classmate" not in text

    archive = zipfile.ZipFile(io.BytesIO(client.get("/api/me/export/", {"archive": "zip"}).content))
    names = archive.namelist()
    assert "export.json" in names
    assert any(name.endswith("files/src/first.js") for name in names)
    assert life.canaries[1] in archive.read(next(n for n in names if n.endswith("src/first.js"))).decode()

    out = io.StringIO()
    call_command("export_student", life.person.username, stdout=out)
    assert json.loads(out.getvalue())["submissions"] == document["submissions"]


def test_the_export_is_rate_limited_and_refuses_an_unknown_archive(settings, course, student_client):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "exports": "2/hour"},
    }
    bad = student_client.get("/api/me/export/", {"archive": "tar"})
    assert bad.status_code == 400 and bad.json()["errors"][0]["attr"] == "archive"
    assert student_client.get("/api/me/export/").status_code == 200
    assert student_client.get("/api/me/export/").status_code == 429


def test_the_export_is_for_signed_in_callers_only(db):
    from rest_framework.test import APIClient

    assert APIClient().get("/api/me/export/").status_code == 401
