"""``manage.py eval_redaction`` fails when redacting a 2 KB chat message takes
longer than its budget (issue 37: under 5 ms), not only prints the time."""

from __future__ import annotations

import io

from tutor.management.commands import eval_redaction


def test_a_chat_message_over_the_redaction_budget_is_a_problem(monkeypatch):
    command = eval_redaction.Command(stdout=io.StringIO())
    assert command.speed() == []  # within 5 ms here

    monkeypatch.setattr(eval_redaction, "CHAT_MESSAGE_BUDGET_MS", 0.0)
    [problem] = command.speed()

    assert problem.startswith("speed: a 2") and "ms" in problem
