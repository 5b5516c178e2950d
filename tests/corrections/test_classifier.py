"""The optional model classifier (SPEC §5): off by default; on, it refines
what the rules found through the model client (purpose ``classification``),
and the rules decide whenever it fails."""

from __future__ import annotations

import json

import httpx
import pytest

from corrections.classifier import CLASSIFIER_RULES
from corrections.detection import STATEMENT_MAX_CHARS, Detection, detect
from corrections.models import Correction, Fact, MemoryItem
from corrections.tasks import detect_correction
from tests.corrections.conftest import RAINFALL_500, RAINFALL_QUESTION
from tutor import llm
from tutor.kernel.redaction import redact
from tutor.models import ModelCall, TutorMessage

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


def out_of_shape(**fields) -> str:
    return json.dumps({"type": "factual", "confidence": 0.8, "corrected_statement": "630mm", **fields})


BAD_REPLIES = {
    "not json": "not json at all",
    "empty": "",
    "a list": "[1, 2]",
    "a string": '"factual"',
    "null": "null",
    "fenced junk": "```json\n{type: factual}\n```",
    "no type": json.dumps({"confidence": 0.9}),
    "unknown type": json.dumps({"type": "opinion", "confidence": 0.9}),
    "type a list": out_of_shape(type=["factual"]),
    "type an object": out_of_shape(type={"factual": 1}),
    "no confidence": json.dumps({"type": "factual"}),
    "confidence above 1": out_of_shape(confidence=7),
    "confidence below 0": out_of_shape(confidence=-0.1),
    "confidence a string": out_of_shape(confidence="0.8"),
    "confidence true": out_of_shape(confidence=True),
    "confidence null": out_of_shape(confidence=None),
    "confidence NaN": '{"type": "factual", "confidence": NaN}',
    "confidence Infinity": '{"type": "factual", "confidence": Infinity}',
    "confidence 1e400": '{"type": "factual", "confidence": 1e400}',
    "confidence a huge integer": '{"type": "factual", "confidence": 1' + "0" * 400 + "}",
    "none with a confidence out of range": json.dumps({"type": "none", "confidence": 7}),
    "statement a list": out_of_shape(corrected_statement=["630mm"]),
    "statement nested junk": out_of_shape(corrected_statement={"a": {"b": [1, {"c": None}]}}),
    "statement a number": out_of_shape(corrected_statement=630),
    "statement too long": out_of_shape(corrected_statement="x" * 1001),
    "reply huge": out_of_shape(padding="x" * 200_000),
    "deep nesting": "[" * 100_000 + "]" * 100_000,
    "HTTP 500": httpx.Response(500),
    "HTTP 200, no completion": httpx.Response(200, content=b"<html>gateway</html>"),
    "connection refused": httpx.ConnectError("connection refused"),
}


def rules_reading() -> Detection:
    return detect(redact(CORRECTION).text, assistant=redact(RAINFALL_500).text)


def assert_the_rules_decided(student) -> None:
    rules = rules_reading()
    correction = Correction.objects.get(user=student)
    stored = (
        correction.type,
        correction.confidence,
        tuple(correction.topic_tokens),
        correction.original_statement,
        correction.corrected_statement,
        correction.statement_key,
    )
    assert stored == (
        rules.type,
        rules.confidence,
        rules.topic,
        rules.original_statement,
        rules.corrected_statement,
        rules.statement_key,
    )
    assert (correction.classifier, correction.tiers) == ("rules_fallback", ["system", "user", "case"])
    assert Fact.objects.get().statement == "北京年均降雨量是 630mm 左右"


@pytest.mark.django_db
@pytest.mark.parametrize("failure", list(BAD_REPLIES.values()), ids=list(BAD_REPLIES))
def test_the_rules_decide_when_the_model_fails(student, chat_for, settings, failure):
    settings.CORRECTIONS_LLM_CLASSIFIER = True
    settings.TUTOR_LLM_RETRIES = 0
    chat = chat_for(student)
    chat.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    chat.send(CORRECTION, then=[failure])

    assert_the_rules_decided(student)
    assert ModelCall.objects.filter(purpose="classification").count() == 1


@pytest.mark.django_db
def test_the_rules_decide_when_the_model_client_fails_unexpectedly(student, chat_for, settings):
    settings.CORRECTIONS_LLM_CLASSIFIER = True
    chat = chat_for(student)
    chat.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    chat.send(CORRECTION, then=[RuntimeError("a bug under the client")])

    assert_the_rules_decided(student)


@pytest.mark.django_db
def test_the_rules_decide_when_reading_the_reply_fails_unexpectedly(student, chat_for, settings, monkeypatch):
    settings.CORRECTIONS_LLM_CLASSIFIER = True
    chat = chat_for(student)
    chat.send(RAINFALL_QUESTION, reply=RAINFALL_500)

    def broken(text):
        raise RuntimeError("a parser bug")

    monkeypatch.setattr(llm, "parse_json_reply", broken)
    chat.send(CORRECTION, then=[answer("factual", 0.75, "北京年均降雨量约 630mm")])

    assert_the_rules_decided(student)


@pytest.mark.django_db
def test_the_detection_task_records_the_rules_reading_when_the_model_fails(student, chat_for, settings):
    settings.CORRECTIONS_LLM_CLASSIFIER = True
    settings.TUTOR_LLM_RETRIES = 0
    chat = chat_for(student)
    chat.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    chat.send(CORRECTION, then=["[" * 100_000 + "]" * 100_000])
    Correction.objects.all().delete()
    Fact.objects.all().delete()
    message = TutorMessage.objects.filter(role="user").order_by("-position").first()
    chat.fake_llm.reply("{oops")

    assert detect_correction.apply(args=[str(message.pk)]).successful()

    assert_the_rules_decided(student)


@pytest.mark.django_db
def test_the_models_statement_is_redacted_before_it_is_stored(student, chat_for, settings):
    settings.CORRECTIONS_LLM_CLASSIFIER = True
    chat = chat_for(student)
    chat.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    chat.send(CORRECTION, then=[answer("factual", 0.75, "北京年均降雨量约 630mm，问 a.b@example.com")])

    correction = Correction.objects.get()
    assert correction.classifier == "model"
    assert correction.corrected_statement == "北京年均降雨量约 630mm，问 [REDACTED:email]"


@pytest.mark.django_db
def test_the_models_statement_stays_within_its_bound_once_redacted(student, chat_for, settings):
    settings.CORRECTIONS_LLM_CLASSIFIER = True
    chat = chat_for(student)
    chat.send(RAINFALL_QUESTION, reply=RAINFALL_500)
    addresses = " ".join(f"u{i}@b.co" for i in range(100))  # 889 characters, 1,699 once redacted
    chat.send(CORRECTION, then=[answer("factual", 0.75, f"630mm {addresses}")])

    correction = Correction.objects.get()
    assert correction.classifier == "model"
    stored = correction.corrected_statement
    assert len(stored) <= STATEMENT_MAX_CHARS and "@" not in stored
    assert stored.startswith("630mm [REDACTED:email] ") and stored.endswith("…")
    assert "[REDACTED:email" not in stored.replace("[REDACTED:email]", "")  # no marker cut in two


@pytest.mark.django_db
def test_a_message_the_rules_pass_over_is_never_sent_to_the_classifier(student, chat_for, fake_llm, settings):
    settings.CORRECTIONS_LLM_CLASSIFIER = True
    chat_for(student).send("what now?")

    assert len(fake_llm.requests) == 1
    assert not ModelCall.objects.filter(purpose="classification").exists()


# --- the wider gate (issue 36) -----------------------------------------------------------

INDENT = "Use 4 spaces for indentation in this repository."
THOUGH = "hmm our team config uses tabs though"  # no cue of the rules; a contrast word


@pytest.mark.django_db
def test_with_the_classifier_on_a_contrast_the_rules_pass_over_goes_to_the_model(
    student, chat_for, fake_llm, settings
):
    settings.CORRECTIONS_LLM_CLASSIFIER = True
    assert detect(THOUGH, assistant=INDENT) is None
    chat = chat_for(student)
    chat.send("?", reply=INDENT)
    chat.send(THOUGH, then=[answer("factual", 0.72, "The team's config uses tabs")])

    sent = fake_llm.requests[-1]
    assert sent["messages"][0]["content"] == CLASSIFIER_RULES
    user = sent["messages"][1]["content"]
    assert f"<<<BEGIN STUDENT_MESSAGE>>>\n{THOUGH}\n<<<END STUDENT_MESSAGE>>>" in user
    assert f"<<<BEGIN TUTOR_PREVIOUS_MESSAGE>>>\n{INDENT}\n<<<END TUTOR_PREVIOUS_MESSAGE>>>" in user
    assert '"type": "none"' in user  # the rules found nothing
    correction = Correction.objects.get()
    assert (correction.classifier, correction.type, correction.confidence) == ("model", "factual", 0.72)
    assert (correction.corrected_statement, correction.tiers) == ("The team's config uses tabs", ["user"])
    assert MemoryItem.objects.get().content == "The team's config uses tabs"


@pytest.mark.django_db
def test_the_classifier_off_reads_the_same_message_as_no_correction(student, chat_for, fake_llm):
    chat = chat_for(student)
    chat.send("?", reply=INDENT)
    chat.send(THOUGH)

    assert not Correction.objects.exists()
    assert not ModelCall.objects.filter(purpose="classification").exists()


@pytest.mark.django_db
def test_the_wider_gate_sends_no_answer_to_a_tutors_question(student, chat_for, fake_llm, settings):
    settings.CORRECTIONS_LLM_CLASSIFIER = True
    chat = chat_for(student)
    chat.send("?", reply="Which indentation does your team use?")
    chat.send("not spaces, we use tabs")

    assert not ModelCall.objects.filter(purpose="classification").exists()
    assert not Correction.objects.exists()


@pytest.mark.django_db
def test_a_failed_model_reading_of_a_message_the_rules_passed_over_records_nothing(
    student, chat_for, settings
):
    settings.CORRECTIONS_LLM_CLASSIFIER = True
    settings.TUTOR_LLM_RETRIES = 0
    chat = chat_for(student)
    chat.send("?", reply=INDENT)
    chat.send(THOUGH, then=[httpx.Response(500)])

    assert ModelCall.objects.filter(purpose="classification").count() == 1
    assert not Correction.objects.exists() and not MemoryItem.objects.exists()


@pytest.mark.django_db
def test_a_model_reading_of_its_own_needs_a_statement(student, chat_for, settings):
    settings.CORRECTIONS_LLM_CLASSIFIER = True
    chat = chat_for(student)
    chat.send("?", reply=INDENT)
    chat.send(THOUGH, then=[answer("factual", 0.9, "")])

    assert not Correction.objects.exists()
