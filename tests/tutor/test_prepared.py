"""Prepared hot-path queries (SPEC §10): each runs exactly the SQL its ORM
queryset compiles to and returns exactly the rows the ORM returns, on the
database the suite runs on (CI runs it on SQLite and on PostgreSQL)."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.db.models import DateField, FloatField, Value
from django.test.utils import CaptureQueriesContext, isolate_apps
from django.utils import timezone

from feedback.models import AttemptStatus, Submission
from feedback.selectors import LATEST_ROW, LATEST_ROW_WITHOUT_RUBRIC
from feedback.versions import current_versions
from tests.factories import enroll, make_attempt, make_course, make_submission, make_task
from tests.lessons.conftest import make_lesson
from tutor.chat.selectors import (
    EARLIER_MESSAGES,
    OWNED_SESSION,
    STUDENT_TASK,
    STUDENT_TASK_SESSION,
    student_task,
)
from tutor.chat.services import CLAIM, REPLY, session_open
from tutor.db.inserts import PreparedInsert, prepared_insert
from tutor.db.prepared import PreparationError, PreparedQuery, PreparedUpdate, Updated
from tutor.models import Course, Rubric, Task, TutorMessage, TutorSession

# A session's message count set to a value: the plainest update there is.
COUNT = PreparedUpdate(
    lambda *, session_id, count: (TutorSession.objects.filter(pk=session_id), {"message_count": count}),
    returning="message_count",
    session_id="uuid",
    count="int",
)


def assert_matches_orm(prepared: PreparedQuery, **values):
    queryset = prepared.build(**values)
    shape = {name: values[name] for name in prepared.shape}
    lengths = {name: len(v) for name, v in values.items() if isinstance(v, list)}
    orm_sql = queryset.query.get_compiler("default").as_sql()[0]
    assert prepared.compiled(lengths=lengths, **shape).sql == orm_sql
    expected = list(queryset)
    # Three runs: on PostgreSQL the third runs as a server-side prepared statement.
    # Its ``raw`` columns come as the database gave them, and convert to the ORM's values.
    runs = [
        [{**row, **prepared.convert(row, prepared.raw, **shape)} for row in prepared.rows(**values)]
        for _ in range(3)
    ]
    assert runs == [expected] * 3
    return runs[0]


def test_feedback_selection_matches_the_orm_in_every_state(task, student, other_student):
    versions = current_versions(task).compatible_filter()
    cases = []
    cases.append(assert_matches_orm(LATEST_ROW, student_id=student.pk, task_id=task.pk, **versions))  # none
    submission = make_submission(student, task)
    cases.append(
        assert_matches_orm(LATEST_ROW, student_id=student.pk, task_id=task.pk, **versions)
    )  # pending
    make_attempt(submission)
    make_attempt(submission, AttemptStatus.QUEUED)
    make_attempt(make_submission(other_student, task))
    cases.append(assert_matches_orm(LATEST_ROW, student_id=student.pk, task_id=task.pk, **versions))
    stale = {**versions, "rubric_version": "1999.1"}
    cases.append(assert_matches_orm(LATEST_ROW, student_id=student.pk, task_id=task.pk, **stale))
    cases.append(assert_matches_orm(LATEST_ROW_WITHOUT_RUBRIC, student_id=student.pk, task_id=task.pk))

    assert cases[0] == []
    assert cases[1][0]["attempts__id"] is None
    assert cases[2][0]["attempts__status"] == "queued" and isinstance(cases[2][0]["attempts__id"], uuid.UUID)
    assert cases[3][0]["attempts__status"] == "queued"  # no compatible attempt: the newest of any versions


def folded_feedback_rows(student, task, versions: dict) -> tuple[list[dict], list[dict]]:
    """The feedback row as the context preview's and a turn's statements carry
    it (tutor.db.jsonrows), each with ``versions``' prompt and engine versions."""
    from feedback.selectors import latest_row_rows

    folded = {
        **FOLDED,
        "prompt_version": versions["prompt_version"],
        "engine_version": versions["engine_version"],
    }
    [task_row] = STUDENT_TASK_SESSION.rows(user_id=student.pk, task_id=task.pk, **folded)
    session, _ = session_open(student=student, task=task)
    [session_row] = OWNED_SESSION.rows(user_id=student.pk, session_id=session.pk, **folded)
    return latest_row_rows(task_row["feedback"]), latest_row_rows(session_row["feedback"])


def test_the_statements_that_carry_the_feedback_row_carry_the_selectors_row_in_every_state(
    task, student, other_student
):
    """The row the task's and the session's statements carry is the row the
    feedback selector's own statement returns: none, pending without an
    attempt, a queued attempt over a completed one, no compatible attempt,
    a terminal one with its JSON result -- and under changed versions."""
    versions = current_versions(task).compatible_filter()

    def both_match(**changed):
        wanted = {**versions, **changed}
        expected = LATEST_ROW.rows(student_id=student.pk, task_id=task.pk, **wanted)
        assert folded_feedback_rows(student, task, wanted) == (expected, expected)
        return expected

    assert both_match() == []  # no submission
    submission = make_submission(student, task)
    assert both_match()[0]["attempts__id"] is None  # pending, no attempt
    make_attempt(submission)
    make_attempt(make_submission(other_student, task))
    [completed] = both_match()
    assert (
        completed["attempts__result"]["overall"] == "PASS" and completed["attempts__reused_from_id"] is None
    )
    make_attempt(submission, AttemptStatus.QUEUED)
    assert both_match()[0]["attempts__status"] == "queued"
    assert (
        both_match(prompt_version="1999.1")[0]["attempts__status"] == "queued"
    )  # none compatible: the newest
    assert both_match(engine_version="0")[0]["attempts__id"] is not None


def test_the_folded_feedback_row_of_a_task_without_a_rubric_has_no_compatible_attempt(task, student):
    make_attempt(make_submission(student, task))
    make_attempt(Submission.objects.get(), AttemptStatus.QUEUED)
    Task.objects.filter(pk=task.pk).update(current_rubric=None)
    versions = current_versions(task).compatible_filter()

    expected = LATEST_ROW_WITHOUT_RUBRIC.rows(student_id=student.pk, task_id=task.pk)
    assert folded_feedback_rows(student, task, versions) == (expected, expected)


def test_the_statements_that_carry_history_carry_the_newest_messages(task, student):
    from tutor.chat.selectors import history_from_column

    session, _ = session_open(student=student, task=task)
    TutorMessage.objects.bulk_create(
        TutorMessage(session=session, position=p, role="user" if p % 2 else "assistant", content=f"m{p} ünï")
        for p in range(1, 31)
    )
    expected = EARLIER_MESSAGES.rows(session_id=session.pk, before_position=31, max_messages=12)
    expected.reverse()  # oldest first, as earlier_messages returns them
    for max_messages, wanted in ((12, expected), (3, expected[-3:]), (0, [])):
        folded = {**FOLDED, "max_messages": max_messages}
        [task_row] = STUDENT_TASK_SESSION.rows(user_id=student.pk, task_id=task.pk, **folded)
        [session_row] = OWNED_SESSION.rows(user_id=student.pk, session_id=session.pk, **folded)
        assert (
            history_from_column(task_row["history"]) == wanted == history_from_column(session_row["history"])
        )
    assert wanted == [] and expected[0] == {"role": "user", "content": "m19 ünï"}


def test_json_results_come_back_decoded(task, student):
    make_attempt(make_submission(student, task))

    (row,) = assert_matches_orm(
        LATEST_ROW, student_id=student.pk, task_id=task.pk, **current_versions(task).compatible_filter()
    )

    assert row["attempts__result"]["overall"] == "PASS"


# What the task's and the session's statements read besides their rows (tutor.chat.selectors).
FOLDED = {"prompt_version": "2024.1", "engine_version": "1", "max_messages": 12}


def test_student_task_and_sessions_match_the_orm(task, student, other_student, staff):
    assert len(assert_matches_orm(STUDENT_TASK, user_id=student.pk, task_id=task.pk)) == 1
    assert assert_matches_orm(STUDENT_TASK, user_id=staff.pk, task_id=task.pk) == []  # staff, not student
    assert assert_matches_orm(STUDENT_TASK, user_id=student.pk, task_id=uuid.uuid4()) == []
    other_task = make_task(make_course("other-202"))
    assert assert_matches_orm(STUDENT_TASK, user_id=student.pk, task_id=other_task.pk) == []

    [row] = assert_matches_orm(STUDENT_TASK_SESSION, user_id=student.pk, task_id=task.pk, **FOLDED)
    assert row["open_session_id"] is None  # no session yet
    archived, _ = session_open(student=student, task=task)
    session, _ = session_open(student=student, task=task, new=True)  # archives the first
    [row] = assert_matches_orm(STUDENT_TASK_SESSION, user_id=student.pk, task_id=task.pk, **FOLDED)
    assert row["open_session_id"] == session.pk != archived.pk and row["id"] == task.pk
    [row] = assert_matches_orm(STUDENT_TASK_SESSION, user_id=other_student.pk, task_id=task.pk, **FOLDED)
    assert row["open_session_id"] is None  # another student's session is not theirs
    assert assert_matches_orm(STUDENT_TASK_SESSION, user_id=staff.pk, task_id=task.pk, **FOLDED) == []
    assert len(assert_matches_orm(OWNED_SESSION, user_id=student.pk, session_id=session.pk, **FOLDED)) == 1
    assert assert_matches_orm(OWNED_SESSION, user_id=other_student.pk, session_id=session.pk, **FOLDED) == []

    for position in range(1, 31):
        TutorMessage.objects.create(session=session, position=position, role="user", content=f"m{position}")
    rows = assert_matches_orm(EARLIER_MESSAGES, session_id=session.pk, before_position=20, max_messages=12)
    assert [r["content"] for r in rows] == [f"m{p}" for p in range(19, 7, -1)]
    rows = assert_matches_orm(EARLIER_MESSAGES, session_id=session.pk, before_position=20, max_messages=3)
    assert len(rows) == 3

    # Correction detection's read of a user message's text (corrections.selectors).
    from corrections.selectors import USER_MESSAGE_TEXT

    user = TutorMessage.objects.get(session=session, position=5)
    assistant = TutorMessage.objects.create(session=session, position=31, role="assistant", content="a")
    assert assert_matches_orm(USER_MESSAGE_TEXT, message_id=user.pk) == [{"content": "m5"}]
    assert assert_matches_orm(USER_MESSAGE_TEXT, message_id=assistant.pk) == []
    assert assert_matches_orm(USER_MESSAGE_TEXT, message_id=uuid.uuid4()) == []


def test_rebuilt_task_carries_its_course_and_rubric_without_more_queries(
    task, student, django_assert_num_queries
):
    with django_assert_num_queries(1):  # the one prepared statement
        rebuilt = student_task(student, task.pk)
        assert rebuilt.course.slug == task.course.slug
        assert rebuilt.current_rubric.criteria == task.current_rubric.criteria
        assert rebuilt == task


def test_a_task_without_a_rubric_comes_back_with_none(db):
    course = make_course("norubric-101")
    task = make_task(course)
    student = enroll(course, "nina")
    type(task).objects.filter(pk=task.pk).update(current_rubric=None)

    assert student_task(student, task.pk).current_rubric is None


def test_a_rewritten_parameter_is_refused_at_preparation(task):
    prepared = PreparedQuery(lambda slug: Task.objects.filter(slug__icontains=slug).values("id"), slug="str")

    with pytest.raises(PreparationError, match="slug"):
        prepared.rows(slug="t1")


def test_list_and_float_parameters_compile_once_per_list_length(course):
    make_task(course, "t1")  # the course fixture's task
    prepared = PreparedQuery(
        lambda slugs, weight: (
            Task.objects.filter(course=course, slug__in=slugs)
            .annotate(weight=Value(weight, output_field=FloatField()))
            .values("slug", "weight")
            .order_by("slug")
        ),
        slugs="str[]",
        weight="float",
    )

    assert assert_matches_orm(prepared, slugs=["t1", "nope"], weight=0.25) == [{"slug": "t1", "weight": 0.25}]
    assert assert_matches_orm(prepared, slugs=["nope", "t1"], weight=0.5) == [{"slug": "t1", "weight": 0.5}]
    assert assert_matches_orm(prepared, slugs=["t1"], weight=1.0) == [{"slug": "t1", "weight": 1.0}]
    assert prepared.rows(slugs=[], weight=0.1) == []  # an empty IN list matches nothing
    assert len(prepared.compiled_shapes) == 3  # lengths 2, 1 and 0


def test_date_parameters_and_an_annotation_selected_before_a_field(course):
    prepared = PreparedQuery(
        lambda day: (
            Course.objects.filter(pk=course.pk, created_at__date__lte=day)
            .annotate(day=Value(day, output_field=DateField()))
            .values("day", "slug")
        ),
        day="date",
    )
    today = timezone.localdate()

    # Each value under its own name: the row's columns come in the order values() gave.
    assert assert_matches_orm(prepared, day=today) == [{"day": today, "slug": course.slug}]
    assert assert_matches_orm(prepared, day=today - timedelta(days=1)) == []


def test_datetime_parameters_match_the_orm(course):
    task = make_task(course, "t1")
    prepared = PreparedQuery(
        lambda since: Rubric.objects.filter(task__course=course, created_at__gte=since).values("version"),
        since="datetime",
    )
    created = Rubric.objects.get(task=task).created_at

    assert assert_matches_orm(prepared, since=created - timedelta(seconds=1)) == [{"version": "2026.1"}]
    assert assert_matches_orm(prepared, since=created) == [{"version": "2026.1"}]  # to the microsecond
    assert assert_matches_orm(prepared, since=created + timedelta(microseconds=1)) == []
    assert assert_matches_orm(prepared, since=timezone.now() + timedelta(days=1)) == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("kind", "value"),
    [
        ("str", "wörd"),
        ("int", 7),
        ("float", 0.25),
        ("int", True),
        ("str", 5),
        ("float", 3),
        ("uuid", uuid.uuid4()),
    ],
)
def test_a_parameter_reaches_the_database_as_its_field_would_send_it(kind, value):
    """The shortcut for exact str/int/float values gives what the field gives;
    any other type (a bool for an int, an int for a str) still goes through it."""
    from django.db import connection

    from tutor.db.prepared import KIND_FIELDS

    prepared = PreparedQuery(lambda **_: Course.objects.values("id"), value=kind)
    sent = prepared.db_value("value", value, connection)

    expected = KIND_FIELDS[kind].get_db_prep_value(value, connection, prepared=False)
    assert sent == expected and type(sent) is type(expected)


# --- prepared updates ----------------------------------------------------------------------


def statements_of(run) -> tuple[list[tuple], object]:
    """The statements ``run()`` sends, as Django's execute wrappers see them
    (SQL in Django's form, its parameters), and what it returned."""
    from django.db import connection

    seen = []

    def wrapper(execute, sql, params, many, context):
        seen.append((sql, list(params)))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(wrapper):
        result = run()
    return seen, result


def _kind(value) -> type:
    return int if isinstance(value, int) and not isinstance(value, bool) else type(value)


def session_row(session_id) -> dict:
    return TutorSession.objects.values("message_count", "reply_pending_since", "archived").get(pk=session_id)


def assert_update_matches_orm(prepared: PreparedUpdate, row_id, /, **values) -> Updated:
    """``prepared.run`` sends the ORM's own UPDATE with RETURNING appended,
    with the same parameters, and leaves the row as ``queryset.update`` does
    (which is run first, then rolled back to a savepoint)."""
    queryset, changes = prepared.build(**values)
    savepoint = transaction.savepoint()
    orm_statements, orm_count = statements_of(lambda: queryset.update(**changes))
    orm_row = session_row(row_id)
    transaction.savepoint_rollback(savepoint)

    statements, updated = statements_of(lambda: prepared.run("default", **values))

    [(orm_sql, orm_params)] = orm_statements
    assert statements == [(f'{orm_sql} RETURNING "{prepared.returning}"', orm_params)]
    # Of the same types too, but for integers: an "int" parameter goes as a
    # 64-bit integer on PostgreSQL (the server converts it on assignment).
    [(_, params)] = statements
    assert [_kind(p) for p in params] == [_kind(p) for p in orm_params]
    assert session_row(row_id) == orm_row
    assert updated.count == orm_count
    assert updated.values == [orm_row["message_count"]] * orm_count
    return updated


def test_the_tutor_turn_updates_match_the_orm(task, student):
    """Three turns (on PostgreSQL the third runs each update as a server-side
    prepared statement): the claim takes a free slot, counts the user
    message and returns the count, refuses a held one, and takes over an expired one; the reply update
    releases only the claim it is given."""
    session, _ = session_open(student=student, task=task)
    for turn in range(3):
        now = timezone.now()
        expiry = now - timedelta(seconds=60)
        claimed = assert_update_matches_orm(
            CLAIM, session.pk, session_id=session.pk, now=now, expired_before=expiry
        )
        assert claimed.values == [2 * turn + 1]  # the user message's position
        # Held: a second claim finds nothing.
        later = now + timedelta(seconds=1)
        busy = assert_update_matches_orm(
            CLAIM, session.pk, session_id=session.pk, now=later, expired_before=expiry
        )
        assert busy.count == 0
        # Someone else's claim is not released.
        other = now - timedelta(microseconds=1)
        assert (
            assert_update_matches_orm(REPLY, session.pk, session_id=session.pk, claim=other, count=9).count
            == 0
        )
        released = assert_update_matches_orm(
            REPLY, session.pk, session_id=session.pk, claim=now, count=2 * turn + 2
        )
        assert released.values == [2 * turn + 2]
        assert session_row(session.pk)["reply_pending_since"] is None

    TutorSession.objects.filter(pk=session.pk).update(reply_pending_since=timezone.now() - timedelta(hours=1))
    now = timezone.now()
    taken_over = assert_update_matches_orm(
        CLAIM, session.pk, session_id=session.pk, now=now, expired_before=now - timedelta(seconds=60)
    )
    assert taken_over.count == 1
    TutorSession.objects.filter(pk=session.pk).update(archived=True, reply_pending_since=None)
    assert (
        assert_update_matches_orm(CLAIM, session.pk, session_id=session.pk, now=now, expired_before=now).count
        == 0
    )


def test_an_update_filtered_across_a_relation_matches_the_orm(task, student, other_student):
    """A filter through a join becomes ``pk IN (subquery)``, as the ORM sends it."""
    mine, _ = session_open(student=student, task=task)
    theirs, _ = session_open(student=other_student, task=task)
    prepared = PreparedUpdate(
        lambda username, count: (
            TutorSession.objects.filter(student__username=username, task__course_id=task.course_id),
            {"message_count": count},
        ),
        returning="message_count",
        username="str",
        count="int",
    )

    assert assert_update_matches_orm(prepared, mine.pk, username=student.username, count=7).count == 1
    assert session_row(mine.pk)["message_count"] == 7
    assert session_row(theirs.pk)["message_count"] == 0


def test_an_update_without_returning_runs_as_the_orm_update(task, student, monkeypatch):
    """SQLite before 3.35: the ORM's own statement, the count alone known."""
    from tutor.db import prepared

    monkeypatch.setattr(prepared, "update_returning_supported", lambda connection: False)
    session, _ = session_open(student=student, task=task)
    queryset, changes = COUNT.build(session_id=session.pk, count=5)
    orm_statements, _ = statements_of(lambda: queryset.update(**changes))

    statements, updated = statements_of(lambda: COUNT.run("default", session_id=session.pk, count=6))

    assert updated == Updated(count=1, values=None)
    assert [sql for sql, _ in statements] == [sql for sql, _ in orm_statements]
    assert session_row(session.pk)["message_count"] == 6
    assert COUNT.run("default", session_id=uuid.uuid4(), count=1) == Updated(count=0, values=None)


def test_an_update_of_an_empty_list_matches_nothing_without_a_statement(task, student):
    session, _ = session_open(student=student, task=task)
    prepared = PreparedUpdate(
        lambda ids, count: (TutorSession.objects.filter(pk__in=ids), {"message_count": count}),
        returning="message_count",
        ids="uuid[]",
        count="int",
    )

    statements, updated = statements_of(lambda: prepared.run("default", ids=[], count=3))

    assert (statements, updated) == ([], Updated(count=0, values=[]))
    assert prepared.run("default", ids=[session.pk, uuid.uuid4()], count=3) == Updated(count=1, values=[3])


def test_an_update_that_sets_nothing_is_refused(task):
    prepared = PreparedUpdate(lambda: (TutorSession.objects.all(), {}), returning="message_count")

    with pytest.raises(PreparationError, match="sets nothing"):
        prepared.run("default")


def test_a_sliced_update_is_refused_as_the_orm_refuses_it(task):
    prepared = PreparedUpdate(
        lambda count: (TutorSession.objects.order_by("id")[:1], {"message_count": count}),
        returning="message_count",
        count="int",
    )

    with pytest.raises(PreparationError, match="sliced"):
        prepared.run("default", count=1)


def test_updates_that_django_prepares_before_compiling_match_the_orm(task, student):
    """Annotations in the ordering are inlined and the selected columns
    cleared, as ``QuerySet.update`` does, also behind a relation's pk IN."""
    from django.db.models import Count, F

    session, _ = session_open(student=student, task=task)
    querysets = {
        "annotation filtered": lambda username: (
            TutorSession.objects.annotate(c=Count("messages"))
            .filter(student__username=username, c__gte=0)
            .values("c")
        ),
        "ordered by an annotation": lambda username: (
            TutorSession.objects.annotate(x=F("task__id")).filter(student__username=username).order_by("-x")
        ),
        "columns selected": lambda username: TutorSession.objects.filter(
            student__username=username
        ).values_list("task__title"),
    }
    for n, (name, build) in enumerate(querysets.items(), start=1):
        prepared = PreparedUpdate(
            lambda username, count, build=build: (build(username), {"message_count": count}),
            returning="message_count",
            username="str",
            count="int",
        )
        assert assert_update_matches_orm(prepared, session.pk, username=student.username, count=n).values == [
            n
        ], name


def test_a_combined_queryset_is_refused_as_the_orm_refuses_it(task, student, other_student):
    mine, _ = session_open(student=student, task=task)
    prepared = PreparedUpdate(
        lambda session_id, count: (
            TutorSession.objects.filter(pk=session_id).union(
                TutorSession.objects.filter(student=other_student)
            ),
            {"message_count": count},
        ),
        returning="message_count",
        session_id="uuid",
        count="int",
    )

    with pytest.raises(PreparationError, match="union"):
        prepared.run("default", session_id=mine.pk, count=1)


def test_a_failed_update_inside_a_transaction_marks_it_for_rollback(task, student):
    """As ``QuerySet.update``: the atomic block cannot go on as if it had worked."""
    from django.db import DatabaseError, connection

    session, _ = session_open(student=student, task=task)
    COUNT.run("default", session_id=session.pk, count=1)  # compiled outside the block
    with transaction.atomic():
        with pytest.raises(DatabaseError):
            COUNT.run("default", session_id=session.pk, count=-1)  # message_count is positive
        assert connection.needs_rollback  # so the block is rolled back (to its savepoint) on leaving
    assert session_row(session.pk)["message_count"] == 1


def test_none_is_refused_as_a_parameter(task, student):
    """The ORM writes a comparison with None as IS NULL; a bound None would
    compare as = NULL and match nothing."""
    session, _ = session_open(student=student, task=task)

    with pytest.raises(ValueError, match="claim: None"):
        REPLY.run("default", session_id=session.pk, claim=None, count=1)
    with pytest.raises(ValueError, match="task_id: None"):
        STUDENT_TASK.rows(user_id=student.pk, task_id=None)


# --- PreparedInsert: the turn's rows, as create() writes them ---------------

NOW = timezone.now().replace(microsecond=123456)


def _stored(model, pk) -> dict:
    return model.objects.values().get(pk=pk)


def _comparable(statements: list[tuple]) -> list[tuple]:
    """psycopg's JSON wrapper has no equality: its object instead."""
    return [
        (sql, [(type(p), p.obj) if hasattr(p, "obj") else p for p in params]) for sql, params in statements
    ]


def assert_insert_matches_orm(prepared: PreparedInsert, monkeypatch, **values):
    """``prepared.create(**values)`` sends the ORM's own INSERT with the same
    parameters and stores the same row as ``model.objects.create(**values)``
    (run first, then rolled back to a savepoint); ``auto_now_add`` fields
    are filled at the same frozen time."""
    from django.db import connection

    model = prepared.model
    monkeypatch.setattr(timezone, "now", lambda: NOW)
    savepoint = transaction.savepoint()
    orm_statements, orm_obj = statements_of(lambda: model.objects.create(**values))
    orm_row = _stored(model, orm_obj.pk)  # create() knows the key, also one it read back
    transaction.savepoint_rollback(savepoint)

    statements, obj = statements_of(lambda: prepared.create(**values))

    # The model's INSERT, then what its receivers write (the user message's outbox row).
    (orm_sql, orm_params), receivers = orm_statements[0], orm_statements[1:]
    if model._meta.auto_field is not None and model._meta.pk.attname not in values:
        # create() reads an automatic key back; a prepared insert leaves it to the database.
        column = connection.ops.quote_name(model._meta.pk.column)
        orm_sql, returned = re.subn(rf" RETURNING (\S+\.)?{re.escape(column)}$", "", orm_sql)
        assert returned == 1
        assert obj.pk is None
    assert _comparable(statements) == _comparable([(orm_sql, orm_params), *receivers])
    assert [type(p) for p in statements[0][1]] == [type(p) for p in orm_params]
    assert not obj._state.adding and obj._state.db == "default"
    key = model._meta.pk.attname
    if obj.pk is not None:  # given, or a one-to-one key taken from its object
        assert obj.pk == orm_obj.pk
        assert _stored(model, obj.pk) == orm_row
    else:  # an automatic key: the one row of these values, its key aside
        [row] = model.objects.filter(**values).values()
        assert {k: v for k, v in row.items() if k != key} == {k: v for k, v in orm_row.items() if k != key}
    return obj


def test_the_tutor_turn_inserts_match_the_orm(task, student, monkeypatch):
    """Each row a turn writes: its two messages (with JSON), the model call
    (JSON, a null foreign key), the detection outbox row (a one-to-one
    primary key), the recall trace and a recalled lesson (an automatic key)."""
    from corrections.models import PendingDetection
    from lessons.models import RecalledLesson, RecallTrace
    from tutor.chat.services import MESSAGE
    from tutor.llm import MODEL_CALL
    from tutor.models import ModelCall

    outbox, traces, recalled = (prepared_insert(m) for m in (PendingDetection, RecallTrace, RecalledLesson))
    session, _ = session_open(student=student, task=task)
    message = assert_insert_matches_orm(
        MESSAGE, monkeypatch, id=uuid.uuid4(), session=session, position=1, role=TutorMessage.Role.USER,
        content="ünïcode \u2028 and a 'quote': it is 630 mm", correlation_id="c1",
        context_meta={"a": [1, "x"], "b": None},
    )  # fmt: skip
    assert_insert_matches_orm(
        outbox, monkeypatch, message=message, correlation_id="c1", due_at=NOW + timedelta(hours=1)
    )
    assert_insert_matches_orm(
        MODEL_CALL, monkeypatch, id=uuid.uuid4(), purpose="tutor", course_id=None, correlation_id="c1",
        model="offline", request_messages=[{"role": "user", "content": "hi"}], response_text="hello",
        status=ModelCall.Status.OFFLINE,
    )  # fmt: skip
    trace = assert_insert_matches_orm(
        traces, monkeypatch, id=uuid.uuid4(), correlation_id="c1", course_id=task.course_id, student=student,
        task=task, session_id=session.pk, context={"tags": ["t"]}, params={"top_k": 3}, lines=[],
        counts={"recalled": 0}, omitted={}, used_tokens=0, budget_tokens=800,
    )  # fmt: skip
    lesson = make_lesson(course=task.course)
    assert_insert_matches_orm(recalled, monkeypatch, trace=trace, lesson=lesson, rank=1)
    assert RecalledLesson.objects.filter(trace=trace).count() == 1
    assert RecallTrace.objects.filter(pk=trace.pk).exists()


def test_create_many_stores_the_rows_bulk_create_stores(task, student):
    """One INSERT run per row (one ``executemany``), the rows as ``bulk_create`` leaves them."""
    from lessons.models import RecalledLesson, RecallTrace

    RECALLED = prepared_insert(RecalledLesson)
    trace = RecallTrace.objects.create(
        correlation_id="c", course_id=task.course_id, student=student, task=task, context={}, params={},
        lines=[], counts={}, omitted={}, used_tokens=0, budget_tokens=800,
    )  # fmt: skip
    lessons = [make_lesson(course=task.course, title=f"L{i}") for i in range(3)]

    def rows():
        return list(RecalledLesson.objects.filter(trace=trace).order_by("rank").values("lesson_id", "rank"))

    savepoint = transaction.savepoint()
    RecalledLesson.objects.bulk_create(
        RecalledLesson(trace=trace, lesson=lesson, rank=i) for i, lesson in enumerate(lessons, 1)
    )
    expected = rows()
    transaction.savepoint_rollback(savepoint)

    statements, _ = statements_of(
        lambda: RECALLED.create_many(
            [RecalledLesson(trace=trace, lesson=lesson, rank=i) for i, lesson in enumerate(lessons, 1)]
        )
    )
    assert rows() == expected and len(expected) == 3
    [(sql, params)] = statements
    assert sql == RECALLED.sql("default") and len(params) == 3
    assert RECALLED.create_many([]) == []


def test_an_insert_sends_the_signals_create_sends(task, student):
    from django.db.models.signals import post_save, pre_save

    from tutor.chat.services import MESSAGE

    session, _ = session_open(student=student, task=task)
    seen = []

    def receiver(signal, sender, instance, **kwargs):
        seen.append((signal, sender, instance.pk, instance._state.adding, kwargs))

    pre_save.connect(receiver, sender=TutorMessage)
    post_save.connect(receiver, sender=TutorMessage)
    try:
        message = MESSAGE.create(session=session, position=1, role="user", content="x", correlation_id="c")
    finally:
        pre_save.disconnect(receiver, sender=TutorMessage)
        post_save.disconnect(receiver, sender=TutorMessage)

    common = {"raw": False, "using": "default", "update_fields": None}
    assert seen == [
        (pre_save, TutorMessage, message.pk, True, common),
        (post_save, TutorMessage, message.pk, False, {**common, "created": True}),
    ]


def test_a_failed_insert_inside_a_transaction_marks_it_for_rollback(task, student):
    from django.db import IntegrityError, connection

    from tutor.chat.services import MESSAGE

    session, _ = session_open(student=student, task=task)
    MESSAGE.create(session=session, position=1, role="user", content="x", correlation_id="c")
    with transaction.atomic():
        with pytest.raises(IntegrityError):  # the position is taken
            MESSAGE.create(session=session, position=1, role="user", content="y", correlation_id="c")
        assert connection.needs_rollback
    assert list(TutorMessage.objects.filter(session=session).values_list("content", flat=True)) == ["x"]


def test_an_expression_is_refused_as_a_value(task, student):
    from django.db.models import F

    from tutor.chat.services import MESSAGE

    session, _ = session_open(student=student, task=task)
    with pytest.raises(PreparationError, match="position: an expression"):
        MESSAGE.create(session=session, position=F("position"), role="user", content="x", correlation_id="c")
    assert not TutorMessage.objects.filter(session=session).exists()


@isolate_apps("tutor")
def test_rows_the_database_completes_are_refused():
    """A column the database fills in, or a parent model's row: more than this INSERT."""
    from django.db import models

    class Filled(models.Model):  # noqa: DJ008
        number = models.IntegerField(db_default=1)

        class Meta:
            app_label = "tutor"

    class Parent(models.Model):  # noqa: DJ008
        class Meta:
            app_label = "tutor"

    class Child(Parent):  # noqa: DJ008
        class Meta:
            app_label = "tutor"

    with pytest.raises(PreparationError, match="fills"):
        PreparedInsert(Filled)
    with pytest.raises(PreparationError, match="parent"):
        PreparedInsert(Child)
    assert PreparedInsert(Parent).fields == ()


def test_an_insert_ignoring_conflicts_is_bulk_creates_and_skips_what_a_unique_constraint_holds(course):
    from django.db.models.signals import post_save

    from lessons.models import SkillCandidate
    from tests.lessons.conftest import make_lesson

    held, new = make_lesson(course=course), make_lesson(course=course)
    SkillCandidate.objects.create(lesson=held, hit_count=3, status="dismissed")
    sent = []

    def receiver(**kwargs):
        sent.append(kwargs)

    post_save.connect(receiver, sender=SkillCandidate)
    try:
        with CaptureQueriesContext(connection) as captured:
            prepared_insert(SkillCandidate).insert_ignoring(
                [SkillCandidate(lesson=held, hit_count=9), SkillCandidate(lesson=new, hit_count=4)], "default"
            )
    finally:
        post_save.disconnect(receiver, sender=SkillCandidate)

    with CaptureQueriesContext(connection) as orm:
        SkillCandidate.objects.bulk_create([SkillCandidate(lesson=held, hit_count=9)], ignore_conflicts=True)
    head = captured.captured_queries[0]["sql"].removeprefix("2 times: ").split(" VALUES")[0]
    assert head == orm.captured_queries[0]["sql"].split(" VALUES")[0]  # (an executemany of two rows)
    candidates = dict(SkillCandidate.objects.values_list("lesson_id", "hit_count"))
    assert candidates == {held.pk: 3, new.pk: 4} and sent == []
