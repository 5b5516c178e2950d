"""An UPDATE and the rows written with it, only when it changed a row
(``tutor.db.guarded_writes``), on the database the suite runs on: one statement
on PostgreSQL made of the ORM's own statements, a transaction on SQLite."""

from __future__ import annotations

import uuid
from datetime import date, timedelta

import pytest
from django.db import IntegrityError, connection, transaction
from django.db.models.signals import post_save, pre_save
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from lessons.models import Lesson, RecalledLesson, RecallTrace, SkillCandidate
from tests.lessons.conftest import make_lesson
from tutor.chat.services import CLAIM, MESSAGE, REPLY, session_open
from tutor.db.guarded_writes import GUARD, Count, Row, counts_run, guarded_write, statement_sql
from tutor.db.inserts import prepared_insert
from tutor.llm import MODEL_CALL
from tutor.models import ModelCall, TutorMessage, TutorSession

pytestmark = pytest.mark.django_db

# The recall trace and its lessons, as a turn writes them (Row.of).
TRACE, RECALLED = prepared_insert(RecallTrace), prepared_insert(RecalledLesson)


def claim_values(session, now=None) -> dict:
    now = now or timezone.now()
    return {"session_id": session.pk, "now": now, "expired_before": now - timedelta(minutes=5)}


def user_message(session, content="hello") -> TutorMessage:
    return TutorMessage(session=session, role=TutorMessage.Role.USER, content=content, correlation_id="c1")


def claim_with_a_message(session):
    """A turn's first write: the claim of ``session`` with a user message."""
    message = user_message(session)
    return guarded_write(
        CLAIM, claim_values(session), [Row(MESSAGE, message, ("position",))], using="default"
    )


def test_the_statement_is_the_orms_update_and_inserts(task, student):
    session, _ = session_open(student=student, task=task)
    rows = [Row(MESSAGE, user_message(session), from_guard=("position",))]
    compiled, _ = CLAIM.bound("default", claim_values(session))

    sql = statement_sql(compiled.sql, CLAIM.returning_column, rows, "default")

    assert sql.startswith(f'WITH "{GUARD}" AS ({compiled.sql}), "row_0" AS (')
    head = MESSAGE.sql("default").split(" VALUES (")[0]
    values = ", ".join('"guard"."message_count"' if f.attname == "position" else "%s" for f in MESSAGE.fields)
    assert f'({head} SELECT {values} FROM "guard")' in sql
    assert sql.endswith('SELECT "message_count" FROM "guard"')


def test_rows_are_written_with_the_updates_returned_value_as_create_writes_them(task, student):
    session, _ = session_open(student=student, task=task)
    TutorSession.objects.filter(pk=session.pk).update(message_count=4)
    message = user_message(session, "ünïcode \u2028 'quoted'")
    call = ModelCall(purpose="tutor", correlation_id="c1", model="offline", request_messages=[{"a": 1}])

    updated = guarded_write(
        CLAIM,
        claim_values(session),
        [Row(MESSAGE, message, ("position",)), Row(MODEL_CALL, call)],
        using="default",
    )

    assert (updated.count, updated.values, message.position) == (1, [5], 5)
    assert not message._state.adding and message._state.db == "default"
    stored = TutorMessage.objects.values().get(pk=message.pk)
    twin = TutorMessage.objects.create(
        session=session, position=6, role="user", content=message.content, correlation_id="c1"
    )
    expected = TutorMessage.objects.values().get(pk=twin.pk)
    for changed in ("id", "position", "created_at"):
        stored.pop(changed), expected.pop(changed)
    assert stored == expected
    assert ModelCall.objects.get(pk=call.pk).request_messages == [{"a": 1}]
    assert TutorSession.objects.get(pk=session.pk).reply_pending_since is not None


def test_nothing_is_written_when_the_update_changes_no_row(task, student):
    session, _ = session_open(student=student, task=task)
    held = timezone.now()
    TutorSession.objects.filter(pk=session.pk).update(reply_pending_since=held)  # another request's claim
    signals = []

    def seen(sender, **kwargs):
        signals.append(kwargs.get("created", "pre"))

    post_save.connect(seen, sender=TutorMessage)
    try:
        updated = claim_with_a_message(session)
    finally:
        post_save.disconnect(seen, sender=TutorMessage)

    assert updated.count == 0 and not TutorMessage.objects.exists() and signals == []
    assert TutorSession.objects.get(pk=session.pk).reply_pending_since == held


def test_signals_are_sent_around_the_write(task, student):
    session, _ = session_open(student=student, task=task)
    order = []

    def before(sender, instance, **kwargs):
        order.append(("pre", TutorMessage.objects.filter(pk=instance.pk).exists()))

    def after(sender, instance, created, **kwargs):
        order.append(
            ("post", created, instance.position, TutorMessage.objects.filter(pk=instance.pk).exists())
        )

    pre_save.connect(before, sender=TutorMessage)
    post_save.connect(after, sender=TutorMessage)
    try:
        claim_with_a_message(session)
    finally:
        pre_save.disconnect(before, sender=TutorMessage)
        post_save.disconnect(after, sender=TutorMessage)

    assert order == [("pre", False), ("post", True, 1, True)]


def test_a_refused_row_leaves_nothing_written_and_the_transaction_usable(task, student):
    """The reply's write of a turn: a trace the database refuses (its CHECK)
    takes the reply and the claim's release with it, and the transaction
    around goes on (on PostgreSQL the statement ran in a savepoint)."""
    session, _ = session_open(student=student, task=task)
    claim = timezone.now()
    TutorSession.objects.filter(pk=session.pk).update(reply_pending_since=claim, message_count=1)
    TutorMessage.objects.create(session=session, position=1, role="user", content="q")
    reply = TutorMessage(session=session, position=2, role="assistant", content="a", correlation_id="c1")
    trace = RecallTrace(
        correlation_id="c1", course_id=task.course_id, student=student, task=task, session_id=session.pk,
        context={}, params={}, lines=[], counts={}, omitted={}, used_tokens=0, budget_tokens=-1,
    )  # fmt: skip
    release = {"session_id": session.pk, "claim": claim, "count": 2}

    with transaction.atomic():
        with pytest.raises(IntegrityError):
            guarded_write(REPLY, release, [Row(MESSAGE, reply), Row(TRACE, trace)], using="default")
        assert TutorMessage.objects.count() == 1 and not RecallTrace.objects.exists()
        assert TutorSession.objects.get(pk=session.pk).reply_pending_since == claim

        trace.budget_tokens = 800
        lesson = make_lesson(course=task.course)
        recalled = [RecalledLesson(trace=trace, lesson=lesson, rank=1)]
        rows = [Row(MESSAGE, reply), Row(TRACE, trace), *(Row(RECALLED, r) for r in recalled)]
        assert guarded_write(REPLY, release, rows, using="default").count == 1
    assert TutorMessage.objects.count() == 2 and RecallTrace.objects.get().recalled.get() == lesson
    assert TutorSession.objects.get(pk=session.pk).reply_pending_since is None


def test_postgresql_writes_in_one_statement_sqlite_in_a_transaction(task, student):
    session, _ = session_open(student=student, task=task)
    rows = [Row(MESSAGE, user_message(session), ("position",))]
    with CaptureQueriesContext(connection) as captured:
        guarded_write(CLAIM, claim_values(session), rows, using="default")
    statements = [query["sql"].split(" ")[0] for query in captured.captured_queries]
    if connection.vendor == "postgresql":
        assert statements == ["SAVEPOINT", "WITH", "RELEASE"]  # in the test's transaction
    else:
        assert statements == ["SAVEPOINT", "UPDATE", "INSERT", "RELEASE"]
    assert TutorMessage.objects.get().pk == rows[0].obj.pk and uuid.UUID(str(rows[0].obj.pk))


def test_a_refused_write_after_its_statement_was_prepared_leaves_the_next_ones_working(task, student):
    """On PostgreSQL a write's statement is prepared on the server from its
    third run (tutor.db.statements); one the database refuses -- rolled
    back to its savepoint -- must not leave later runs a statement the
    server no longer has."""
    session, _ = session_open(student=student, task=task)
    for n in range(1, 5):  # claim, then release with a reply: prepared from the third run
        now = timezone.now()
        assert guarded_write(CLAIM, claim_values(session, now), [], using="default").count == 1
        reply = TutorMessage(session=session, position=n, role="assistant", content="a", correlation_id="c")
        release = {"session_id": session.pk, "claim": now, "count": n}
        assert guarded_write(REPLY, release, [Row(MESSAGE, reply)], using="default").count == 1
    now = timezone.now()
    guarded_write(CLAIM, claim_values(session, now), [], using="default")
    taken = TutorMessage(session=session, position=4, role="assistant", content="b", correlation_id="c")
    with pytest.raises(IntegrityError):  # position 4 is taken
        guarded_write(
            REPLY,
            {"session_id": session.pk, "claim": now, "count": 4},
            [Row(MESSAGE, taken)],
            using="default",
        )

    reply = TutorMessage(session=session, position=5, role="assistant", content="c", correlation_id="c")
    assert (
        guarded_write(
            REPLY,
            {"session_id": session.pk, "claim": now, "count": 5},
            [Row(MESSAGE, reply)],
            using="default",
        ).count
        == 1
    )
    assert list(TutorMessage.objects.order_by("position").values_list("content", flat=True)) == ["a"] * 4 + [
        "c"
    ]


def test_a_failing_post_save_receiver_takes_the_write_with_it(task, student):
    """As after create() in a transaction: a receiver runs inside the write,
    and its failure leaves the session unclaimed and the message unwritten
    (the student's next message is not refused as busy)."""
    session, _ = session_open(student=student, task=task)

    def broken(sender, instance, **kwargs):
        raise IntegrityError("a receiver's write was refused")

    post_save.connect(broken, sender=TutorMessage)
    try:
        with pytest.raises(IntegrityError):
            claim_with_a_message(session)
    finally:
        post_save.disconnect(broken, sender=TutorMessage)

    assert not TutorMessage.objects.exists()
    assert TutorSession.objects.get(pk=session.pk).reply_pending_since is None
    assert guarded_write(CLAIM, claim_values(session), [], using="default").count == 1


# --- counts written with the guarded write (a lesson's uses, SPEC §6) ----------------------------


def uses_of(*lessons, at=3) -> Count:
    """The lessons' uses counted as the tutor turn counts them, with a
    skill candidate for each that stands at ``at`` or more."""
    return Count(
        model=Lesson,
        pks=tuple(lesson.pk for lesson in lessons),
        counter="hit_count",
        also={"last_hit": date(2026, 3, 4)},
        at=at,
        then={lesson.pk: SkillCandidate(lesson_id=lesson.pk, hit_count=0) for lesson in lessons},
        then_field="hit_count",
    )


def test_counts_move_with_the_write_and_promote_what_reaches_the_threshold_once(course, task, student):
    session, _ = session_open(student=student, task=task)
    low, due, promoted = (make_lesson(course=course, hit_count=n) for n in (0, 2, 7))
    SkillCandidate.objects.create(lesson=promoted, hit_count=3, status="dismissed")

    with CaptureQueriesContext(connection) as captured:
        updated = guarded_write(
            CLAIM, claim_values(session), [], using="default", counts=[uses_of(low, due, promoted)]
        )

    assert updated.count == 1
    counts = dict(Lesson.objects.values_list("pk", "hit_count"))
    assert (counts[low.pk], counts[due.pk], counts[promoted.pk]) == (1, 3, 8)
    assert set(Lesson.objects.values_list("last_hit", flat=True)) == {date(2026, 3, 4)}
    candidates = {c.lesson_id: (c.hit_count, c.status) for c in SkillCandidate.objects.all()}
    assert candidates == {due.pk: (3, "open"), promoted.pk: (3, "dismissed")}  # a candidate is kept
    if connection.vendor == "postgresql":
        assert [q["sql"].split(" ")[0] for q in captured.captured_queries] == ["SAVEPOINT", "WITH", "RELEASE"]


def test_counts_move_nothing_when_the_update_changes_no_row(course, task, student):
    session, _ = session_open(student=student, task=task)
    TutorSession.objects.filter(pk=session.pk).update(reply_pending_since=timezone.now())  # held
    lesson = make_lesson(course=course, hit_count=2)

    updated = guarded_write(CLAIM, claim_values(session), [], using="default", counts=[uses_of(lesson)])

    assert updated.count == 0
    assert Lesson.objects.get(pk=lesson.pk).hit_count == 2 and not SkillCandidate.objects.exists()


def test_a_refused_row_leaves_the_counts_unmoved(course, task, student):
    session, _ = session_open(student=student, task=task)
    lesson = make_lesson(course=course, hit_count=2)
    trace = RecallTrace(correlation_id="c", course=task.course, student=student, task=task, budget_tokens=-1)

    with pytest.raises(IntegrityError), transaction.atomic():  # budget_tokens: CHECK >= 0
        guarded_write(
            CLAIM, claim_values(session), [Row(TRACE, trace)], using="default", counts=[uses_of(lesson)]
        )

    assert Lesson.objects.get(pk=lesson.pk).hit_count == 2 and not SkillCandidate.objects.exists()


def test_counts_run_apart_as_they_run_in_the_write(course, lesson_pair):
    low, due = lesson_pair

    counts_run([uses_of(low, due)], using="default")
    counts_run([uses_of(low, due)], using="default")  # the candidate is made once

    assert dict(Lesson.objects.values_list("pk", "hit_count")) == {low.pk: 2, due.pk: 4}
    assert list(SkillCandidate.objects.values_list("lesson_id", "hit_count")) == [(due.pk, 3)]


@pytest.fixture
def lesson_pair(course):
    return make_lesson(course=course, hit_count=0), make_lesson(course=course, hit_count=2)
