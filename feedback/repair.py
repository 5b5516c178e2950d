"""The bounded repair loop (seed 001; SPEC §2).

generate → validate → on failure feed the validation error back together
with the original task and generate again. Three outcomes only:

- ``passed``: a generation validated;
- ``failed``: the model produced the same invalid text twice -- it is stuck,
  more tries would only repeat it;
- ``exhausted``: ``max_generations`` generations, none valid.

Cancellation and transport errors are not outcomes: whatever ``generate``
raises propagates to the caller unchanged.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Outcome = Literal["passed", "failed", "exhausted"]


class ValidationFailed(ValueError):
    """Raised by a validator; the message is shown to the model verbatim."""


@dataclass
class LoopResult:
    outcome: Outcome
    value: Any = None
    generations: int = 0
    errors: list[str] = field(default_factory=list)


def repair_prompt(error: str, original_task: str) -> str:
    return (
        f"Your previous answer was rejected: {error}\n\n"
        "Here is the original task again. Answer it from the start and reply with the "
        f"corrected JSON only.\n\n{original_task}"
    )


def run_repair_loop(
    *,
    messages: list[dict],
    generate: Callable[[list[dict]], str],
    validate: Callable[[str], Any],
    max_generations: int,
) -> LoopResult:
    """Run the loop. ``messages`` ends with the original task as a user message."""
    if max_generations < 1:
        raise ValueError("max_generations must be at least 1")
    original_task = messages[-1]["content"]
    conversation = list(messages)
    seen_invalid: set[str] = set()
    errors: list[str] = []
    for generation in range(1, max_generations + 1):
        text = generate(conversation)
        try:
            value = validate(text)
        except ValidationFailed as exc:
            error = str(exc)
            errors.append(error)
            if text in seen_invalid:
                return LoopResult("failed", generations=generation, errors=errors)
            seen_invalid.add(text)
            conversation = [
                *messages,
                {"role": "assistant", "content": text},
                {"role": "user", "content": repair_prompt(error, original_task)},
            ]
            continue
        return LoopResult("passed", value=value, generations=generation, errors=errors)
    return LoopResult("exhausted", generations=max_generations, errors=errors)
