"""Topics, numbers and statement keys (SPEC §5): Chinese needs a segmenter."""

from __future__ import annotations

from decimal import Decimal

import pytest

from corrections.text import Analysed, Quantity, jaccard, normalize, query_tokens, topic_key, topic_tokens

RAINFALL = ["北京", "年均", "降雨量"]


@pytest.mark.parametrize(
    "text",
    [
        "北京年均降雨量约为 500mm。",
        "实际上北京年均降雨量是 580mm",
        "北京的年均降雨量大概是多少？",
        "不对，北京年均降雨量是 630mm 左右",
    ],
)
def test_spec_examples_give_one_topic(text):
    # SPEC §5: trigger words, numbers, units and stop words are not the topic.
    assert topic_tokens(text) == RAINFALL


@pytest.mark.parametrize("text", ["北京年均降雨量写 630mm 就行", "北京年均降雨量按 630mm 即可"])
def test_closing_particles_are_no_topic_words(text):
    assert topic_tokens(text) == RAINFALL


def test_english_topic_leaves_out_stop_words_numbers_and_units():
    assert topic_tokens("Actually, the average annual rainfall in Beijing is 630 mm.") == [
        "average",
        "annual",
        "rainfall",
        "beijing",
    ]


def test_topics_match_by_jaccard():
    assert jaccard(RAINFALL, ["北京", "年均", "降雨量"]) == 1.0
    assert jaccard(RAINFALL, ["上海", "年均", "降雨量"]) == 0.5  # another city: not the same topic
    assert jaccard([], RAINFALL) == 0.0


def test_topic_key_does_not_depend_on_order():
    assert topic_key(["年均", "北京", "降雨量"]) == topic_key(RAINFALL)


def test_single_characters_inside_words_are_not_words():
    # 别 ("don't") is a preference trigger; 特别 and 别人 must not contain it.
    doc = Analysed("特别好，别人说的")
    assert "别" not in [t.text for t in doc.tokens]


def test_search_tokens_include_the_short_words_inside_long_ones():
    tokens = query_tokens("北京的降雨量", 50)
    assert {"北京", "降雨量", "降雨", "雨量"} <= set(tokens)


def test_normalize_keeps_every_character_in_place():
    text = "不对，ＡＢＣ是６３０ｍｍ“左右”…"
    norm = normalize(text)
    assert len(norm) == len(text)
    assert norm == '不对,abc是630mm"左右"…'


@pytest.mark.parametrize(
    ("text", "number", "unit"),
    [
        ("630mm", "630", "mm"),
        ("630 mm", "630", "mm"),
        ("630毫米", "630", "mm"),
        ("6,300 km", "6300", "km"),
        ("85%", "85", "%"),
        ("2.50 kg", "2.5", "kg"),
        ("42", "42", ""),
    ],
)
def test_quantities_have_a_canonical_number_and_unit(text, number, unit):
    [(quantity, _)] = Analysed(text).quantities_in()
    assert (quantity.number_text, quantity.unit) == (number, unit)


def test_a_number_without_unit_is_the_same_as_with_one():
    assert Quantity(Decimal(630), "").same_as(Quantity(Decimal(630), "mm"))
    assert not Quantity(Decimal(630), "cm").same_as(Quantity(Decimal(630), "mm"))
    assert not Quantity(Decimal(580), "mm").same_as(Quantity(Decimal(630), "mm"))


def test_redaction_markers_are_not_topic_words():
    assert topic_tokens("我的邮箱是 [REDACTED:email] 北京") == ["邮箱", "北京"]
