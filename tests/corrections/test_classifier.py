"""The optional model classifier (SPEC §5): off by default; on, it refines
what the rules found through the model client (purpose ``classification``),
and the rules decide whenever it fails."""

from __future__ import annotations

import json

import httpx
import pytest

from corrections.classifier import CLASSIFIER_RULES
from corrections.models import Correction, Fact, MemoryItem
from tests.corrections.conftest import RAINFALL_500, RAINFALL_QUESTION
from tutor.models import ModelCall

CORRECTION = "不对，北京年均降雨量是 630mm 左右"


def answer(kind: str, confidence: float, statement: str = "") -> str:
    return json.dumps({"type": kind, "confidence": confidence, "corrected_statement": statement})


@pytest.mark.django_db
def test_off_by_default_no_classification_call(student, chat_for, fake_llm):
    chat = chat_for(student)
    chat.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    chat.send(CORRECTION)

    assert len(fake_llm.requests) == 2  # the two tutor turns
    assert not ModelCall.objects.filter(purpose="classification").exists()
    assert Correction.objects.get().classifier == "rules"


@pytest.mark.django_db
def test_the_model_refines_the_rules_reading(student, chat_for, fake_llm, settings):
    settings.CORRECTIONS_LLM_CLASSIFIER = True
    chat = chat_for(student)
    chat.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    chat.send(CORRECTION, then=[answer("factual", 0.75, "北京年均降雨量约 630mm")])

    sent = fake_llm.requests[-1]
    assert sent["messages"][0] == {"role": "system", "content": CLASSIFIER_RULES}
    user = sent["messages"][1]["content"]
    assert f"<<<BEGIN STUDENT_MESSAGE>>>\n{CORRECTION}\n<<<END STUDENT_MESSAGE>>>" in user
    assert f"<<<BEGIN TUTOR_PREVIOUS_MESSAGE>>>\n{RAINFALL_500}\n<<<END TUTOR_PREVIOUS_MESSAGE>>>" in user
    assert '"confidence": 0.9' in user  # the rules' reading, as a hint
    assert sent["temperature"] == 0.0
    correction = Correction.objects.get()
    assert (correction.classifier, correction.confidence, correction.tiers) == ("model", 0.75, ["user"])
    assert MemoryItem.objects.get().content == "北京年均降雨量约 630mm"
    assert not Fact.objects.exists()
    assert ModelCall.objects.filter(purpose="classification", status="ok").count() == 1


@pytest.mark.django_db
def test_the_model_may_say_it_is_no_correction(student, chat_for, settings):
    settings.CORRECTIONS_LLM_CLASSIFIER = True
    chat_for(student).send("I want to finish this today.", then=[answer("none", 0.9)])

    assert not Correction.objects.exists() and not MemoryItem.objects.exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    "failure",
    [
        "not json at all",
        json.dumps({"type": "opinion", "confidence": 0.9}),
        json.dumps({"type": "factual", "confidence": 7}),
        httpx.Response(500),
    ],
)
def test_the_rules_decide_when_the_model_fails(student, chat_for, settings, failure):
    settings.CORRECTIONS_LLM_CLASSIFIER = True
    settings.TUTOR_LLM_RETRIES = 0
    chat = chat_for(student)
    chat.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    chat.send(CORRECTION, then=[failure])

    correction = Correction.objects.get()
    assert (correction.classifier, correction.confidence, correction.tiers) == ("rules", 0.9, ["system"])
    assert Fact.objects.get().statement == "北京年均降雨量是 630mm 左右"


@pytest.mark.django_db
def test_a_message_the_rules_pass_over_is_never_sent_to_the_classifier(student, chat_for, fake_llm, settings):
    settings.CORRECTIONS_LLM_CLASSIFIER = True
    chat_for(student).send("what now?")

    assert len(fake_llm.requests) == 1
    assert not ModelCall.objects.filter(purpose="classification").exists()
