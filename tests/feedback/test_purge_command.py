"""``manage.py purge_submissions``: the retention purge (SPEC §2: review
history is deleted only by named, audited services). It deletes whole
(student, task) histories whose newest submission is older than the cut,
course by course, in audited batches, and keeps every history with an
attempt still queued or running."""

from __future__ import annotations

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from feedback.models import AttemptStatus, RegradeRequest, ReviewAttempt, Submission
from tests.factories import enroll, make_attempt, make_course, make_submission, make_task
from tutor.models import AuditEvent


def aged(submission, days: int):
    Submission.objects.filter(pk=submission.pk).update(created_at=timezone.now() - timedelta(days=days))
    return submission


def history(student, task, ages: list[int], status=AttemptStatus.COMPLETED) -> list:
    """Submissions of ``student`` on ``task``, made ``ages`` days ago (oldest first), one attempt each."""
    made = []
    for days in ages:
        submission = aged(make_submission(student, task), days)
        make_attempt(submission, status)
        made.append(submission)
    return made


def purge(*args) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("purge_submissions", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def two_courses(db):
    mine, theirs = make_course("mine", tasks=2), make_course("theirs")
    return mine, theirs


def test_whole_old_histories_go_and_recent_or_open_ones_stay(two_courses):
    mine, theirs = two_courses
    task, other_task = make_task(mine, "t1"), make_task(mine, "t2")
    alice, bob, carol = enroll(mine, "alice"), enroll(mine, "bob"), enroll(mine, "carol")
    old = history(alice, task, [400, 390, 380])
    # alice's other task: old, but its newest submission is recent -- the whole history stays.
    mixed = history(alice, other_task, [400, 10])
    # bob: old, but an attempt is still queued -- left for the sweep to finish first.
    waiting = history(bob, task, [400])
    make_attempt(waiting[0], AttemptStatus.QUEUED)
    carols = history(carol, task, [500])
    RegradeRequest.objects.create(
        submission=carols[0], attempt=carols[0].attempts.get(), student=carol, rubric_id="A1", reason="x"
    )
    elsewhere = history(enroll(theirs, "dan"), make_task(theirs, "t1"), [400])

    out, err = purge("--older-than-days", "365", "--course", "mine", "--batch", "1")

    kept = set(Submission.objects.values_list("pk", flat=True))
    assert kept == {s.pk for s in mixed + waiting + elsewhere}
    assert not ReviewAttempt.objects.filter(submission_id__in=[s.pk for s in old + carols]).exists()
    assert not RegradeRequest.objects.exists()  # went with its submission
    assert out.strip() == "purged 2 histories: 4 submissions, 4 attempts"
    assert "mine: 2 histories (4 submissions) last submitted before" in err
    assert "mine histories [" in err and "] 2/2" in err  # progress on stderr
    events = AuditEvent.objects.filter(event=AuditEvent.Event.ATTEMPTS_PURGED).order_by("created_at")
    # Which students' histories went, batch by batch (ids: the accounts stay).
    assert sorted(
        (e.extra["submissions"], e.extra["attempts"], tuple(e.extra["students"])) for e in events
    ) == [
        (1, 1, (carol.pk,)),
        (3, 3, (alice.pk,)),
    ]
    assert {(e.course_id, e.actor_id, e.reason) for e in events} == {
        (mine.pk, None, "retention: newest submission older than 365 days")
    }


def test_without_a_course_every_course_is_purged(two_courses):
    mine, theirs = two_courses
    history(enroll(mine, "alice"), make_task(mine, "t1"), [400])
    history(enroll(theirs, "bob"), make_task(theirs, "t1"), [400, 399])

    out, err = purge("--older-than-days", "30")

    assert out.strip() == "purged 2 histories: 3 submissions, 3 attempts"
    assert not Submission.objects.exists()
    assert "mine: 1 history" in err and "theirs: 1 history" in err


def test_a_dry_run_counts_and_deletes_nothing(two_courses):
    mine, _ = two_courses
    history(enroll(mine, "alice"), make_task(mine, "t1"), [400, 399])

    out, _ = purge("--older-than-days", "365", "--dry-run")

    assert out.strip() == "would purge 1 history: 2 submissions (dry run)"
    assert Submission.objects.count() == 2 and ReviewAttempt.objects.count() == 2
    assert not AuditEvent.objects.filter(event=AuditEvent.Event.ATTEMPTS_PURGED).exists()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--older-than-days", "0"], "--older-than-days must be between 1 and 36500"),
        (["--older-than-days", "99999999"], "--older-than-days must be between 1 and 36500"),
        (["--older-than-days", "30", "--batch", "0"], "--batch must be between 1 and 1000"),
        (["--older-than-days", "30", "--batch", "1001"], "--batch must be between 1 and 1000"),
        (["--older-than-days", "30", "--course", "nope"], "no such course: 'nope'"),
    ],
)
def test_bad_arguments_are_refused_and_nothing_is_deleted(two_courses, args, message):
    mine, _ = two_courses
    history(enroll(mine, "alice"), make_task(mine, "t1"), [400])

    with pytest.raises(CommandError, match=message):
        purge(*args)

    assert Submission.objects.count() == 1


def test_rows_of_other_apps_follow_their_on_delete_even_without_a_reverse_name(two_courses):
    # Lessons, staff-agreement pairs, helpful/harmful bumps and LMS score posts point at
    # submissions and attempts with related_name="+": the purge must still find them.
    from lessons.models import DeltaBump, Lesson, LessonSource
    from tests.lessons.conftest import make_lesson

    mine, _ = two_courses
    alice = enroll(mine, "alice")
    [old] = history(alice, make_task(mine, "t1"), [400])
    attempt = old.attempts.get()
    lesson = make_lesson(
        course=mine, source=LessonSource.REVIEW, source_submission=old, source_attempt=attempt
    )
    DeltaBump.objects.create(signal_attempt=attempt, lesson=lesson, op=DeltaBump.Op.HELPFUL)

    out, _ = purge("--older-than-days", "365")

    assert out.strip() == "purged 1 history: 1 submissions, 1 attempts"
    kept = Lesson.objects.get(pk=lesson.pk)  # SET_NULL: the lesson stays, its source is gone
    assert (kept.source_submission_id, kept.source_attempt_id) == (None, None)
    assert not DeltaBump.objects.exists()  # CASCADE


def test_a_history_its_student_submits_to_after_the_listing_is_kept_whole(two_courses):
    from feedback.services.retention import histories_past_retention, histories_purge

    mine, _ = two_courses
    task = make_task(mine, "t1")
    alice, bob = enroll(mine, "alice"), enroll(mine, "bob")
    history(alice, task, [400, 390])
    bobs = history(bob, task, [400])
    before = timezone.now() - timedelta(days=365)
    listed = histories_past_retention(course=mine, before=before)
    assert len(listed) == 2
    newer = make_submission(alice, task)  # alice submits while the purge runs
    make_attempt(newer, AttemptStatus.QUEUED)

    purged = histories_purge(course=mine, histories=listed, before=before, reason="retention test")

    assert (purged.histories, purged.submissions, purged.attempts) == (1, 1, 1)
    assert Submission.objects.filter(student=alice).count() == 3  # her whole history, the new one included
    assert not Submission.objects.filter(pk=bobs[0].pk).exists()


def test_a_batch_the_database_refuses_is_reported_kept_and_the_rest_go_on(two_courses):
    mine, _ = two_courses
    task = make_task(mine, "t1")
    alice, bob, carol = enroll(mine, "alice"), enroll(mine, "bob"), enroll(mine, "carol")
    [refused] = history(alice, task, [500])
    [purgeable] = history(bob, task, [400])
    # A kept row that still points at alice's old attempt (PROTECT): her batch cannot go.
    make_attempt(history(carol, task, [1])[0], reused_from=refused.attempts.get())

    out, err = purge("--older-than-days", "365", "--batch", "1")

    assert out.strip() == "purged 1 history: 1 submissions, 1 attempts"
    assert "mine: kept a batch of 1 history, the database refused it (" in err
    assert Submission.objects.filter(pk=refused.pk).exists()
    assert not Submission.objects.filter(pk=purgeable.pk).exists()
    assert AuditEvent.objects.filter(event=AuditEvent.Event.ATTEMPTS_PURGED).count() == 1
