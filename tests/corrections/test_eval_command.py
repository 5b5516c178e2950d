"""``manage.py eval_corrections`` (SPEC §14; ``make eval``): the corpus read
by the rules, or by the configured model after them; the goals decide the
exit status."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from corrections.detection import detect, is_candidate
from corrections.eval.measure import load_corpus
from tutor.models import ModelCall


def run(*args: str) -> str:
    out = StringIO()
    call_command("eval_corrections", *args, stdout=out)
    return out.getvalue()


def write_corpus(path, rows) -> str:
    base = {"split": "tune", "kind": "test", "hard_negative": False}
    path.write_text(
        "\n".join(json.dumps({**base, **row}, ensure_ascii=False) for row in rows), encoding="utf-8"
    )
    return str(path)


def test_the_corpus_meets_the_goals_and_prints_its_held_out_part_apart():
    out = run()

    assert "== rules, whole corpus: 452 messages (en 227, zh 225), 162 hard negatives" in out
    assert re.search(r"== rules, held-out part: \d+ messages", out)
    for line in ("type accuracy among detected:", "tier accuracy:", "hard negatives reaching user memory:"):
        assert line in out
    assert out.rstrip().endswith("all goals met")


def test_the_corpus_is_what_its_readme_says():
    rows = load_corpus()
    assert len(rows) >= 400
    assert sum(r.lang == "zh" for r in rows) * 2 >= len(rows) - 10  # half Chinese
    assert sum(r.hard_negative for r in rows) * 3 >= len(rows)  # a third or more hard negatives
    assert all(r.statement for r in rows if r.type == "factual")
    held = [r for r in rows if r.split == "heldout"]
    assert 0.2 <= len(held) / len(rows) <= 0.3


def test_the_first_look_never_dismisses_a_message_the_detector_reads_as_a_correction():
    """``is_candidate`` runs as a message is stored and decides whether
    detection runs at all (corrections.gate)."""
    for row in load_corpus():
        if detect(row.message, assistant=row.tutor) is not None:
            assert is_candidate(row.message), row.id


def test_below_a_goal_the_command_exits_non_zero_and_says_which(tmp_path):
    corpus = write_corpus(
        tmp_path / "c.jsonl",
        [
            # A correction the rules cannot read (no cue, no number): recall 0.
            {"id": "en-1", "lang": "en", "type": "factual", "tier": "user", "tutor": "It is red.",
             "message": "blue", "statement": "blue"},
            {"id": "en-2", "lang": "en", "type": "none", "tier": "none", "tutor": "Hi.", "message": "hello"},
        ],
    )  # fmt: skip

    out = StringIO()
    with pytest.raises(CommandError, match=r"goal\(s\) missed"):
        call_command("eval_corrections", "--corpus", corpus, stdout=out)

    assert "goal missed: detection recall (en) below 0.85" in out.getvalue()


ROW = {"id": "x", "lang": "en", "split": "tune", "type": "none", "tier": "none", "kind": "k",
       "hard_negative": False, "tutor": "", "message": "m"}  # fmt: skip


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("not json", r"c\.jsonl:1: not a corpus row"),
        (json.dumps({**ROW, "lang": "fr"}), r"lang must be one of en, zh"),
        (json.dumps({**ROW, "type": "factual"}), r"type none and tier none go together"),
        (json.dumps({**ROW, "split": "later"}), r"split must be one of tune, heldout"),
    ],
)
def test_a_corpus_that_is_no_labelled_rows_is_refused_with_its_line(tmp_path, line, message):
    path = tmp_path / "c.jsonl"
    path.write_text(line, encoding="utf-8")

    with pytest.raises(CommandError, match=message):
        run("--corpus", str(path))


def test_model_needs_a_configured_model(settings):
    settings.TUTOR_LLM_BASE_URL = ""
    with pytest.raises(CommandError, match="--model needs a configured model"):
        run("--model")


def echo_the_rules(body: dict) -> str:
    """The fake model answers what the rules read (the hint it is sent)."""
    user = body["messages"][1]["content"]
    hint = json.loads(user.split("<<<BEGIN RULES_READING>>>\n")[1].split("\n<<<END RULES_READING>>>")[0])
    return json.dumps({**hint, "confidence": hint["confidence"] or 0.5})


@pytest.mark.django_db
def test_model_reads_the_corpus_through_the_configured_model(tmp_path, fake_llm):
    corpus = write_corpus(
        tmp_path / "c.jsonl",
        [
            {"id": "en-1", "lang": "en", "type": "factual", "tier": "user", "tutor": "Lists are immutable.",
             "message": "wrong, lists are mutable", "statement": "lists are mutable"},
            # The rules pass over it; a contrast word sends it to the model, which reads no correction.
            {"id": "en-2", "lang": "en", "type": "none", "tier": "none", "tutor": "Use 4 spaces here.",
             "message": "ok but our linter is strict", "hard_negative": True},
            # A question: never sent.
            {"id": "zh-1", "lang": "zh", "type": "none", "tier": "none", "tutor": "默认端口是8000。",
             "message": "怎么改成3000？"},
        ],
    )  # fmt: skip
    fake_llm.default = echo_the_rules

    out = run("--model", "--corpus", corpus)

    assert "== model classifier (test-model) after the rules, whole corpus: 3 messages" in out
    assert out.rstrip().endswith("all goals met")
    sent = [r["messages"][1]["content"] for r in fake_llm.requests]
    assert len(sent) == 2
    assert "wrong, lists are mutable" in sent[0] and '"type": "factual"' in sent[0]
    assert "ok but our linter is strict" in sent[1] and '"type": "none"' in sent[1]
    assert ModelCall.objects.filter(purpose="classification", status="ok").count() == 2
