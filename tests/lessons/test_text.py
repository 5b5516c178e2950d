"""Text rules (lessons.text): CJK-aware token estimates without tiktoken,
phrase matching at word boundaries, near-duplicate shingles."""

from __future__ import annotations

import pytest

from lessons.text import estimate_tokens, jaccard, marked, normalize, phrase_in, shingles, symptom_anchor


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("abcd", 1),
        ("abcde", 2),  # four Latin characters a token
        ("连接池超时", 5),  # one per CJK character
        ("CI 红了", 3),  # "CI " is 3 characters (1 token), 红 and 了 one each
        ("全角，标点。", 6),  # full-width punctuation counts one each
        ("", 1),
    ],
)
def test_tokens_are_estimated_cjk_aware(text, tokens):
    assert estimate_tokens(text) == tokens


def test_the_estimate_works_offline_without_tiktoken():
    import sys

    estimate_tokens("离线也能估算")
    assert "tiktoken" not in sys.modules


@pytest.mark.parametrize(
    ("phrase", "text", "found"),
    [
        ("escape", "the output was not escaped", False),
        ("escape", "escape-d output", True),
        ("unexpected token", "SyntaxError: Unexpected  Token '<'", True),
        ("ci", "本地绿ci红了", True),  # CJK next to a Latin word is a boundary
        ("连接超时", "数据库连接超时了", True),
        ("first([])", "call first([]) twice", True),
        ("([])", "first([])", True),  # starts and ends without a word character
        ("504", "HTTP 5040", False),
    ],
)
def test_phrases_are_found_at_word_boundaries(phrase, text, found):
    assert phrase_in(normalize(phrase), normalize(text)) is found
    # The SQL side runs the same test on the marked strings.
    assert (marked(normalize(phrase)) in marked(normalize(text))) is found


def test_a_forged_boundary_mark_in_a_text_is_dropped():
    assert not phrase_in("escape", normalize("un\x01escape\x01d"))


def test_the_anchor_is_the_longest_word_or_the_first_cjk_character():
    assert symptom_anchor("red in ci") == "red"
    assert symptom_anchor("connection timeout") == "connection"
    assert symptom_anchor("连接超时") == "连"
    assert symptom_anchor("!!!") == ""


def test_shingles_pair_cjk_characters_and_keep_words():
    assert shingles("Empty array 空数组") == ["array", "empty", "数组", "空数"]
    assert jaccard(shingles("Check the empty array first"), shingles("check the EMPTY array first!")) == 1.0
    assert jaccard(shingles("a b c d e"), shingles("a b c d f")) == pytest.approx(4 / 6)


@pytest.mark.parametrize(
    ("text", "normalized"),
    [
        ("  ＣＩ   Fails\t", "ci fails"),  # width, case and spaces folded
        ("e\x01\u0301", "e\u0301"),  # the boundary goes after folding: it never joins what it parted
        ("\u1100\x01\u1161", "\u1100\u1161"),
    ],
)
def test_normalized_text_is_folded_first_and_loses_the_boundary_mark_after(text, normalized):
    assert normalize(text) == normalized
