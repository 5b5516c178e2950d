"""Tutor sessions the benchmark opens for its message phases
(``manage.py bench_context``), removed with what their turns stored."""

from __future__ import annotations

from rest_framework.authtoken.models import Token

from lessons.models import RecallTrace
from tutor.chat.services import session_open
from tutor.models import ModelCall, Task, TutorMessage, TutorSession


def sessions_delete(session_ids) -> None:
    """Bench sessions with their messages, model calls, recall traces and lesson hits."""
    correlation_ids = list(
        TutorMessage.objects.filter(session_id__in=session_ids).values_list("correlation_id", flat=True)
    )
    ModelCall.objects.filter(correlation_id__in=correlation_ids).delete()
    # A recall trace only lets go of a deleted session: removed by its turn's id.
    RecallTrace.objects.filter(correlation_id__in=correlation_ids).delete()
    TutorSession.objects.filter(pk__in=session_ids).delete()  # messages and lesson hits cascade


class MessageSender:
    """The message phase's own session (another bench student's, on the
    measured task), removed with what its turns stored."""

    def __init__(self, *, student, task: Task):
        self.student = student
        self.token = Token.objects.get_or_create(user=student)[0].key
        self.session, _ = session_open(student=student, task=task, new=True)
        self.url = f"/api/tutor/sessions/{self.session.pk}/messages/"

    def cleanup(self) -> None:
        sessions_delete([self.session.pk])
