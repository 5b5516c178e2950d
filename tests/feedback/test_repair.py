"""The bounded repair loop (seed 001): three outcomes, and nothing else is an outcome."""

from __future__ import annotations

import httpx
import pytest

from feedback.repair import ValidationFailed, repair_prompt, run_repair_loop
from tutor.llm import ModelUnavailable

TASK = [{"role": "system", "content": "be strict"}, {"role": "user", "content": "the original task"}]


def scripted(*replies):
    """A generate() answering from ``replies`` and recording each conversation."""
    seen: list[list[dict]] = []
    queue = list(replies)

    def generate(messages):
        seen.append(list(messages))
        item = queue.pop(0)
        if isinstance(item, BaseException):
            raise item
        return item

    return generate, seen


def must_be_int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValidationFailed(f"{text!r} is not an integer") from None


def test_first_valid_generation_passes():
    generate, seen = scripted("42")

    result = run_repair_loop(messages=TASK, generate=generate, validate=must_be_int, max_generations=3)

    assert result.outcome == "passed"
    assert result.value == 42
    assert result.generations == 1
    assert result.errors == []
    assert seen == [TASK]


def test_repair_feeds_error_and_original_task_back():
    generate, seen = scripted("forty-two", "42")

    result = run_repair_loop(messages=TASK, generate=generate, validate=must_be_int, max_generations=3)

    assert result.outcome == "passed"
    assert result.value == 42
    assert result.generations == 2
    assert result.errors == ["'forty-two' is not an integer"]
    assert seen[1] == [
        *TASK,
        {"role": "assistant", "content": "forty-two"},
        {"role": "user", "content": repair_prompt("'forty-two' is not an integer", "the original task")},
    ]
    assert "the original task" in seen[1][-1]["content"]
    assert "'forty-two' is not an integer" in seen[1][-1]["content"]


def test_repair_conversation_does_not_grow_with_each_generation():
    generate, seen = scripted("a", "b", "7")

    run_repair_loop(messages=TASK, generate=generate, validate=must_be_int, max_generations=3)

    # Only the latest rejected answer is shown again, with the original task.
    assert len(seen[2]) == len(TASK) + 2
    assert seen[2][-2] == {"role": "assistant", "content": "b"}


def test_same_invalid_text_twice_fails_early():
    generate, seen = scripted("nope", "nope", "42")

    result = run_repair_loop(messages=TASK, generate=generate, validate=must_be_int, max_generations=5)

    assert result.outcome == "failed"
    assert result.value is None
    assert result.generations == 2
    assert len(seen) == 2
    assert len(result.errors) == 2


def test_same_invalid_text_after_another_invalid_one_also_fails():
    generate, _ = scripted("x", "y", "x", "1")

    result = run_repair_loop(messages=TASK, generate=generate, validate=must_be_int, max_generations=5)

    assert result.outcome == "failed"
    assert result.generations == 3


def test_different_invalid_texts_exhaust_after_max_generations():
    generate, seen = scripted("a", "b", "c", "42")

    result = run_repair_loop(messages=TASK, generate=generate, validate=must_be_int, max_generations=3)

    assert result.outcome == "exhausted"
    assert result.value is None
    assert result.generations == 3
    assert len(seen) == 3
    assert result.errors == ["'a' is not an integer", "'b' is not an integer", "'c' is not an integer"]


def test_max_generations_is_configurable():
    generate, seen = scripted("a", "42")

    result = run_repair_loop(messages=TASK, generate=generate, validate=must_be_int, max_generations=1)

    assert result.outcome == "exhausted"
    assert result.generations == 1
    assert len(seen) == 1


def test_max_generations_below_one_is_refused():
    generate, _ = scripted("42")
    with pytest.raises(ValueError, match="at least 1"):
        run_repair_loop(messages=TASK, generate=generate, validate=must_be_int, max_generations=0)


@pytest.mark.parametrize(
    "error",
    [
        ModelUnavailable("provider down"),
        httpx.ReadTimeout("slow"),
        KeyboardInterrupt(),
        RuntimeError("cancelled by the caller"),
    ],
    ids=["model-unavailable", "transport-timeout", "keyboard-interrupt", "custom"],
)
def test_errors_from_generate_propagate_and_are_not_outcomes(error):
    generate, seen = scripted("not a number", error, "42")

    with pytest.raises(type(error)):
        run_repair_loop(messages=TASK, generate=generate, validate=must_be_int, max_generations=3)
    assert len(seen) == 2  # no further generation after the error


def test_unexpected_validator_errors_propagate():
    def validate(text):
        raise TypeError("validator bug")

    generate, _ = scripted("42")
    with pytest.raises(TypeError):
        run_repair_loop(messages=TASK, generate=generate, validate=validate, max_generations=3)
