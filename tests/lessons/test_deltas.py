"""Playbook deltas (SPEC §6; seed 004): an external signal or nothing; adds
become pending lessons, at most three per signal attempt; marks only for
lessons actually used, once per signal; all or nothing; every refusal names
the delta and the rule."""

from __future__ import annotations

import uuid

import pytest
from django.test import Client
from django.urls import reverse

from lessons.models import DeltaBump, Lesson, LessonStatus, RecalledLesson
from tests.factories import client_for, criterion_entry, enroll, make_attempt, make_submission, review_result
from tests.lessons.conftest import errors, make_lesson, make_trace
from tutor.models import AuditEvent, Enrollment

URL = "/api/lessons/deltas/"


def signal(student, task, *criteria, status="completed"):
    criteria = criteria or (criterion_entry("A1", "FAIL", basis="ci", reason="CI failed"),)
    return make_attempt(
        make_submission(student, task, ci_source="service"),
        status=status,
        result=review_result(list(criteria)) if status == "completed" else None,
    )


def add(title="Check the empty array first", body="Run first([]) before anything else.", **extra):
    return {"op": "add", "title": title, "body": body, "tags": ["arrays"], "symptoms": ["1 failing"], **extra}


def send(client, attempt, *deltas):
    return client.post(URL, {"signal_attempt": str(attempt.pk), "deltas": list(deltas)}, format="json")


def recalled_for(lesson, student, task):
    """A stored recall trace showing ``lesson`` recalled for the student and task."""
    trace = make_trace(student=student, task=task, correlation_id="cid", used_tokens=lesson.tokens)
    RecalledLesson.objects.create(trace=trace, lesson=lesson, rank=1)


@pytest.fixture
def attempt(student, task):
    return signal(student, task)


# --- the external signal ---------------------------------------------------------------------


@pytest.mark.django_db
@pytest.mark.parametrize(
    "criteria",
    [
        [criterion_entry("A3", "PASS", basis="model")],
        [criterion_entry("A1", "FAIL", basis="self_report")],
        [criterion_entry("A1", "PASS", basis="staff")],
        [criterion_entry("L1", "FAIL", basis="check", kind="learning")],  # not an acceptance criterion
    ],
    ids=["model-only", "self-reported", "staff", "learning-check"],
)
def test_without_an_external_signal_nothing_is_applied(student, task, staff_client, criteria):
    attempt = signal(student, task, *criteria)

    response = send(staff_client, attempt, add())

    assert response.status_code == 400
    assert errors(response) == {"signal_attempt": "external verification signal required"}
    assert Lesson.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize("status", ["queued", "unavailable"])
def test_an_unfinished_or_unavailable_attempt_is_no_signal(student, task, staff_client, status):
    attempt = signal(student, task, status=status)

    response = send(staff_client, attempt, add())

    assert errors(response) == {"signal_attempt": "external verification signal required"}


@pytest.mark.django_db
def test_an_unknown_or_foreign_signal_attempt_is_refused(student, task, staff_client, other_staff_client):
    attempt = signal(student, task)

    unknown = staff_client.post(URL, {"signal_attempt": str(uuid.uuid4()), "deltas": [add()]}, format="json")
    foreign = send(other_staff_client, attempt, add())

    assert "signal_attempt" in errors(unknown) and "signal_attempt" in errors(foreign)
    assert Lesson.objects.count() == 0


# --- add -----------------------------------------------------------------------------------


@pytest.mark.django_db
def test_an_add_becomes_a_pending_guardrail_when_the_signal_failed(attempt, staff, staff_client, course):
    response = send(staff_client, attempt, add(body="Rotate sk-abcdefghijklmnopqrstuvwx first."))

    assert response.status_code == 200, response.content
    [applied] = response.json()["applied"]
    lesson = Lesson.objects.get(pk=applied["lesson"])
    assert applied == {"index": 0, "op": "add", "lesson": str(lesson.pk), "duplicate_of": None}
    assert (lesson.status, lesson.kind, lesson.source, lesson.course) == (
        "pending",
        "guardrail",
        "delta",
        course,
    )
    assert (lesson.source_attempt, lesson.delta_slot, lesson.created_by) == (attempt, 1, staff)
    assert "sk-abcdefghijklmnopqrstuvwx" not in lesson.body and lesson.redactions == 1
    event = AuditEvent.objects.get(event="delta_applied")
    assert (event.actor, event.to_state, event.extra["op"]) == (staff, "pending", "add")


@pytest.mark.django_db
def test_an_add_on_a_passing_signal_is_a_strategy(student, task, staff_client):
    attempt = signal(student, task, criterion_entry("A2", "PASS", basis="check"))

    send(staff_client, attempt, add())

    assert Lesson.objects.get().kind == "strategy"


@pytest.mark.django_db
def test_at_most_three_adds_per_signal_attempt_across_requests_all_or_nothing(attempt, staff_client):
    first = send(staff_client, attempt, add("one alpha"), add("two beta"))
    second = send(staff_client, attempt, add("three gamma"), add("four delta"))
    third = send(staff_client, attempt, add("three gamma"))
    fourth = send(staff_client, attempt, add("four delta"))

    assert first.status_code == 200
    assert second.status_code == 400
    assert errors(second) == {
        "deltas.1": "at most 3 add deltas per signal attempt (2 already added for this attempt)"
    }
    assert third.status_code == 200
    assert fourth.status_code == 400
    assert sorted(Lesson.objects.values_list("delta_slot", flat=True)) == [1, 2, 3]


@pytest.mark.django_db
def test_a_near_duplicate_add_is_named_and_does_not_count(course, attempt, staff_client):
    existing = make_lesson(
        course=course,
        title="Check the empty array first",
        body="Run first([]) before anything else.",
        status=LessonStatus.REJECTED,
    )

    response = send(
        staff_client,
        attempt,
        add(title="check the empty ARRAY first!", body="Run first([]) before anything else"),  # Jaccard 1.0
        add("a", body="b"),
        add("c", body="d"),
        add("e", body="f"),
    )

    assert response.status_code == 200, response.content
    applied = response.json()["applied"]
    assert applied[0] == {"index": 0, "op": "add", "lesson": None, "duplicate_of": str(existing.pk)}
    assert all(item["lesson"] for item in applied[1:])
    assert Lesson.objects.filter(source="delta").count() == 3


@pytest.mark.django_db
def test_two_near_identical_adds_in_one_request_keep_the_first(attempt, staff_client):
    response = send(staff_client, attempt, add(), add(body="Run first([]) before anything else!"))

    first, second = response.json()["applied"]
    assert second["duplicate_of"] == first["lesson"] and second["lesson"] is None
    assert Lesson.objects.count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("delta", "field"),
    [
        ({"op": "rewrite", "lesson": str(uuid.uuid4()), "body": "x"}, "deltas.0.op"),
        ({"op": "delete", "lesson": str(uuid.uuid4())}, "deltas.0.op"),
        ({"title": "no op"}, "deltas.0.op"),
        ({"op": "add", "title": "t"}, "deltas.0.body"),
        ({"op": "add", "title": "t", "body": "b", "symptoms": ["???"]}, "deltas.0.symptoms.0"),
        ({"op": "add", "title": "t", "body": "b", "lesson": str(uuid.uuid4())}, "deltas.0.lesson"),
        ({"op": "helpful"}, "deltas.0.lesson"),
        ({"op": "helpful", "lesson": "not-a-uuid"}, "deltas.0.lesson"),
    ],
)
def test_every_malformed_delta_is_a_400_naming_it(attempt, staff_client, delta, field):
    response = send(staff_client, attempt, delta)

    assert response.status_code == 400, response.content
    assert field in errors(response), errors(response)
    assert Lesson.objects.count() == 0


@pytest.mark.django_db
def test_an_empty_or_missing_delta_list_is_a_400(attempt, staff_client):
    empty = errors(staff_client.post(URL, {"signal_attempt": str(attempt.pk), "deltas": []}, format="json"))
    missing = errors(staff_client.post(URL, {"signal_attempt": str(attempt.pk)}, format="json"))

    assert list(empty) == ["deltas.non_field_errors"] and list(missing) == ["deltas"]


# --- helpful / harmful -------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_mark_needs_a_recall_trace_of_that_student_and_task(
    course, student, other_student, task, staff_client
):
    lesson = make_lesson(course=course)
    attempt = signal(student, task)
    recalled_for(lesson, other_student, task)  # someone else's use does not count

    refused = send(staff_client, attempt, {"op": "helpful", "lesson": str(lesson.pk)})
    recalled_for(lesson, student, task)
    applied = send(staff_client, attempt, {"op": "helpful", "lesson": str(lesson.pk)})

    assert refused.status_code == 400
    assert "recall trace" in errors(refused)["deltas.0.lesson"]
    assert applied.status_code == 200
    lesson.refresh_from_db()
    assert (lesson.helpful, lesson.harmful) == (1, 0)
    event = AuditEvent.objects.get(event="delta_applied")
    assert event.extra == {
        "op": "helpful",
        "signal_attempt": str(attempt.pk),
        "index": 0,
        "helpful": 1,
        "harmful": 0,
    }


@pytest.mark.django_db
def test_a_trace_after_the_signal_attempt_counts_too(course, student, task, staff_client):
    lesson = make_lesson(course=course)
    attempt = signal(student, task)
    recalled_for(lesson, student, task)  # made after the attempt

    assert send(staff_client, attempt, {"op": "harmful", "lesson": str(lesson.pk)}).status_code == 200


@pytest.mark.django_db
def test_one_mark_per_signal_attempt_and_lesson(course, student, task, staff_client):
    lesson = make_lesson(course=course)
    recalled_for(lesson, student, task)
    attempt, later = signal(student, task), signal(student, task)

    twice_in_one = send(
        staff_client,
        attempt,
        {"op": "helpful", "lesson": str(lesson.pk)},
        {"op": "harmful", "lesson": str(lesson.pk)},
    )
    once = send(staff_client, attempt, {"op": "helpful", "lesson": str(lesson.pk)})
    again = send(staff_client, attempt, {"op": "harmful", "lesson": str(lesson.pk)})
    other_signal = send(staff_client, later, {"op": "helpful", "lesson": str(lesson.pk)})

    assert twice_in_one.status_code == 400 and "deltas.1.lesson" in errors(twice_in_one)
    assert once.status_code == 200
    assert again.status_code == 400 and "already marked" in errors(again)["deltas.0.lesson"]
    assert other_signal.status_code == 200
    lesson.refresh_from_db()
    assert (lesson.helpful, lesson.harmful) == (2, 0)
    assert DeltaBump.objects.count() == 2


@pytest.mark.django_db
def test_a_request_applies_all_or_nothing(course, student, task, staff_client):
    marked = make_lesson(course=course)
    recalled_for(marked, student, task)
    unused = make_lesson(course=course)
    attempt = signal(student, task)

    response = send(
        staff_client,
        attempt,
        add(),
        {"op": "helpful", "lesson": str(marked.pk)},
        {"op": "harmful", "lesson": str(unused.pk)},  # never recalled: refused
    )

    assert response.status_code == 400 and "deltas.2.lesson" in errors(response)
    marked.refresh_from_db()
    assert (Lesson.objects.filter(source="delta").count(), marked.helpful, DeltaBump.objects.count()) == (
        0,
        0,
        0,
    )
    assert not AuditEvent.objects.filter(event="delta_applied").exists()


@pytest.mark.django_db
def test_harmful_three_times_and_more_than_helpful_quarantines_automatically(course, student, task, staff):
    lesson = make_lesson(course=course)
    recalled_for(lesson, student, task)
    client = client_for(staff)

    for _ in range(3):
        assert (
            send(client, signal(student, task), {"op": "harmful", "lesson": str(lesson.pk)}).status_code
            == 200
        )

    lesson.refresh_from_db()
    assert (lesson.status, lesson.harmful) == ("quarantined", 3)
    event = AuditEvent.objects.get(event="lesson_quarantined")
    assert (event.from_state, event.to_state, event.extra["automatic"]) == ("injected", "quarantined", True)


@pytest.mark.django_db
def test_harmful_three_times_but_not_more_than_helpful_keeps_it_injected(course, student, task, staff_client):
    lesson = make_lesson(course=course)
    recalled_for(lesson, student, task)
    for op in ("helpful", "helpful", "helpful", "harmful", "harmful", "harmful"):
        assert (
            send(staff_client, signal(student, task), {"op": op, "lesson": str(lesson.pk)}).status_code == 200
        )

    lesson.refresh_from_db()
    assert (lesson.status, lesson.helpful, lesson.harmful) == ("injected", 3, 3)


# --- a global lesson serves every course: one course cannot quarantine it ------------------


def harmful_from(course_task, count):
    """``count`` harmful marks on the lesson from one course's own staff and signal attempts."""
    task, student, staff = course_task

    def mark(lesson):
        for _ in range(count):
            response = send(
                client_for(staff), signal(student, task), {"op": "harmful", "lesson": str(lesson.pk)}
            )
            assert response.status_code == 200, response.content

    return mark


@pytest.fixture
def held_globals(settings):
    """A deployment sharing global lessons between course teams: one course's
    marks alone do not withdraw one (the default follows SPEC §6 as it is)."""
    settings.LESSON_GLOBAL_QUARANTINE_COURSES = 2


@pytest.fixture
def se_marks(course, student, task, staff):
    return (task, student, staff)


@pytest.fixture
def other_marks(other_course, other_task):
    return (
        other_task,
        enroll(other_course, "olga"),
        enroll(other_course, "o-teacher", Enrollment.Role.STAFF),
    )


def used_by(lesson, *course_tasks):
    for task, student, _ in course_tasks:
        recalled_for(lesson, student, task)


@pytest.mark.django_db
def test_one_course_cannot_quarantine_a_global_lesson(se_marks, superuser, held_globals):
    lesson = make_lesson(course=None)
    used_by(lesson, se_marks)

    harmful_from(se_marks, 4)(lesson)

    lesson.refresh_from_db()
    assert (lesson.status, lesson.harmful) == ("injected", 4)
    assert not AuditEvent.objects.filter(event="lesson_quarantined").exists()
    # Held for a superuser's decision in the admin queue.
    client = Client()
    client.force_login(superuser)
    held = client.get(reverse("admin:lessons_lesson_changelist"), {"queue": "harmful_global"})
    assert list(held.context["cl"].result_list) == [lesson]


@pytest.mark.django_db
def test_two_courses_quarantine_a_global_lesson(se_marks, other_marks, held_globals):
    lesson = make_lesson(course=None)
    used_by(lesson, se_marks, other_marks)

    harmful_from(se_marks, 2)(lesson)
    harmful_from(other_marks, 1)(lesson)

    lesson.refresh_from_db()
    assert (lesson.status, lesson.harmful) == ("quarantined", 3)
    event = AuditEvent.objects.get(event="lesson_quarantined")
    assert (event.extra["automatic"], event.extra["harmful_courses"]) == (True, 2)
    assert "from 2 courses" in event.reason


@pytest.mark.django_db
def test_a_global_lesson_marked_from_two_courses_but_not_enough_stays_injected(
    se_marks, other_marks, held_globals
):
    lesson = make_lesson(course=None)
    used_by(lesson, se_marks, other_marks)

    harmful_from(se_marks, 1)(lesson)
    harmful_from(other_marks, 1)(lesson)

    lesson.refresh_from_db()
    assert (lesson.status, lesson.harmful) == ("injected", 2)


@pytest.mark.django_db
def test_by_default_three_harmful_marks_of_one_course_quarantine_a_global_lesson(se_marks):
    lesson = make_lesson(course=None)
    used_by(lesson, se_marks)

    harmful_from(se_marks, 3)(lesson)

    lesson.refresh_from_db()
    assert lesson.status == "quarantined"


@pytest.mark.django_db
def test_a_course_lesson_is_still_quarantined_by_its_own_course_alone(course, se_marks, superuser):
    lesson = make_lesson(course=course)
    used_by(lesson, se_marks)

    harmful_from(se_marks, 3)(lesson)

    lesson.refresh_from_db()
    assert lesson.status == "quarantined"
    client = Client()
    client.force_login(superuser)
    held = client.get(reverse("admin:lessons_lesson_changelist"), {"queue": "harmful_global"})
    assert list(held.context["cl"].result_list) == []


def harmful_global_queue(client) -> list:
    page = client.get(reverse("admin:lessons_lesson_changelist"), {"queue": "harmful_global"})
    return list(page.context["cl"].result_list)


@pytest.mark.django_db
def test_a_superuser_keeps_a_held_global_lesson_until_it_gets_new_marks(se_marks, superuser, held_globals):
    lesson = make_lesson(course=None)
    used_by(lesson, se_marks)
    harmful_from(se_marks, 3)(lesson)
    client = Client()
    client.force_login(superuser)
    assert harmful_global_queue(client) == [lesson]

    kept = client.post(
        reverse("admin:lessons_lesson_changelist") + "?queue=harmful_global",
        {"action": "keep_injected", "_selected_action": [str(lesson.pk)]},
        follow=True,
    )

    assert kept.status_code == 200 and "Kept injected: 1" in kept.content.decode()
    lesson.refresh_from_db()
    assert (lesson.status, lesson.harmful, lesson.harmful_kept) == ("injected", 3, 3)
    event = AuditEvent.objects.get(event="lesson_kept")
    assert (event.actor_id, event.from_state, event.to_state) == (superuser.pk, "injected", "injected")
    assert (event.extra["harmful"], event.extra["helpful"]) == (3, 0)
    assert harmful_global_queue(client) == []  # decided: out of the queue

    harmful_from(se_marks, 1)(lesson)  # a new mark after the decision brings it back

    assert harmful_global_queue(client) == [lesson]


@pytest.mark.django_db
def test_keeping_is_refused_for_a_lesson_the_queue_does_not_hold(course, se_marks, superuser, staff):
    from lessons.services.lifecycle import lesson_keep
    from tutor.kernel.errors import Conflict, PermissionRefused

    course_lesson, quiet_global = make_lesson(course=course), make_lesson(course=None)

    with pytest.raises(Conflict, match="only a global lesson held for a decision"):
        lesson_keep(lesson=course_lesson, actor=superuser)
    with pytest.raises(Conflict, match="only a global lesson held for a decision"):
        lesson_keep(lesson=quiet_global, actor=superuser)
    with pytest.raises(PermissionRefused):
        lesson_keep(lesson=quiet_global, actor=staff)
    assert not AuditEvent.objects.filter(event="lesson_kept").exists()


@pytest.mark.django_db
def test_course_staff_get_no_harmful_global_queue(se_marks, staff, held_globals):
    lesson = make_lesson(course=None)
    used_by(lesson, se_marks)
    harmful_from(se_marks, 3)(lesson)
    client = Client()
    client.force_login(staff)

    page = client.get(reverse("admin:lessons_lesson_changelist"), {"queue": "harmful_global"})

    assert list(page.context["cl"].result_list) == []
    assert "Harmful global lessons" not in page.content.decode()
    assert "keep_injected" not in page.content.decode()  # the decision is a superuser's


# --- who may send --------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_course_service_account_may_send_deltas_a_student_may_not(
    course, service, student, student_client, task
):
    attempt = signal(student, task)

    assert send(client_for(service), attempt, add()).status_code == 200
    assert send(student_client, attempt, add("other")).status_code == 403


@pytest.mark.django_db
def test_a_service_account_of_another_course_is_refused(student, task, other_course):
    attempt = signal(student, task)
    foreign = enroll(other_course, "other-ci", Enrollment.Role.SERVICE)

    response = send(client_for(foreign), attempt, add())

    assert response.status_code == 400 and "signal_attempt" in errors(response)


# --- concurrency ---------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_concurrent_marks_lose_no_increment():
    from tests.factories import make_course, make_task
    from tests.feedback.test_concurrency import run_concurrently
    from tests.lessons.conftest import make_lesson as lesson_factory

    course = make_course("race-101")
    task = make_task(course)
    student = enroll(course, "racer")
    staff = enroll(course, "race-staff", Enrollment.Role.STAFF)
    lesson = lesson_factory(course=course)
    recalled_for(lesson, student, task)
    count = 12
    attempts = [signal(student, task) for _ in range(count)]

    def mark(i: int):
        from lessons.services.deltas import deltas_apply

        op = "helpful" if i % 2 else "harmful"
        return deltas_apply(
            actor=staff, signal_attempt_id=attempts[i].pk, deltas=[{"op": op, "lesson": lesson.pk}]
        )

    run_concurrently(count, mark)

    lesson.refresh_from_db()
    assert (lesson.helpful, lesson.harmful) == (count // 2, count // 2)
    assert DeltaBump.objects.filter(lesson=lesson).count() == count
