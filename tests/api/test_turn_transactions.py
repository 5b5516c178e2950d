"""A tutor turn's writes (SPEC §4): the claim with the user message, then the
reply with the send's effects, each one transaction; what fails inside the
second is rolled back alone or drops the reply as a whole, never half of it."""

from __future__ import annotations

import logging
import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from lessons.models import Lesson, LessonHit, RecallTrace, SkillCandidate
from tests.api.test_reply_claims import claim_aged, send
from tests.lessons.conftest import bulk_lessons
from tests.lessons.test_tutor_context import TASK_TAGS
from tutor.chat import services as sessions
from tutor.models import ModelCall, TutorMessage, TutorSession

WRITE = re.compile(r"(\d+ times: )?(INSERT|UPDATE)", re.IGNORECASE)


@pytest.mark.django_db(transaction=True)
def test_an_offline_turn_with_recalled_lessons_is_written_in_two_writes(
    course, task, student, student_client, session_id
):
    """Committed for real (no test transaction around it): the claim with the
    user message, then the reply with its ModelCall row, the recall trace
    and the recalled lessons (the session had used them: no hit to count)
    -- two atomic writes, nothing written on its own before the detection
    that runs after them. On PostgreSQL each write is one statement, its own
    transaction (tutor.db.guarded_writes); on SQLite each is a transaction."""
    bulk_lessons(course, 3, tags=TASK_TAGS)
    send(student_client, session_id, "a first one")  # this process's snapshots; the lessons' first use

    with CaptureQueriesContext(connection) as captured:
        response = send(student_client, session_id)

    assert response.status_code == 201, response.content
    statements = [query["sql"] for query in captured.captured_queries]
    commits = [i for i, sql in enumerate(statements) if sql.upper().startswith("COMMIT")]
    # (Django logs an executemany as "3 times: INSERT ...".)
    writes = [i for i, sql in enumerate(statements) if WRITE.match(sql) or sql.startswith("WITH ")]
    if connection.vendor == "postgresql":
        assert commits == [], statements
        assert [statements[i][:24] for i in writes] == ['WITH "guard" AS (UPDATE '] * 2, statements
        assert "lessons_recalltrace" in statements[writes[1]] and "tutor_modelcall" in statements[writes[1]]
    else:  # which logs where each transaction begins, too
        assert len(commits) == 2, statements
        # Claim, message; release, reply, ModelCall, trace, recalled lessons.
        assert len(writes) == 7, statements
        begins = [i for i, sql in enumerate(statements) if sql.upper().startswith("BEGIN")]
        spans = list(zip(begins, commits, strict=True))
        assert all(any(start < i < end for start, end in spans) for i in writes), statements
    assert RecallTrace.objects.count() == 2 and LessonHit.objects.count() == 3
    assert ModelCall.objects.filter(model="offline").count() == 2


@pytest.mark.django_db(transaction=True)
def test_a_new_sessions_first_uses_are_counted_in_the_replys_one_write(
    course, task, student, student_client, session_id
):
    """Issue 42: the lessons' first uses in a session -- their hit rows, the
    counts and the promotion of a lesson reaching three -- go with the reply
    in its one write, as a warm turn's effects do: on PostgreSQL one
    statement, on SQLite one transaction; nothing after it."""
    bulk_lessons(course, 3, tags=TASK_TAGS)
    send(student_client, session_id, "a first one")  # this process's snapshots; each lesson's first hit today
    due = Lesson.objects.filter(course=course).first()
    Lesson.objects.filter(pk=due.pk).update(hit_count=2)
    session_id = sessions.session_open(student=student, task=task, new=True)[0].pk

    with CaptureQueriesContext(connection) as captured:
        response = send(student_client, session_id)

    assert response.status_code == 201, response.content
    statements = [query["sql"] for query in captured.captured_queries]
    writes = [sql for sql in statements if WRITE.match(sql) or sql.startswith("WITH ")]
    if connection.vendor == "postgresql":
        assert [sql[:24] for sql in writes] == ['WITH "guard" AS (UPDATE '] * 2, statements
        for table in ("lessons_lessonhit", 'UPDATE "lessons_lesson"', "lessons_skillcandidate"):
            assert table in writes[1], writes[1]
    else:
        commits = [i for i, sql in enumerate(statements) if sql.upper().startswith("COMMIT")]
        assert len(commits) == 2 and not any("SAVEPOINT" in sql for sql in statements), statements
        last_write = max(i for i, sql in enumerate(statements) if sql in writes)
        assert last_write < commits[1], statements
    counts = dict(Lesson.objects.values_list("pk", "hit_count"))
    assert sorted(counts.values()) == [2, 2, 3]
    assert list(SkillCandidate.objects.values_list("lesson_id", "hit_count")) == [(due.pk, 3)]
    assert LessonHit.objects.filter(session_id=session_id).count() == 3


@pytest.mark.django_db
def test_a_failing_effect_is_rolled_back_alone_and_the_reply_is_stored(
    course, task, student_client, session_id, monkeypatch, caplog
):
    """A trace the database refuses (here: a token budget its CHECK
    constraint rejects; on PostgreSQL a refused statement aborts the whole
    transaction) leaves the reply, its count and the released claim stored;
    the failure is logged. The reply's one write with its effects is refused
    as a whole, and the reply written again with the effects apart."""
    bulk_lessons(course, 3, tags=TASK_TAGS)
    from lessons.services import usage

    real_trace = usage.recall_trace

    def refused(*args, **kwargs):
        trace = real_trace(*args, **kwargs)
        trace.budget_tokens = -1  # RecallTrace: CHECK (budget_tokens >= 0)
        return trace

    monkeypatch.setattr(usage, "recall_trace", refused)
    with caplog.at_level(logging.ERROR, logger="tutor.chat.services"):
        response = send(student_client, session_id)

    assert response.status_code == 201, response.content
    assert list(TutorMessage.objects.order_by("position").values_list("role", flat=True)) == [
        "user",
        "assistant",
    ]
    session = TutorSession.objects.get(pk=session_id)
    assert (session.message_count, session.reply_pending_since) == (2, None)
    assert not RecallTrace.objects.exists() and not LessonHit.objects.exists()
    assert ModelCall.objects.filter(model="offline").count() == 1
    assert "after-send effects failed" in caplog.text


@pytest.mark.django_db
def test_an_offline_reply_that_outlived_its_claim_is_dropped_and_its_call_recorded(
    student_client, session_id, monkeypatch
):
    taken_over = {}
    real_reply = sessions.offline_reply

    def slow_reply(**kwargs):
        taken_over["since"] = claim_aged(session_id, 0)  # another request took the session meanwhile
        return real_reply(**kwargs)

    monkeypatch.setattr(sessions, "offline_reply", slow_reply)

    response = send(student_client, session_id, "first")

    assert response.status_code == 503
    assert list(TutorMessage.objects.values_list("role", "content")) == [("user", "first")]
    assert TutorSession.objects.get(pk=session_id).reply_pending_since == taken_over["since"]
    assert not RecallTrace.objects.exists()
    call = ModelCall.objects.get()
    assert call.model == "offline" and call.request_messages[-1] == {"role": "user", "content": "first"}


@pytest.mark.django_db
def test_a_taken_position_leaves_the_session_unclaimed_and_uncounted(
    student, task, student_client, session_id
):
    """A request that outlived its claim stored an exchange after all: the
    next position is taken, so the claim and the message roll back together
    (409) -- the session takes the next message at once."""
    TutorMessage.objects.create(session_id=session_id, position=1, role="user", content="stored late")

    response = send(student_client, session_id)

    assert response.status_code == 409
    session = TutorSession.objects.get(pk=session_id)
    assert (session.message_count, session.reply_pending_since) == (0, None)
    assert TutorMessage.objects.count() == 1


@pytest.fixture
def handled():
    from tutor.signals import user_message_handled

    calls = []

    def receiver(sender, message, session, reply, **kwargs):
        calls.append(None if reply is None else reply.role)

    user_message_handled.connect(receiver, weak=False)
    yield calls
    user_message_handled.disconnect(receiver)


@pytest.mark.django_db
def test_a_savepoint_that_cannot_be_rolled_back_is_a_503_not_a_lost_reply(
    course, task, student_client, session_id, monkeypatch, handled, django_capture_on_commit_callbacks
):
    """The effects fail and rolling back to their savepoint fails too (the
    connection broke): the reply's whole transaction can only roll back, so
    the turn is a 503 -- not a 201 for a reply that was never stored."""
    bulk_lessons(course, 3, tags=TASK_TAGS)
    import dataclasses

    from django.db import DatabaseError

    from lessons import providers as lesson_providers

    def failing(*args, **kwargs):
        raise RuntimeError("the effect failed")

    real_effects = lesson_providers.recall_effects

    def with_a_failing_follow_up(**kwargs):  # a follow-up: the effects are written apart
        return dataclasses.replace(real_effects(**kwargs), follow_up=failing)

    real_rollback, rollbacks = connection.savepoint_rollback, []

    def broken_rollback(sid):
        rollbacks.append(sid)
        if len(rollbacks) == 1:  # the effects' savepoint, the first rolled back
            raise DatabaseError("the connection broke")
        return real_rollback(sid)

    monkeypatch.setattr(lesson_providers, "recall_effects", with_a_failing_follow_up)
    monkeypatch.setattr(connection, "savepoint_rollback", broken_rollback)
    with django_capture_on_commit_callbacks(execute=True):
        response = send(student_client, session_id)

    assert response.status_code == 503, response.content
    monkeypatch.undo()
    assert list(TutorMessage.objects.values_list("role", flat=True)) == ["user"]
    assert TutorSession.objects.get(pk=session_id).reply_pending_since is None
    assert ModelCall.objects.filter(model="offline").count() == 1
    assert handled == [None]  # the hook ran once, for the 503


@pytest.mark.django_db(transaction=True)
def test_a_reply_whose_commit_fails_is_a_503_and_the_hook_runs_once(
    task, student_client, session_id, monkeypatch, handled
):
    """The reply's write fails at the connection -- its COMMIT on SQLite, its
    one statement on PostgreSQL (tutor.db.guarded_writes): whether it was
    written is not known, so it is not tried again."""
    from django.db import OperationalError

    real_commit = connection.commit
    commits = []

    def second_commit_fails():
        commits.append(1)
        if len(commits) == 2:  # the reply's transaction
            raise OperationalError("the server closed the connection")
        return real_commit()

    def reply_write_fails(execute, sql, params, many, context):
        if sql.startswith('WITH "guard"') and "tutor_modelcall" in sql:  # the reply's one statement
            raise OperationalError("the server closed the connection")
        return execute(sql, params, many, context)

    monkeypatch.setattr(connection, "commit", second_commit_fails)
    with connection.execute_wrapper(reply_write_fails):
        response = send(student_client, session_id)
    monkeypatch.undo()

    assert response.status_code == 503, response.content
    assert list(TutorMessage.objects.values_list("role", flat=True)) == ["user"]
    assert TutorSession.objects.get(pk=session_id).reply_pending_since is None
    assert ModelCall.objects.filter(model="offline").count() == 1
    assert handled == [None]
