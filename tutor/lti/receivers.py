"""What the LTI app does when other apps announce something (STYLE: the
feedback app never imports this one)."""

from __future__ import annotations

from feedback.models import AttemptStatus


def attempt_finished_received(sender, *, attempt_id, status, **kwargs) -> None:
    """A terminal attempt was committed: queue its score for the LMS (SPEC
    §12). An unavailable or invalid attempt is an outage or a system fault,
    never a grade: it posts nothing (not even a zero)."""
    if status != AttemptStatus.COMPLETED:
        return
    from tutor.lti.services.scores import scores_queue

    scores_queue(attempt_id=attempt_id)
