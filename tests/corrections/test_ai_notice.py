"""The AI notice (SPEC §13) on the corrections API: a course that requires
it before the student's words go to the tutor's model refuses an explicit
correction with the tutor's 409 ``ai_notice_required`` until it is
acknowledged -- with the model classifier on, that text goes to the model."""

from __future__ import annotations

import json

import pytest

from corrections.models import Correction
from tutor.models import ModelCall
from tutor.rights.notice import notice_version

CORRECTION = "实际上是 630mm"


@pytest.mark.django_db
def test_an_explicit_correction_waits_for_the_required_notice(course, student_client, fake_llm, settings):
    settings.CORRECTIONS_LLM_CLASSIFIER = True
    course.ai_notice_required = True
    course.save(update_fields=["ai_notice_required"])
    fake_llm.default = json.dumps({"type": "factual", "confidence": 0.8, "corrected_statement": "630mm"})

    refused = student_client.post("/api/corrections/", {"content": CORRECTION}, format="json")

    assert refused.status_code == 409, refused.content
    assert refused.json()["errors"][0]["code"] == "ai_notice_required"
    assert fake_llm.requests == [] and not ModelCall.objects.exists() and not Correction.objects.exists()

    ack = student_client.post(
        f"/api/courses/{course.pk}/ai-notice/", {"version": notice_version()}, format="json"
    )
    assert ack.status_code == 201, ack.content
    taken = student_client.post("/api/corrections/", {"content": CORRECTION}, format="json")

    assert taken.status_code == 201, taken.content
    assert ModelCall.objects.filter(purpose="classification").count() == 1
