"""Reads of the tutor domain: the caller's task, session and history (SPEC §4, §7).

These run on every tutor request, so each is a ``PreparedQuery``: SQL
compiled once per process from the queryset next to it (SPEC §10). Model
instances are rebuilt from the rows with ``Model.from_db``, as the ORM does.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Case, CharField, OuterRef, Subquery, Value, When
from django.http import Http404

from feedback.selectors import FeedbackSelection, folded_selection, latest_row_rows, latest_row_subquery
from tutor.chat.history import history_limits
from tutor.db.jsonrows import JSONRows
from tutor.db.memo import Memo
from tutor.db.prepared import PreparedQuery, model_columns, model_from_row
from tutor.db.snapshots import Versions, version_subqueries, versions_from_row
from tutor.kernel.errors import InvalidInput
from tutor.models import Course, Enrollment, NoticeAcknowledgement, Rubric, Task, TutorMessage, TutorSession

_TASK_COLUMNS = [
    *model_columns(Task),
    *model_columns(Course, "course__"),
    *model_columns(Rubric, "current_rubric__"),
]


def _task_columns(prefix: str = "") -> tuple[str, ...]:
    return tuple(f"{prefix}{column}" for column in _TASK_COLUMNS)


# A task with its course and current rubric, kept per the values its columns
# held as the database returned them (``PreparedQuery`` ``raw``): the same
# values make the same instances, so a student's every turn on a task does
# not convert and build them again (its JSON, its dates: SPEC §10), and a
# task changed in any column is another key. The instances are shared by the
# requests that read them: never changed.
TASKS = Memo("tasks with course and rubric", 1024)


def _task_from(prepared: PreparedQuery, row: dict, prefix: str = "", **shape) -> Task:
    names = _task_columns(prefix)
    raw = tuple(row[name] for name in names)
    return TASKS.get_or_make(raw, lambda: _task_built(prepared.convert(row, names, **shape), prefix))


def _task_built(row: dict, prefix: str) -> Task:
    task = model_from_row(Task, row, prefix)
    task.course = model_from_row(Course, row, f"{prefix}course__")
    task.current_rubric = model_from_row(Rubric, row, f"{prefix}current_rubric__")
    return task


def student_task_queryset(*, user_id, task_id):
    return (
        Task.objects.filter(
            pk=task_id,
            course__enrollments__user_id=user_id,
            course__enrollments__role=Enrollment.Role.STUDENT,
        )
        .values(*_TASK_COLUMNS)
        .order_by()[:1]
    )


STUDENT_TASK = PreparedQuery(student_task_queryset, raw=_task_columns(), user_id="int", task_id="uuid")


def student_task(user, task_id, field: str = "task") -> Task:
    """A task of a course the user is enrolled in as a student, with its course
    and current rubric; anything else is a 400 on ``field`` (SPEC §7)."""
    row = STUDENT_TASK.first(user_id=user.pk, task_id=task_id)
    if row is None:
        raise InvalidInput("not a task of a course you are enrolled in as a student", field=field)
    return _task_from(STUDENT_TASK, row)


def history_rows(messages, max_messages: int) -> JSONRows | Value:
    """The newest ``max_messages`` of ``messages`` (a queryset of one
    session's), as a column of the statement that names the session: what
    ``earlier_messages`` reads, newest first (``tutor.db.jsonrows``)."""
    if max_messages < 1:
        return Value("[]")
    return JSONRows(messages.order_by("-position").values("position", "role", "content")[:max_messages])


def history_from_column(column: str | None) -> list[dict]:
    """A ``history_rows`` column as ``earlier_messages`` returns its rows:
    oldest first, as ``{role, content}``."""
    rows = HISTORY_ROWS.decode(column)
    rows.sort(key=lambda row: row["position"])
    return [{"role": row["role"], "content": row["content"]} for row in rows]


# Reads the kinds of the history columns (their decoding) once.
HISTORY_ROWS = JSONRows(TutorMessage.objects.values("position", "role", "content"))


def _feedback_versions() -> dict:
    return {
        "prompt_version": settings.REVIEW_PROMPT_VERSION,
        "engine_version": settings.REVIEW_ENGINE_VERSION,
    }


def owned_session_queryset(*, user_id, session_id, prompt_version, engine_version, max_messages):
    """The caller's session with its task, course and rubric, the versions of
    the request's snapshots, the newest history messages and the feedback
    selection's row (``feedback.selectors.latest_row_subquery``): everything
    a turn reads before its claim, in one statement."""
    return (
        TutorSession.objects.filter(
            pk=session_id,
            student_id=user_id,
            # A student who left the course keeps no access to its sessions.
            task__course__enrollments__user_id=user_id,
            task__course__enrollments__role=Enrollment.Role.STUDENT,
        )
        .values(*model_columns(TutorSession), *(f"task__{column}" for column in _TASK_COLUMNS))
        .annotate(
            **version_subqueries("task__course_id", Value(user_id)),
            notice_acknowledged=notice_acknowledged(user_id, "task__course"),
            **_turn_reads(
                user_id,
                messages=TutorMessage.objects.filter(session_id=OuterRef("pk")),
                task=OuterRef("task_id"),
                rubric="task__current_rubric__",
                max_messages=max_messages,
                prompt_version=prompt_version,
                engine_version=engine_version,
            ),
        )
        .order_by()[:1]
    )


def notice_acknowledged(user_id, course: str):
    """The AI notice version the student last acknowledged in the course,
    read only for a course that requires it (SPEC §13): a column of the
    statement that reads the session, so the check costs no query."""
    latest = NoticeAcknowledgement.objects.filter(user_id=Value(user_id), course_id=OuterRef(f"{course}_id"))
    return Case(
        When(
            **{f"{course}__ai_notice_required": True},
            then=Subquery(latest.order_by("-acknowledged_at", "-id").values("version")[:1]),
        ),
        default=Value(None, output_field=CharField()),
        output_field=CharField(),
    )


def _turn_reads(user_id, *, messages, task, rubric, max_messages, prompt_version, engine_version) -> dict:
    """The ``history`` and ``feedback`` columns of a statement that reads a
    student's task (``task``: its id, ``rubric``: the path to its current
    rubric, as the statement names them) and ``messages`` of their session."""
    return {
        "history": history_rows(messages, max_messages),
        "feedback": latest_row_subquery(
            student_id=user_id,
            task=task,
            rubric=rubric,
            prompt_version=prompt_version,
            engine_version=engine_version,
        ),
    }


OWNED_SESSION = PreparedQuery(
    owned_session_queryset,
    shape=("max_messages",),
    raw=_task_columns("task__"),
    user_id="int",
    session_id="uuid",
    prompt_version="str",
    engine_version="str",
)


@dataclass(frozen=True)
class SessionRead:
    """The caller's session and what its statement read for the session's
    next turn (``owned_session``)."""

    session: TutorSession  # with its student, task, course and rubric
    versions: Versions  # of the request's snapshots (tutor.db.snapshots)
    history: list[dict]  # the newest messages, oldest first, as ``earlier_messages`` after all of them
    feedback: FeedbackSelection  # the student's feedback selection for the task (``select_feedback``)
    notice_acknowledged: str | None  # the AI notice version acknowledged (``notice_acknowledged``)


def owned_session(user, session_id) -> SessionRead:
    """The caller's own session, with its task, course and rubric, and what
    a turn reads before its claim (``SessionRead``), in one query; anyone
    else's session is a 404 (SPEC §7), and so is one of a course the student left."""
    max_messages = history_limits()[0]
    row = OWNED_SESSION.first(
        user_id=user.pk, session_id=session_id, max_messages=max_messages, **_feedback_versions()
    )
    if row is None:
        raise Http404("no such session")
    session = model_from_row(TutorSession, row)
    session.student = user
    session.task = _task_from(OWNED_SESSION, row, "task__", max_messages=max_messages)
    return SessionRead(
        session=session,
        versions=versions_from_row(row, course_id=session.task.course_id, user_id=user.pk),
        history=history_from_column(row["history"]),
        feedback=folded_selection(latest_row_rows(row["feedback"]), session.task),
        notice_acknowledged=row["notice_acknowledged"],
    )


def _open_session(user_id, task):
    return TutorSession.objects.filter(student_id=user_id, task_id=task, archived=False).values("id")[:1]


def student_task_session_queryset(*, user_id, task_id, prompt_version, engine_version, max_messages):
    """The student's task (``student_task_queryset``) with, in the same row,
    the id of their open session for it, if any (served by the partial unique
    constraint on open sessions), the versions of the preview's snapshots,
    that session's newest messages and the feedback selection's row: the
    context preview's one read (``feedback.selectors.latest_row_subquery``)."""
    in_open_session = TutorMessage.objects.filter(
        session_id=Subquery(_open_session(user_id, OuterRef(OuterRef("pk"))))
    )
    return student_task_queryset(user_id=user_id, task_id=task_id).annotate(
        open_session_id=Subquery(_open_session(user_id, OuterRef("pk"))),
        **version_subqueries("course_id", Value(user_id), sends=False),
        **_turn_reads(
            user_id,
            messages=in_open_session,
            task=OuterRef("pk"),
            rubric="current_rubric__",
            max_messages=max_messages,
            prompt_version=prompt_version,
            engine_version=engine_version,
        ),
    )


STUDENT_TASK_SESSION = PreparedQuery(
    student_task_session_queryset,
    shape=("max_messages",),
    raw=_task_columns(),
    user_id="int",
    task_id="uuid",
    prompt_version="str",
    engine_version="str",
)


@dataclass(frozen=True)
class TaskRead:
    """What the context preview reads in its one statement."""

    task: Task
    session_id: uuid.UUID | None  # the student's open session for the task, if any
    versions: Versions  # of the preview's snapshots (tutor.db.snapshots)
    history: list[dict]  # the open session's newest messages, oldest first, as ``earlier_messages``
    feedback: FeedbackSelection  # the student's feedback selection (``select_feedback``)


def student_task_and_open_session(user, task_id, field: str = "task") -> TaskRead:
    """``student_task``, the student's open session for it and the rest the
    context preview reads (``TaskRead``), in one query."""
    max_messages = history_limits()[0]
    row = STUDENT_TASK_SESSION.first(
        user_id=user.pk, task_id=task_id, max_messages=max_messages, **_feedback_versions()
    )
    if row is None:
        raise InvalidInput("not a task of a course you are enrolled in as a student", field=field)
    task = _task_from(STUDENT_TASK_SESSION, row, max_messages=max_messages)
    return TaskRead(
        task=task,
        session_id=row["open_session_id"],
        versions=versions_from_row(row, course_id=task.course_id, user_id=user.pk, sends=False),
        history=history_from_column(row["history"]),
        feedback=folded_selection(latest_row_rows(row["feedback"]), task),
    )


def earlier_messages_queryset(*, session_id, before_position, max_messages):
    return (
        TutorMessage.objects.filter(session_id=session_id, position__lt=before_position)
        .order_by("-position")
        .values("role", "content")[:max_messages]
    )


# "Before the current message": the preview has no current message, so it
# reads everything below an unreachable position.
NO_POSITION_LIMIT = 2**31 - 1
EARLIER_MESSAGES = PreparedQuery(
    earlier_messages_queryset, shape=("max_messages",), session_id="uuid", before_position="int"
)


def earlier_messages(session_id, before_position: int | None = None) -> list[dict]:
    """The newest history candidates of a session, oldest first, as
    ``{role, content}`` (one query, at most ``HISTORY_MAX_MESSAGES`` rows)."""
    if session_id is None:
        return []
    rows = EARLIER_MESSAGES.rows(
        max_messages=history_limits()[0],
        session_id=session_id,
        before_position=NO_POSITION_LIMIT if before_position is None else before_position,
    )
    rows.reverse()
    return rows
