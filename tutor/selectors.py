"""Reads of the tutor domain: the caller's task, session and history (SPEC §4, §7)."""

from __future__ import annotations

import uuid

from django.http import Http404

from tutor.errors import InvalidInput
from tutor.history import history_limits
from tutor.models import Enrollment, Task, TutorMessage, TutorSession


def student_task(user, task_id, field: str = "task") -> Task:
    """A task of a course the user is enrolled in as a student, with its course
    and current rubric; anything else is a 400 on ``field`` (SPEC §7)."""
    task = (
        Task.objects.select_related("course", "current_rubric")
        .filter(
            pk=task_id,
            course__enrollments__user=user,
            course__enrollments__role=Enrollment.Role.STUDENT,
        )
        .first()
    )
    if task is None:
        raise InvalidInput("not a task of a course you are enrolled in as a student", field=field)
    return task


def owned_session(user, session_id) -> TutorSession:
    """The caller's own session, with its task, course and rubric; anyone
    else's is a 404 (SPEC §7), and so is one of a course the student left."""
    session = (
        TutorSession.objects.select_related("student", "task", "task__course", "task__current_rubric")
        .filter(
            pk=session_id,
            student=user,
            task__course__enrollments__user=user,
            task__course__enrollments__role=Enrollment.Role.STUDENT,
        )
        .first()
    )
    if session is None:
        raise Http404("no such session")
    return session


def open_session_id(student, task: Task) -> uuid.UUID | None:
    """The id of the student's open session for ``task``, if there is one."""
    return (
        TutorSession.objects.filter(student=student, task=task, archived=False)
        .values_list("id", flat=True)
        .first()
    )


def earlier_messages(session_id, before_position: int | None = None) -> list[dict]:
    """The newest history candidates of a session, oldest first, as
    ``{role, content}`` (one query, at most ``HISTORY_MAX_MESSAGES`` rows)."""
    if session_id is None:
        return []
    max_messages, _ = history_limits()
    qs = TutorMessage.objects.filter(session_id=session_id)
    if before_position is not None:
        qs = qs.filter(position__lt=before_position)
    rows = list(qs.order_by("-position").values("role", "content")[:max_messages])
    rows.reverse()
    return rows


def user_enrollments(user) -> list[Enrollment]:
    """The user's enrolments with their courses, by course slug (one query,
    whatever the number of courses): who the student client says you are."""
    return list(Enrollment.objects.filter(user=user).select_related("course").order_by("course__slug"))
