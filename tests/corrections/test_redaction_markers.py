"""Redacted words stay redacted, whole (SPEC §5: correction text is redacted
before it is stored). ``tutor.kernel.redaction`` writes ``[REDACTED:kind]``; what the
corrections app stores from it -- statements, memory, facts, proposals,
topics, token rows -- keeps every marker whole, and a marker's words are
never a topic."""

from __future__ import annotations

import re

import pytest
from django.apps import apps
from django.db import models

from corrections.models import Correction, Fact, MemoryItem
from corrections.text import clean_statement, cut_text, query_tokens, topic_tokens
from tests.corrections.conftest import RAINFALL_QUESTION

ANY_MARKER = re.compile(r"\[REDACTED:[A-Za-z_]*\]?", re.IGNORECASE)
MARKER_WORDS = {"redacted", "email", "ip", "address", "ip_address"}


def stored_texts() -> list[tuple[str, str]]:
    """(where, text) for every string the corrections app stores: text
    columns and the strings inside JSON columns (topic tokens, tiers)."""
    found = []
    for model in apps.get_app_config("corrections").get_models():
        text_types = (models.CharField, models.TextField)
        fields = [f for f in model._meta.concrete_fields if isinstance(f, text_types)]
        json_fields = [f for f in model._meta.concrete_fields if isinstance(f, models.JSONField)]
        for row in model.objects.all():
            for field in fields:
                found.append((f"{model.__name__}.{field.name}", getattr(row, field.name) or ""))
            for field in json_fields:
                value = getattr(row, field.name)
                if isinstance(value, list):
                    found.extend((f"{model.__name__}.{field.name}", str(v)) for v in value)
    return found


def assert_markers_whole_and_not_topics() -> None:
    texts = stored_texts()
    assert texts
    for where, text in texts:
        broken = [m for m in ANY_MARKER.findall(text) if not re.fullmatch(r"\[REDACTED:[a-z_]+\]", m)]
        assert not broken, f"{where} holds a broken marker: {text!r}"
        if where.split(".")[1] in {"topic", "topic_key", "topic_tokens", "token", "key"}:
            words = set(re.split(r"[\s|]+", text.lower()))
            assert not words & MARKER_WORDS, f"{where} holds a marker's words: {text!r}"


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content", "statement", "topic"),
    [
        ("不对，应该发到 a.b@example.com。", "应该发到 [REDACTED:email]", "发到"),
        ("不对，联系 a.b@example.com 就行", "联系 [REDACTED:email] 就行", None),
        ("Actually, the server is 10.0.0.1", "The server is [REDACTED:ip_address]", "server"),
        ("我希望你回复到 a.b@example.com", "我希望你回复到 [REDACTED:email]", "回复"),
        ("不对，截止日期是 6 号，发到 a.b@example.com", "截止日期是 6 号，发到 [REDACTED:email]", None),
    ],
)
def test_explicit_corrections_store_whole_markers(student_client, content, statement, topic):
    response = student_client.post("/api/corrections/", {"content": content}, format="json")

    assert response.status_code == 201, response.content
    correction = response.json()["correction"]
    assert correction["corrected_statement"] == statement
    if topic is not None:
        assert correction["topic"] == topic
    stored = Correction.objects.get()
    assert stored.content.count("[REDACTED:") == 1 and "@example.com" not in stored.content
    assert_markers_whole_and_not_topics()


@pytest.mark.django_db
def test_a_number_correction_with_an_address_becomes_a_fact_with_the_marker_whole(student_client):
    response = student_client.post(
        "/api/corrections/", {"content": "不对，截止日期是 6 号，发到 a.b@example.com"}, format="json"
    )

    assert response.json()["correction"]["tiers"] == ["system", "user", "case"]
    assert Fact.objects.get().statement == "截止日期是 6 号，发到 [REDACTED:email]"
    assert_markers_whole_and_not_topics()


@pytest.mark.django_db
def test_chat_messages_keep_the_assistants_and_the_students_markers_whole(student, chat_for):
    chat = chat_for(student)
    chat.send(RAINFALL_QUESTION, reply="请发邮件到 x.y@example.com，截止日期是 5 号。")
    chat.send("不对。", reply="好的。")  # negative: refers to the assistant's whole message
    chat.send("我希望你回复到 a.b@example.com")

    negative = Correction.objects.get(type="negative")
    assert negative.original_statement == "请发邮件到 [REDACTED:email]，截止日期是 5 号"
    assert "redacted" not in negative.topic_tokens and "email" not in negative.topic_tokens
    assert MemoryItem.objects.get(kind="preference").content == "我希望你回复到 [REDACTED:email]"
    assert_markers_whole_and_not_topics()


@pytest.mark.django_db
def test_a_number_correction_refers_to_a_clause_next_to_a_marker(student, chat_for):
    chat = chat_for(student)
    chat.send(RAINFALL_QUESTION, reply="截止日期是 5 号，请发到 x.y@example.com。")
    chat.send("实际上是 6 号")

    correction = Correction.objects.get()
    assert (correction.original_statement, correction.corrected_statement) == (
        "截止日期是 5 号，请发到 [REDACTED:email]",
        "截止日期是 6 号",
    )
    assert_markers_whole_and_not_topics()


def test_trimming_keeps_a_markers_brackets_at_either_end():
    assert clean_statement("，是 [REDACTED:email]。") == "是 [REDACTED:email]"
    assert clean_statement("[REDACTED:api_key] 就是它") == "[REDACTED:api_key] 就是它"
    assert clean_statement(" ，[REDACTED:email]] ") == "[REDACTED:email]"


def test_a_cut_never_falls_inside_a_marker():
    text = "a" * 990 + " [REDACTED:email] tail"

    cut = cut_text(text, 1000)

    assert cut == "a" * 990 + "…" and len(cut) <= 1000
    assert cut_text("short [REDACTED:email]", 1000) == "short [REDACTED:email]"


def test_a_marker_is_never_a_topic_even_without_its_closing_bracket():
    assert topic_tokens("发到 [REDACTED:email] 邮箱") == ["发到", "邮箱"]
    assert topic_tokens("发到 [REDACTED:email") == ["发到"]
    assert "redacted" not in query_tokens("the server [REDACTED:ip_address] is down", 50)
