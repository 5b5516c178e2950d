"""The context preview and a real send recall from each process's snapshots
of the scope's lessons (SPEC §6, §10; ``lessons.selectors.library``,
``tutor.db.snapshots``): the same decisions -- and for a send the same trace
lines and counts -- as the recall statement, one query for the scopes'
versions, and every change seen -- by the writing process at once, by the
others once its new version is written after the commit; a send never
recalls a lesson that left ``injected`` before its version arrived."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from lessons.models import Lesson, LessonHit, LessonStatus, RecallTrace
from lessons.recall import RecallParams
from lessons.selectors import lessons_recall, recalled_now
from lessons.selectors.library import (
    LIBRARIES,
    lessons_changed,
    lessons_scope_keys,
    library_load,
    library_recall,
    other_library_load,
    scope_totals,
)
from tests.concurrency import concurrent_writers, interleave
from tests.factories import client_for, enroll, make_course, make_task
from tests.lessons.conftest import lesson_id, make_lesson
from tests.tutor.test_context import open_session, query_budget, send, task_context
from tutor.db.snapshots import forget_all, scope_key
from tutor.models import ScopeChange, ScopeVersion

TASK_TAGS = ["javascript", "docs"]  # tests.factories.course_data
TAGS = ["javascript", "docs", "week-1", "arrays", "ci", "regex", "async", "dom"]
SYMPTOMS = ["1 failing", "undefined is not a function", "timeout of 2000ms", "Segfault in parser", "空数组"]
WORDS = ["the", "build", "still", "fails", "with", "a", "error", "on", "test", "empty"]


def recalled(preview: dict) -> list[str]:
    return [item["id"] for item in preview["lessons"]["recalled"]]


def committed(django_capture_on_commit_callbacks, make):
    """``make()`` as a committed change: its new versions written, as after a real commit."""
    with django_capture_on_commit_callbacks(execute=True):
        return make()


def committed_library(capture, course, *, unrelated: int, matching: int, others: list[str], **fields) -> None:
    """A committed library: ``unrelated`` injected lessons no task tag reaches,
    ``matching`` injected ones with the task's tags (``fields`` on them), and
    one lesson with the task's tags per status in ``others``."""
    from tests.lessons.conftest import bulk_lessons

    def library():
        bulk_lessons(course, unrelated)
        bulk_lessons(course, matching, tags=TASK_TAGS, **fields)
        lessons_changed(course.pk)  # bulk_create sends no signal
        for status in others:
            make_lesson(course=course, tags=TASK_TAGS, status=status)

    committed(capture, library)


def lessons_queries(captured) -> list[str]:
    return [q["sql"] for q in captured if '"lessons_lesson"' in q["sql"]]


def random_library(rng: random.Random, course, other_course) -> None:
    """160 lessons drawn from ``rng``: the same library at every run, ids and
    titles included (recall breaks ties by id)."""
    today = timezone.localdate()
    for n in range(1, 161):
        make_lesson(
            id=lesson_id(n),
            title=f"random lesson {n}",
            course=rng.choice([course, course, other_course, None]),
            tags=rng.sample(TAGS, rng.randint(0, 4)),
            symptoms=rng.sample(SYMPTOMS, rng.randint(0, 2)),
            status=rng.choice([LessonStatus.INJECTED] * 4 + [LessonStatus.PENDING, LessonStatus.QUARANTINED]),
            review_by=today + timedelta(days=rng.choice([-3, 5, 60])),
            last_hit=rng.choice([None, today, today - timedelta(days=rng.randint(1, 90))]),
            tokens=rng.choice([50, 150, 400, 700]),
        )


def random_texts(rng: random.Random) -> list[str]:
    texts = []
    for _ in range(rng.randint(0, 3)):
        words = rng.sample(WORDS, rng.randint(0, 5)) + rng.sample(SYMPTOMS, rng.randint(0, 2))
        rng.shuffle(words)
        texts.append(" ".join(words).upper() if rng.random() < 0.2 else " ".join(words))
    return texts


PARAMS = [
    {},  # the seed's numbers: one shared tag of one or two context tags reaches floor − W_DECAY
    {"LESSON_RECALL_W_TAG": 0.9, "LESSON_RECALL_FLOOR": 0.5},  # one tag of several reaches it
    {"LESSON_RECALL_W_TAG": 0.3, "LESSON_RECALL_W_SYMPTOM": 0.6},  # tags need help from symptoms
    {"LESSON_RECALL_FLOOR": 0.15},  # below W_DECAY: every lesson can reach the floor
    {"LESSON_RECALL_TOP_K": 10, "LESSON_RECALL_BUDGET_TOKENS": 1000},
]


@pytest.mark.django_db
@pytest.mark.parametrize("overrides", PARAMS)
def test_the_snapshot_decides_as_the_recall_statement(course, other_course, settings, overrides):
    for name, value in overrides.items():
        setattr(settings, name, value)
    rng = random.Random(20261203)
    random_library(rng, course, other_course)
    library = library_load(course.pk)
    params = RecallParams.from_settings()
    today = timezone.localdate()
    recalled_any = 0

    for _ in range(120):
        tags = rng.sample(TAGS, rng.randint(0, 6))
        texts = random_texts(rng)
        statement = lessons_recall(
            course_ids=[course.pk], tags=tags, texts=texts, with_counts=False, lines=False
        )
        snapshot = library_recall(library, tags=tags, texts=texts, today=today, params=params)

        assert snapshot.context == statement.context
        assert [(s.row.id, s.score, s.components) for s in snapshot.recalled] == [
            (s.row.id, s.score, s.components) for s in statement.recalled
        ]
        assert snapshot.cut_relevant == statement.cut_relevant
        recalled_any += bool(statement.recalled)
    assert recalled_any > 30  # the contexts do recall


@pytest.mark.django_db
@pytest.mark.parametrize("overrides", PARAMS)
# 12: some traces list fewer lines than they count; 80: the floor's lines fill the room left.
@pytest.mark.parametrize("max_lines", [12, 80])
def test_a_send_recalls_lists_and_counts_from_the_snapshots_as_the_statement(
    course, other_course, task, student, settings, overrides, max_lines
):
    from tests.lessons.conftest import make_trace
    from tutor.models import TutorSession

    for name, value in overrides.items():
        setattr(settings, name, value)
    settings.LESSON_TRACE_MAX_LINES = max_lines
    rng = random.Random(20261204)
    random_library(rng, course, other_course)
    session = TutorSession.objects.create(student=student, task=task)
    used = rng.sample(list(Lesson.objects.filter(status=LessonStatus.INJECTED).order_by("id")), 25)
    trace = make_trace(student=student, task=task)
    LessonHit.objects.bulk_create(LessonHit(lesson=lesson, session=session, trace=trace) for lesson in used)
    library, others = library_load(course.pk), other_library_load(course.pk)
    params = RecallParams.from_settings()
    today = timezone.localdate()
    listed_filtered = used_seen = listed_below = 0

    for _ in range(120):
        tags = rng.sample(TAGS, rng.randint(0, 6))
        texts = random_texts(rng)
        statement = lessons_recall(course_ids=[course.pk], tags=tags, texts=texts, session_id=session.pk)
        snapshot = library_recall(
            library, tags=tags, texts=texts, today=today, params=params, others=others, lines=True
        ).with_totals(scope_totals(library, others, today))
        now = recalled_now(session.pk, snapshot.recalled_ids) if snapshot.recalled else {}
        snapshot.used_in_session = frozenset(i for i, state in now.items() if state.used)

        assert snapshot.context == statement.context
        assert [(s.row.id, s.score, s.components) for s in snapshot.recalled] == [
            (s.row.id, s.score, s.components) for s in statement.recalled
        ]
        assert snapshot.lines == statement.lines
        assert (snapshot.counts, snapshot.omitted, snapshot.used_tokens) == (
            statement.counts,
            statement.omitted,
            statement.used_tokens,
        )
        recalled_ids = set(snapshot.recalled_ids)
        assert snapshot.used_in_session == {i for i in statement.used_in_session if i in recalled_ids}
        listed_filtered += any(line["decision"] == "filtered_status" for line in snapshot.lines)
        used_seen += bool(snapshot.used_in_session)
        # Lessons whose shares cannot reach the floor whatever their age are listed too.
        listed_below += any(
            line["decision"] == "floor"
            and params.w_tag * line["components"]["tag"] + params.w_symptom * line["components"]["symptom"]
            < params.reach
            for line in snapshot.lines
        )
    assert used_seen > 5  # the contexts do recall lessons the session used
    if params.reach > 0:  # else the scored lines take every line
        assert listed_filtered > 10  # and list lessons of other statuses
        if max_lines == 80:
            assert listed_below > 10


@pytest.mark.django_db
def test_a_warm_send_stores_the_statements_trace_reading_only_the_recalled_lessons(
    course, task, student_client, fake_llm, django_capture_on_commit_callbacks
):
    fake_llm.default = "Let's look."
    committed_library(
        django_capture_on_commit_callbacks,
        course,
        unrelated=40,
        matching=3,
        others=[LessonStatus.PENDING] * 2,
    )
    session = open_session(student_client, task)
    for message in ("what now?", "and now?"):  # the lessons' first hits renew the snapshot: reloaded
        with django_capture_on_commit_callbacks(execute=True):
            send(student_client, session, message)
    statement = lessons_recall(
        course_ids=[course.pk], tags=TASK_TAGS, texts=["and then?"], session_id=session
    )

    with CaptureQueriesContext(connection) as warm, django_capture_on_commit_callbacks(execute=True):
        send(student_client, session, "and then?")

    assert any("lessons_other:" in q["sql"] for q in warm.captured_queries)  # with the session
    # The one lessons read: the three recalled, as committed, with the session's uses.
    [read] = lessons_queries(warm.captured_queries)
    assert '"lessons_lessonhit"' in read and "COUNT" not in read.upper()
    trace = RecallTrace.objects.order_by("created_at", "id").last()
    assert trace.lines == statement.lines and trace.counts == statement.counts
    assert trace.counts["filtered_status"] == 2 and trace.counts["recalled"] == 3
    assert LessonHit.objects.filter(session_id=session).count() == 3  # the second send used them again


@pytest.mark.django_db
def test_a_cold_send_loads_each_snapshot_once_and_a_warm_one_only_its_recalled_lessons(
    course, task, student_client, fake_llm, django_capture_on_commit_callbacks
):
    fake_llm.default = "Let's look."
    committed_library(
        django_capture_on_commit_callbacks,
        course,
        unrelated=200,
        matching=2,
        others=[LessonStatus.RETIRED],
        last_hit=timezone.localdate(),  # no first hit today
    )
    session = open_session(student_client, task)
    reads = []
    for message in ("what now?", "and then?"):
        with CaptureQueriesContext(connection) as captured, django_capture_on_commit_callbacks(execute=True):
            send(student_client, session, message)
        reads.append(lessons_queries(captured.captured_queries))

    # Cold: the injected lessons, the other statuses' (no body), the recalled as committed;
    # then its new hits counted, with the reply's write (one statement on PostgreSQL):
    # no lesson reached the promotion's count, so no candidate is written or read.
    injected, others, recalled_now_read, counted = reads[0]
    assert '"status" = ' in injected and "NOT (" in others and '"lessons_lessonhit"' in recalled_now_read
    assert '"lessons_lesson"."body"' not in others
    assert 'UPDATE "lessons_lesson" SET "hit_count"' in counted
    # Warm, the session's lessons already used: the recalled only.
    assert len(reads[1]) == 1 and '"lessons_lessonhit"' in reads[1][0]
    assert RecallTrace.objects.order_by("created_at", "id").last().counts["filtered_status"] == 1


@pytest.mark.django_db
@pytest.mark.parametrize("change", ["quarantined", "expired", "deleted"])
def test_a_send_never_recalls_a_lesson_moved_away_before_its_version_arrives(
    course, task, student_client, fake_llm, django_capture_on_commit_callbacks, change
):
    fake_llm.default = "Let's look."
    kept, moved = committed(
        django_capture_on_commit_callbacks,
        lambda: [make_lesson(course=course, tags=TASK_TAGS) for _ in range(2)],
    )
    session = open_session(student_client, task)
    assert sorted(recalled(task_context(student_client, task))) == sorted([str(kept.pk), str(moved.pk)])

    # Another process changes it; its version is not written yet (this process hears nothing).
    if change == "quarantined":
        Lesson.objects.filter(pk=moved.pk).update(status=LessonStatus.QUARANTINED)
    elif change == "expired":
        Lesson.objects.filter(pk=moved.pk).update(review_by=timezone.localdate() - timedelta(days=1))
    else:
        Lesson.objects.filter(pk=moved.pk).delete()
        ScopeVersion.objects.all().delete()  # as if its publication had not arrived either
    with django_capture_on_commit_callbacks(execute=True):
        reply = send(student_client, session, "what now?").json()

    assert reply["context_meta"]["lesson_ids"] == [str(kept.pk)]
    trace = RecallTrace.objects.get()
    assert [line["lesson"] for line in trace.lines if line["decision"] == "recalled"] == [str(kept.pk)]
    assert trace.counts["recalled"] == 1


@pytest.mark.django_db
def test_a_draft_created_renews_only_the_snapshot_of_the_other_statuses(
    course, task, student_client, fake_llm, django_capture_on_commit_callbacks
):
    fake_llm.default = "Let's look."
    committed(django_capture_on_commit_callbacks, lambda: make_lesson(course=course, tags=TASK_TAGS))
    session = open_session(student_client, task)
    with django_capture_on_commit_callbacks(execute=True):
        send(student_client, session, "what now?")
    injected_version = ScopeVersion.objects.get(key=scope_key("lessons", course.pk)).version

    committed(
        django_capture_on_commit_callbacks,
        lambda: make_lesson(course=course, tags=TASK_TAGS, status=LessonStatus.PENDING),
    )
    with django_capture_on_commit_callbacks(execute=True):
        send(student_client, session, "and then?")

    assert ScopeVersion.objects.get(key=scope_key("lessons", course.pk)).version == injected_version
    trace = RecallTrace.objects.order_by("created_at", "id").last()
    assert trace.counts["filtered_status"] == 1  # the draft, seen by the next send's trace


@pytest.mark.django_db
@pytest.mark.parametrize("volume", [1, 2000])
def test_a_warm_preview_reads_the_scope_versions_and_no_lesson(
    course, task, student_client, django_capture_on_commit_callbacks, volume
):
    from tests.lessons.conftest import bulk_lessons

    def library():
        bulk_lessons(course, volume)
        bulk_lessons(course, 2, tags=TASK_TAGS)
        lessons_changed(course.pk)  # bulk_create sends no signal

    committed(django_capture_on_commit_callbacks, library)
    open_session(student_client, task)

    with CaptureQueriesContext(connection) as cold:
        first = task_context(student_client, task, "what now?")
    with CaptureQueriesContext(connection) as warm:
        second = task_context(student_client, task, "what now?")

    # The course's facts are still the test's own writes (its task): their statements run.
    # The snapshots' loads: the lessons (1) and the student's memory (2).
    assert len(cold) == query_budget("context") + 3 and len(lessons_queries(cold)) == 1
    assert len(warm) == query_budget("context") and lessons_queries(warm) == []
    assert any('"tutor_scopeversion"' in q["sql"] for q in warm.captured_queries)
    # Not the version of the lessons of other statuses: only a send's trace reads them.
    assert not any("lessons_other:" in q["sql"] for q in warm.captured_queries)
    assert second["lessons"] == first["lessons"] and len(recalled(second)) == 2


@pytest.mark.django_db
def test_another_process_change_is_seen_once_its_version_is_written(
    course, task, student_client, django_capture_on_commit_callbacks
):
    lesson = committed(django_capture_on_commit_callbacks, lambda: make_lesson(course=course, tags=TASK_TAGS))
    assert recalled(task_context(student_client, task)) == [str(lesson.pk)]

    # Another process quarantines it: its rows change, this process hears nothing ...
    Lesson.objects.filter(pk=lesson.pk).update(status=LessonStatus.QUARANTINED)
    assert recalled(task_context(student_client, task)) == [str(lesson.pk)]  # the snapshot answered

    # ... until that process writes the scope's new version after its commit.
    ScopeVersion.objects.update_or_create(
        key=scope_key("lessons", course.pk), defaults={"version": 7, "changed_at": timezone.now()}
    )
    assert recalled(task_context(student_client, task)) == []


@pytest.mark.django_db
def test_a_global_lessons_version_counts_for_every_course(
    course, task, student_client, django_capture_on_commit_callbacks
):
    lesson = committed(django_capture_on_commit_callbacks, lambda: make_lesson(course=None, tags=TASK_TAGS))
    assert recalled(task_context(student_client, task)) == [str(lesson.pk)]

    Lesson.objects.filter(pk=lesson.pk).update(status=LessonStatus.RETIRED)
    ScopeVersion.objects.update_or_create(
        key=scope_key("lessons", None), defaults={"version": 3, "changed_at": timezone.now()}
    )

    assert recalled(task_context(student_client, task)) == []


@pytest.mark.django_db
def test_a_staff_injection_is_recalled_at_once_and_published_after_commit(
    course, task, staff_client, student_client, django_capture_on_commit_callbacks
):
    pending = committed(
        django_capture_on_commit_callbacks,
        lambda: make_lesson(course=course, tags=TASK_TAGS, status=LessonStatus.APPROVED),
    )
    assert recalled(task_context(student_client, task)) == []
    key = scope_key("lessons", course.pk)

    def version():
        return ScopeVersion.objects.filter(key=key).values_list("version", flat=True).first()

    before = version()  # none yet: a lesson that is not injected changes no snapshot

    # Inside the staff request's transaction, not yet committed: this
    # connection reads the rows themselves, and no version is written yet.
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = staff_client.post(f"/api/lessons/{pending.pk}/inject/", {}, format="json")
        assert response.status_code == 200, response.content
        assert recalled(task_context(student_client, task)) == [str(pending.pk)]
        assert version() == before

    for callback in callbacks:  # the commit
        callback()
    assert version() not in (None, before)
    with CaptureQueriesContext(connection) as reload:
        assert recalled(task_context(student_client, task)) == [str(pending.pk)]
    assert len(lessons_queries(reload)) == 1  # the snapshot was reloaded, not the statement run


@pytest.mark.django_db
def test_a_rolled_back_change_never_reaches_the_snapshot(
    course, task, student_client, django_capture_on_commit_callbacks
):
    approved = committed(
        django_capture_on_commit_callbacks,
        lambda: make_lesson(course=course, tags=TASK_TAGS, status=LessonStatus.APPROVED),
    )
    assert recalled(task_context(student_client, task)) == []

    class Abandoned(Exception):
        pass

    with pytest.raises(Abandoned), transaction.atomic():
        Lesson.objects.filter(pk=approved.pk).update(status=LessonStatus.INJECTED, injected_at=timezone.now())
        lessons_changed(course.pk)  # as lessons.services.lifecycle does
        assert recalled(task_context(student_client, task)) == [str(approved.pk)]  # its own change
        raise Abandoned

    assert Lesson.objects.get(pk=approved.pk).status == LessonStatus.APPROVED
    assert recalled(task_context(student_client, task)) == []


@pytest.mark.django_db
def test_a_first_hit_of_the_day_renews_the_snapshot_and_later_hits_do_not(
    course, task, student_client, fake_llm, django_capture_on_commit_callbacks
):
    fake_llm.default = "Let's look."
    long_ago = timezone.localdate() - timedelta(days=45)
    lesson = committed(
        django_capture_on_commit_callbacks,
        lambda: make_lesson(course=course, tags=TASK_TAGS, last_hit=long_ago),
    )
    [item] = task_context(student_client, task)["lessons"]["recalled"]
    assert item["components"]["decay"] == pytest.approx(0.2231, abs=1e-4)  # exp(-45/30)
    key = scope_key("lessons", course.pk)
    session = open_session(student_client, task)

    with django_capture_on_commit_callbacks(execute=True):
        send(student_client, session, "what now?")
    renewed = ScopeVersion.objects.get(key=key).version
    [item] = task_context(student_client, task)["lessons"]["recalled"]
    assert item["components"]["decay"] == 1.0  # hit today
    assert Lesson.objects.get(pk=lesson.pk).last_hit == timezone.localdate()

    other = open_session(student_client, task, new=True)
    with django_capture_on_commit_callbacks(execute=True):
        send(student_client, other, "and now?")
    assert Lesson.objects.get(pk=lesson.pk).hit_count == 2
    assert ScopeVersion.objects.get(key=key).version == renewed  # the same day: nothing to renew


@pytest.mark.django_db
def test_snapshots_are_reloaded_after_their_maximum_age(
    course, task, student_client, settings, django_capture_on_commit_callbacks
):
    lesson = committed(django_capture_on_commit_callbacks, lambda: make_lesson(course=course, tags=TASK_TAGS))
    assert recalled(task_context(student_client, task)) == [str(lesson.pk)]
    Lesson.objects.filter(pk=lesson.pk).update(status=LessonStatus.QUARANTINED)  # no version written

    settings.TUTOR_SNAPSHOT_MAX_AGE = 0  # at its maximum age it reads the change log: nothing there
    assert recalled(task_context(student_client, task)) == [str(lesson.pk)]
    settings.TUTOR_SNAPSHOT_RELOAD_AGE = 0  # at its reload age it is loaded again
    assert recalled(task_context(student_client, task)) == []


@pytest.mark.django_db
def test_a_deleted_lesson_leaves_the_snapshot(
    course, task, student_client, django_capture_on_commit_callbacks
):
    lesson = committed(django_capture_on_commit_callbacks, lambda: make_lesson(course=course, tags=TASK_TAGS))
    assert recalled(task_context(student_client, task)) == [str(lesson.pk)]

    committed(django_capture_on_commit_callbacks, lambda: Lesson.objects.filter(pk=lesson.pk).delete())

    assert recalled(task_context(student_client, task)) == []
    assert LIBRARIES.get(lessons_scope_keys(course.pk), course.pk).rows == ()


@pytest.mark.django_db
def test_many_changes_of_one_transaction_write_the_version_once(
    course, django_capture_on_commit_callbacks, django_assert_num_queries
):
    committed(django_capture_on_commit_callbacks, lambda: [make_lesson(course=course) for _ in range(5)])

    with django_capture_on_commit_callbacks(execute=False) as callbacks, transaction.atomic():
        Lesson.objects.filter(course=course).delete()  # a signal per lesson
        for _ in range(20):
            lessons_changed(course.pk)

    assert len(callbacks) == 1
    with django_assert_num_queries(4):  # the upsert and the change row, in a transaction of their own
        callbacks[0]()
    change = ScopeChange.objects.filter(key=scope_key("lessons", course.pk)).latest("id")
    assert change.version == ScopeVersion.objects.get(key=change.key).version
    assert change.rows is None  # lessons_changed() without rows: every process loads the scope again


@pytest.mark.django_db
def test_a_change_after_a_rolled_back_one_is_still_published(course, django_capture_on_commit_callbacks):
    class Abandoned(Exception):
        pass

    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        with pytest.raises(Abandoned), transaction.atomic():
            lessons_changed(course.pk)
            raise Abandoned
        lessons_changed(course.pk)

    assert len(callbacks) == 1  # the rolled-back savepoint's publication is gone, this one is not


@concurrent_writers
@pytest.mark.django_db(transaction=True)
def test_two_transactions_changing_one_courses_lessons_do_not_wait_on_each_other():
    """Each transaction moves a lesson of the same course and says so; the
    versions are written after each commit, in a statement of their own, so
    neither transaction holds a row the other needs (a wait fails the
    statement, ``interleave``'s lock_timeout)."""
    course = make_course("snapshots")
    lessons = [make_lesson(course=course, status=LessonStatus.APPROVED) for _ in range(2)]

    def injected(lesson):
        def step():
            Lesson.objects.filter(pk=lesson.pk).update(
                status=LessonStatus.INJECTED, injected_at=timezone.now()
            )
            lessons_changed(course.pk, None)

        return step

    def edited(lesson):
        return lambda: Lesson.objects.filter(pk=lesson.pk).update(title="edited")

    before = {row.key: row.version for row in ScopeVersion.objects.all()}
    errors = interleave(
        [injected(lessons[0]), edited(lessons[0])], [injected(lessons[1]), edited(lessons[1])]
    )

    assert errors == [None, None]
    after = {row.key: row.version for row in ScopeVersion.objects.all()}
    assert after[scope_key("lessons", course.pk)] != before.get(scope_key("lessons", course.pk))
    assert len(library_load(course.pk).rows) == 2


@pytest.mark.django_db(transaction=True)
def test_a_change_committed_after_a_rolled_back_transaction_is_published():
    """A rolled-back transaction's mark must not stand for the next transaction's change."""
    course = make_course("after-rollback")
    key = scope_key("lessons", course.pk)

    class Abandoned(Exception):
        pass

    with pytest.raises(Abandoned), transaction.atomic():
        lessons_changed(course.pk)
        raise Abandoned
    assert not ScopeVersion.objects.filter(key=key).exists()

    with transaction.atomic():
        lessons_changed(course.pk)

    assert ScopeVersion.objects.filter(key=key).exists()


@pytest.mark.django_db
def test_an_automatic_quarantine_leaves_the_snapshot(
    course, task, student, staff, student_client, snapshot_path
):
    from tests.lessons.test_deltas import recalled_for, send, signal

    lesson = make_lesson(course=course, tags=TASK_TAGS)
    recalled_for(lesson, student, task)
    assert recalled(task_context(student_client, task)) == [str(lesson.pk)]

    for _ in range(3):
        response = send(client_for(staff), signal(student, task), {"op": "harmful", "lesson": str(lesson.pk)})
        assert response.status_code == 200

    assert Lesson.objects.get(pk=lesson.pk).status == LessonStatus.QUARANTINED
    assert recalled(task_context(student_client, task)) == []


@pytest.mark.django_db
def test_a_global_lessons_first_hit_renews_every_courses_snapshot(
    course, task, other_course, student, student_client, fake_llm, django_capture_on_commit_callbacks
):
    fake_llm.default = "Let's look."
    other_task = make_task(other_course)
    elsewhere = client_for(enroll(other_course, student.username))
    lesson = committed(
        django_capture_on_commit_callbacks,
        lambda: make_lesson(course=None, tags=TASK_TAGS, last_hit=timezone.localdate() - timedelta(days=45)),
    )
    for client, on in ((student_client, task), (elsewhere, other_task)):
        [item] = task_context(client, on)["lessons"]["recalled"]
        assert item["components"]["decay"] == pytest.approx(0.2231, abs=1e-4)

    with django_capture_on_commit_callbacks(execute=True):
        send(student_client, open_session(student_client, task), "what now?")

    [item] = task_context(elsewhere, other_task)["lessons"]["recalled"]  # another course's snapshot
    assert item["id"] == str(lesson.pk) and item["components"]["decay"] == 1.0


@pytest.mark.django_db(transaction=True)
def test_a_version_that_cannot_be_written_leaves_the_change_committed_and_this_process_current(
    monkeypatch, caplog
):
    import tutor.db.snapshots

    course = make_course("unwritten")
    lesson = make_lesson(course=course, tags=["x"])
    keys = lessons_scope_keys(course.pk)
    assert [row.id for row in LIBRARIES.get(keys, course.pk).rows] == [lesson.pk]

    class Unwritable:
        class objects:  # noqa: N801 -- as a model's manager is named
            @staticmethod
            def using(alias):
                raise tutor.db.snapshots.DatabaseError("the database went away")

    monkeypatch.setattr(tutor.db.snapshots, "ScopeVersion", Unwritable)
    with transaction.atomic():  # no error escapes the commit
        Lesson.objects.filter(pk=lesson.pk).update(status=LessonStatus.QUARANTINED)
        lessons_changed(course.pk)

    assert Lesson.objects.get(pk=lesson.pk).status == LessonStatus.QUARANTINED
    assert "not written" in caplog.text
    monkeypatch.undo()
    assert LIBRARIES.get(keys, course.pk).rows == ()  # this process dropped its snapshot all the same


@pytest.mark.django_db(transaction=True)
def test_a_change_outside_a_transaction_is_published_at_once():
    course = make_course("autocommit")

    lessons_changed(course.pk)

    assert ScopeVersion.objects.filter(key=scope_key("lessons", course.pk)).exists()


def library_shape(library) -> tuple:
    """What a library holds, comparable whichever way it was made."""

    def ids(rows) -> list[str]:
        return sorted(row.id_text for row in rows)

    return (
        {row.id_text: row for row in library.rows},
        [row.id_text for row in library.by_review],
        [row.id_text for row in library.by_rank],
        {tag: ids(rows) for tag, rows in library.by_tag.items()},
        {
            anchor: sorted((phrase, mark, tuple(ids(rows))) for phrase, mark, rows in entries)
            for anchor, entries in library.by_anchor.items()
        },
    )


@pytest.mark.django_db
def test_lesson_changes_are_applied_to_both_snapshots_as_a_new_load_would_read_them(
    course, task, student_client, django_capture_on_commit_callbacks, monkeypatch
):
    """Approved and used, quarantined, retired, deleted, edited, hit on a new
    day, a new global lesson: each snapshot applies those rows alone and
    holds what a load reads."""
    from lessons.selectors.library import OTHER_LIBRARIES, other_lessons_scope_keys
    from lessons.services.lifecycle import lesson_approve_and_use, lesson_quarantine, lesson_retire
    from lessons.services.revisions import lesson_edit
    from tests.factories import make_user

    staff = make_user("lesson-staff", is_staff=True, is_superuser=True)
    committed_library(
        django_capture_on_commit_callbacks,
        course,
        unrelated=40,
        matching=8,
        others=[LessonStatus.PENDING] * 2,
    )
    injected = [
        lesson for lesson in Lesson.objects.filter(status=LessonStatus.INJECTED) if "docs" in lesson.tags
    ]
    pending = list(Lesson.objects.filter(status=LessonStatus.PENDING))
    keys, other_keys = lessons_scope_keys(course.pk), other_lessons_scope_keys(course.pk)
    LIBRARIES.get(keys, course.pk), OTHER_LIBRARIES.get(other_keys, course.pk)
    loads = []
    for store in (LIBRARIES, OTHER_LIBRARIES):
        monkeypatch.setattr(
            store, "load", lambda course_id, load=store.load: loads.append(load) or load(course_id)
        )

    def changes():
        lesson_approve_and_use(lesson=pending[0], actor=staff)
        lesson_edit(
            lesson=pending[1],
            actor=staff,
            title="Edited",
            body="A new body",
            tags=["arrays"],
            symptoms=["timeout of 2000ms"],
        )
        lesson_quarantine(lesson=injected[0], actor=staff)
        lesson_retire(lesson=injected[1], actor=staff)
        injected[2].delete()
        Lesson.objects.filter(pk=injected[3].pk).update(last_hit=timezone.localdate())
        lessons_changed(course.pk, other=False, rows=[injected[3].pk])
        make_lesson(course=None, tags=TASK_TAGS, symptoms=["undefined is not a function"])

    committed(django_capture_on_commit_callbacks, changes)

    assert library_shape(LIBRARIES.get(keys, course.pk)) == library_shape(library_load(course.pk))
    assert library_shape(OTHER_LIBRARIES.get(other_keys, course.pk)) == library_shape(
        other_library_load(course.pk)
    )
    assert loads == []
    shown = recalled(task_context(student_client, task))
    assert loads == []
    assert str(injected[0].pk) not in shown
    forget_all()
    assert recalled(task_context(student_client, task)) == shown  # as after new loads


@pytest.mark.django_db
def test_a_trace_lists_the_floor_below_reach_in_rank_order_as_the_statement_does(
    course, task, student, settings
):
    """More active lessons than the trace has lines, few filtered: the lines
    left after the scored and filtered ones go to the lessons that cannot
    reach the floor -- of the scope's first ``max_lines`` injected by id, in
    rank order -- from the snapshots as from the statement."""
    from tutor.models import TutorSession

    settings.LESSON_TRACE_MAX_LINES = 50
    settings.LESSON_TRACE_FLOOR_LINES = 50  # the whole room (20 by default)
    rng = random.Random(20261207)
    today = timezone.localdate()
    for n in range(1, 151):
        make_lesson(
            id=lesson_id(n),
            title=f"lesson {n}",
            course=course,
            tags=rng.sample(TAGS, rng.randint(0, 2)),
            symptoms=rng.sample(SYMPTOMS, rng.randint(0, 1)),
            review_by=today + timedelta(days=rng.choice([-3] + [60] * 9)),
            last_hit=today - timedelta(days=rng.randint(0, 90)),
            tokens=100,
        )
    make_lesson(course=course, tags=TASK_TAGS, status=LessonStatus.PENDING)
    session = TutorSession.objects.create(student=student, task=task)
    library, others = library_load(course.pk), other_library_load(course.pk)
    params = RecallParams.from_settings()
    listed_below = 0

    for tags, texts in ((TASK_TAGS, ["timeout of 2000ms"]), ([], []), (["regex"], ["1 failing, 空数组"])):
        statement = lessons_recall(course_ids=[course.pk], tags=tags, texts=texts, session_id=session.pk)
        snapshot = library_recall(
            library, tags=tags, texts=texts, today=today, params=params, others=others, lines=True
        ).with_totals(scope_totals(library, others, today))

        assert snapshot.lines == statement.lines and snapshot.omitted == statement.omitted
        assert len(statement.lines) == 50 and statement.omitted["floor"] > 0
        floor = [line for line in statement.lines if line["decision"] == "floor"]
        assert [line["score"] for line in floor] == sorted((line["score"] for line in floor), reverse=True)
        # Those that cannot reach the floor come from the first 50 injected by id.
        first_ids = {str(lesson_id(n)) for n in range(1, 51)}  # lesson_id orders as n does
        below = [
            line["lesson"]
            for line in floor
            if params.w_tag * line["components"]["tag"] + params.w_symptom * line["components"]["symptom"]
            < params.reach
        ]
        assert set(below) <= first_ids
        listed_below += len(below)
        listed = [line["lesson"] for line in statement.lines]
        assert len(listed) == len(set(listed))

    assert listed_below > 30
    # The snapshot works a context's floor lines out once.
    ctx = snapshot.context
    assert library.below_reach(ctx, params) is library.below_reach(ctx, params)


@pytest.mark.django_db
def test_a_contexts_recall_is_worked_out_once_per_snapshot_context_and_day(course):
    make_lesson(course=course, tags=["loops"], symptoms=["index out of range"])
    library, others = library_load(course.pk), other_library_load(course.pk)
    params, today = RecallParams.from_settings(), timezone.localdate()

    def recall(text, day=today, other_snapshot=others):
        return library_recall(
            library, tags=["loops"], texts=[text], today=day, params=params, others=other_snapshot, lines=True
        )

    first = recall("the index out of range again")
    assert [s.row.title for s in first.recalled] and first.lines
    assert recall("Index out of range, again!") is first  # the same symptom found
    assert recall("something else") is not first
    assert recall("the index out of range again", day=today + timedelta(days=1)) is not first
    assert recall("the index out of range again", other_snapshot=other_library_load(course.pk)) is not first
