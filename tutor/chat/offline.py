"""The offline tutor: a deterministic reply when no model is configured (SPEC §4).

It reads the same assembled context a model would get -- the feedback state,
its blocking items and the next step -- so the embedded default shows the
loop working end to end.
"""

from __future__ import annotations

from tutor.models import Task

STATE_OPENINGS = {
    "none": "There is no review of your work on this task yet, so let's work from the task itself.",
    "pending": "Your latest submission is still being reviewed; earlier findings no longer apply to it.",
    "unavailable": (
        "The review service could not review your latest submission. That is a service problem, "
        "not a judgement of your work; you can ask for a retry."
    ),
    "stale_rules": "The task's rules changed after your last review, so that review needs to be redone.",
    "invalid": (
        "The review record of your latest submission is unusable; please ask course staff to look at it."
    ),
    "passed": "Your latest submission passed every acceptance criterion.",
    "current": "Here is what the review of your latest submission still asks for:",
}


def offline_reply(*, task: Task, feedback: dict, message: str) -> str:
    """Compose the reply from the feedback block and the task."""
    state = feedback.get("state", "none")
    lines = [STATE_OPENINGS.get(state, STATE_OPENINGS["invalid"])]
    if state == "current":
        for item in feedback.get("items", []):
            lines.append(f"- {item['rubric_id']} ({item['status']}): {item['criterion']} — {item['reason']}")
        if feedback.get("omitted_count"):
            lines.append(f"(and {feedback['omitted_count']} more in the full review)")
    next_step = feedback.get("next_step")
    if next_step and state in ("current", "passed"):
        lines.append(f"Suggested next step: {next_step}")
    elif state in ("none", "pending", "stale_rules"):
        lines.append(f"The goal is: {task.goal}" if task.goal else f"The task is: {task.title}")
    lines.append(
        "(Offline tutor: no language model is configured, so this reply is composed from your review.)"
    )
    return "\n".join(lines)
