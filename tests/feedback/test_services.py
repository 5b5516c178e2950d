"""Writes of the feedback app (SPEC §2): sequences, the review cache,
immutability, idempotent claims, the sweep, staff verdicts, re-review and
the model-call purge."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.db import DatabaseError, connection, transaction
from django.test import TestCase
from django.utils import timezone

from feedback.models import (
    AttemptKind,
    AttemptStatus,
    ErrorCode,
    ReviewAttempt,
    Submission,
    TerminalAttemptError,
)
from feedback.pipeline import run_review
from feedback.services.intake import review_request, submission_create
from feedback.services.verdicts import VerdictError, staff_verdict_create
from feedback.services.worker import attempt_claim, attempt_complete, attempts_sweep
from feedback.tasks import review_attempt
from tests.factories import course_data, enroll
from tests.fakellm import MODEL
from tutor.models import ModelCall, Task

EVIDENCE = {
    "report": "first returns undefined for an empty array",
    "files": {"src/first.js": "export const first = (xs) => xs[0];"},
    "ci": {"status": "passed", "exit_code": 0, "log_tail": "ok"},
}


def reply(status: str = "PASS") -> str:
    return json.dumps(
        {
            "verdicts": [{"rubric_id": "A3", "status": status, "reason": "model says so", "evidence": "q"}],
            "next_step": "keep going",
        }
    )


def submit(student, task, evidence=EVIDENCE, ci_source="student", submitted_by=None) -> Submission:
    """Store a submission; its first attempt runs after the commit (eager Celery)."""
    with TestCase.captureOnCommitCallbacks(execute=True):
        return submission_create(
            student=student,
            task=task,
            evidence=evidence,
            submitted_by=submitted_by or student,
            ci_source=ci_source,
        )


def store(student, task, evidence=EVIDENCE) -> Submission:
    """Store a submission without running its review (the attempt stays queued)."""
    return submission_create(
        student=student, task=task, evidence=evidence, submitted_by=student, ci_source="student"
    )


def only_attempt(submission: Submission) -> ReviewAttempt:
    return submission.attempts.get()


def raw_row(attempt_id) -> tuple:
    """The attempt's row exactly as stored, column by column."""
    table = ReviewAttempt._meta.db_table
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT * FROM {table} WHERE id = %s", [attempt_id.hex])  # noqa: S608
        return cursor.fetchone()


@pytest.fixture
def offline(settings):
    settings.TUTOR_LLM_BASE_URL = None
    settings.TUTOR_LLM_MODEL = "offline"


# --- sequences -------------------------------------------------------------------


def test_seqs_strictly_increase_and_previous_links_the_same_students_task(
    student, other_student, task, offline
):
    a1 = store(student, task)
    b1 = store(other_student, task)
    a2 = store(student, task, {**EVIDENCE, "report": "second try"})
    a3 = store(student, task, {**EVIDENCE, "report": "third try"})

    subs = [a1, b1, a2, a3]
    seqs = [s.submission_seq for s in subs]
    assert seqs == sorted(seqs)
    assert len(set(seqs)) == 4
    assert [s.previous_id for s in subs] == [None, None, a1.pk, a2.pk]
    attempt_seqs = [only_attempt(s).attempt_seq for s in subs]
    assert attempt_seqs == sorted(attempt_seqs)
    assert len(set(attempt_seqs)) == 4


def test_attempt_seq_follows_creation_not_completion(student, task, offline):
    submission = store(student, task)
    first = only_attempt(submission)
    with TestCase.captureOnCommitCallbacks(execute=True):
        second = review_request(submission=submission, user=student, is_staff=True, force=True)
    second.refresh_from_db()
    assert second.status == AttemptStatus.COMPLETED
    run_review(first.pk)  # the older attempt finishes last
    first.refresh_from_db()
    assert first.finished_at >= second.finished_at
    assert first.attempt_seq < second.attempt_seq


def test_snapshot_hash_ignores_provenance_and_follows_spec_canonical_json(student, task, offline):
    import hashlib

    a = store(student, task, {**EVIDENCE, "head_sha": "abc", "repo_url": "https://x"})
    b = store(student, task, {**EVIDENCE, "head_sha": "def"})
    canonical = json.dumps(
        {"report": EVIDENCE["report"], "files": EVIDENCE["files"], "ci": EVIDENCE["ci"]},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    assert a.snapshot_hash == b.snapshot_hash == hashlib.sha256(canonical.encode()).hexdigest()


# --- the cache ---------------------------------------------------------------------


def test_identical_resubmission_reuses_completed_review_without_model_call(fake_llm, student, task):
    fake_llm.reply(reply("FAIL"))
    first = only_attempt(submit(student, task))
    assert first.status == AttemptStatus.COMPLETED
    assert len(fake_llm.requests) == 1

    second_sub = submit(student, task)
    second = only_attempt(second_sub)

    assert len(fake_llm.requests) == 1  # no new request reached the model
    assert second.status == AttemptStatus.COMPLETED
    assert second.reused_from_id == first.pk
    assert second.result == first.result
    assert second.generation_attempts == 0
    assert second.finished_at is not None
    assert second.attempt_seq > first.attempt_seq
    # The history shows two submissions and two attempts.
    assert Submission.objects.filter(student=student, task=task).count() == 2
    assert ReviewAttempt.objects.filter(submission__student=student).count() == 2
    assert second_sub.previous_id == first.submission_id


def test_reuse_of_a_reused_attempt_points_at_the_original(fake_llm, student, task):
    fake_llm.reply(reply())
    original = only_attempt(submit(student, task))
    only_attempt(submit(student, task))

    third = only_attempt(submit(student, task))

    assert third.reused_from_id == original.pk
    assert len(fake_llm.requests) == 1


def test_identical_evidence_from_two_students_is_reviewed_twice(fake_llm, student, other_student, task):
    fake_llm.reply(reply("PASS"), reply("PASS"))

    a = only_attempt(submit(student, task))
    b = only_attempt(submit(other_student, task))

    assert len(fake_llm.requests) == 2
    assert a.submission.snapshot_hash == b.submission.snapshot_hash
    assert a.reused_from_id is None
    assert b.reused_from_id is None
    assert b.generation_attempts == 1


def test_different_ci_source_is_not_reused(fake_llm, student, service, task):
    fake_llm.reply(reply(), reply())
    only_attempt(submit(student, task))

    by_service = only_attempt(submit(student, task, ci_source="service", submitted_by=service))

    assert by_service.reused_from_id is None
    assert len(fake_llm.requests) == 2


def test_model_change_is_not_reused(fake_llm, settings, student, task):
    fake_llm.reply(reply(), reply())
    only_attempt(submit(student, task))
    settings.TUTOR_LLM_MODEL = "another-model"

    again = only_attempt(submit(student, task))

    assert again.reused_from_id is None
    assert again.model == "another-model"
    assert len(fake_llm.requests) == 2


def test_unavailable_attempt_is_never_reused(fake_llm, student, task):
    fake_llm.reply(*[_http(502)] * 3, reply("PASS"))
    first = only_attempt(submit(student, task))
    assert first.status == AttemptStatus.UNAVAILABLE

    second = only_attempt(submit(student, task))

    assert second.reused_from_id is None
    assert second.status == AttemptStatus.COMPLETED
    assert len(fake_llm.requests) == 4


def test_invalid_attempt_is_never_reused(fake_llm, student, task):
    fake_llm.reply("garbage", "garbage", reply("PASS"))
    first = only_attempt(submit(student, task))
    assert first.status == AttemptStatus.INVALID

    second = only_attempt(submit(student, task))

    assert second.reused_from_id is None
    assert second.status == AttemptStatus.COMPLETED
    assert len(fake_llm.requests) == 3


def test_staff_force_gets_a_fresh_review(fake_llm, student, staff, task):
    fake_llm.reply(reply("FAIL"), reply("PASS"))
    submission = submit(student, task)

    with TestCase.captureOnCommitCallbacks(execute=True):
        forced = review_request(submission=submission, user=staff, is_staff=True, force=True)
    forced.refresh_from_db()

    assert forced.forced is True
    assert forced.reused_from_id is None
    assert forced.status == AttemptStatus.COMPLETED
    assert forced.result["overall"] == "PASS"
    assert len(fake_llm.requests) == 2


def test_staff_request_without_force_may_reuse(fake_llm, student, staff, task):
    fake_llm.reply(reply())
    submission = submit(student, task)
    first = only_attempt(submission)

    with TestCase.captureOnCommitCallbacks(execute=True):
        again = review_request(submission=submission, user=staff, is_staff=True, force=False)

    assert again.reused_from_id == first.pk
    assert len(fake_llm.requests) == 1


def _http(status: int):
    import httpx

    return lambda body: httpx.Response(status)


# --- immutability --------------------------------------------------------------------


def test_terminal_attempt_cannot_be_saved(student, task, offline):
    attempt = only_attempt(submit(student, task))
    assert attempt.status == AttemptStatus.COMPLETED

    attempt.result = {"overall": "PASS", "criteria": [], "next_step": ""}
    with pytest.raises(TerminalAttemptError):
        attempt.save()

    attempt.refresh_from_db()
    assert attempt.result["overall"] == "NEED_REVIEW"


def test_database_refuses_raw_update_of_terminal_attempt(student, task, offline):
    attempt = only_attempt(submit(student, task))
    before = raw_row(attempt.pk)

    with pytest.raises(DatabaseError), transaction.atomic():
        ReviewAttempt.objects.filter(pk=attempt.pk).update(status=AttemptStatus.QUEUED)

    assert raw_row(attempt.pk) == before


def test_stored_submission_cannot_be_saved_again(student, task, offline):
    submission = submit(student, task)
    submission.evidence = {"report": "rewritten", "files": {}, "ci": None, "head_sha": "", "repo_url": ""}
    with pytest.raises(TypeError):
        submission.save()

    submission.refresh_from_db()
    assert submission.evidence["report"] != "rewritten"


def test_non_terminal_attempt_can_still_be_updated(student, task):
    attempt = only_attempt(store(student, task))
    assert ReviewAttempt.objects.filter(pk=attempt.pk).update(dispatched_at=timezone.now()) == 1


# --- claims and duplicate deliveries --------------------------------------------------


def test_duplicate_run_review_changes_nothing(fake_llm, student, task):
    fake_llm.reply(reply(), reply("FAIL"))
    attempt = only_attempt(store(student, task))

    assert run_review(attempt.pk) == AttemptStatus.COMPLETED
    before = raw_row(attempt.pk)
    assert run_review(attempt.pk) is None

    assert raw_row(attempt.pk) == before
    assert len(fake_llm.requests) == 1


def test_duplicate_task_delivery_changes_nothing(fake_llm, student, task):
    fake_llm.reply(reply(), reply("FAIL"))
    attempt = only_attempt(store(student, task))

    first = review_attempt.apply(args=[str(attempt.pk)])
    before = raw_row(attempt.pk)
    second = review_attempt.apply(args=[str(attempt.pk)])

    assert first.get() == AttemptStatus.COMPLETED
    assert second.get() is None
    assert raw_row(attempt.pk) == before
    assert len(fake_llm.requests) == 1
    assert ReviewAttempt.objects.get(pk=attempt.pk).claim_count == 1


def test_second_claim_of_the_same_attempt_is_refused(student, task):
    attempt = only_attempt(store(student, task))

    assert attempt_claim(attempt_id=attempt.pk) is not None
    assert attempt_claim(attempt_id=attempt.pk) is None


def test_late_older_attempt_does_not_change_the_newer_one(fake_llm, student, staff, task):
    submission = store(student, task)
    old = only_attempt(submission)
    newer: dict = {}

    def slow_old_review(body):
        # While the old worker waits for the model, staff force a new review
        # that is claimed and completed first.
        with transaction.atomic():
            attempt = review_request(submission=submission, user=staff, is_staff=True, force=True)
        fake_llm.reply(reply("PASS"))
        assert run_review(attempt.pk) == AttemptStatus.COMPLETED
        newer["id"] = attempt.pk
        newer["row"] = raw_row(attempt.pk)
        return reply("FAIL")

    fake_llm.reply(slow_old_review)
    assert run_review(old.pk) == AttemptStatus.COMPLETED

    old.refresh_from_db()
    new = ReviewAttempt.objects.get(pk=newer["id"])
    assert raw_row(new.pk) == newer["row"]
    assert new.result["overall"] == "PASS"
    assert old.result["overall"] == "FAIL"
    assert new.attempt_seq > old.attempt_seq
    assert submission.attempts.order_by("-attempt_seq").first().pk == new.pk


def test_worker_that_lost_its_claim_cannot_write(student, task, dispatched):
    attempt = only_attempt(store(student, task))
    _, token = attempt_claim(attempt_id=attempt.pk)
    later = timezone.now() + timedelta(seconds=3600)
    attempts_sweep(now=later)  # the sweep takes the attempt back

    ok = attempt_complete(
        attempt_id=attempt.pk,
        claim=token,
        result={"overall": "PASS", "criteria": [], "next_step": ""},
        generation_attempts=1,
    )

    assert ok is False
    attempt.refresh_from_db()
    assert attempt.status == AttemptStatus.QUEUED
    assert attempt.result is None


# --- the sweep -----------------------------------------------------------------------


@pytest.fixture
def dispatched(monkeypatch):
    """Record dispatches instead of running them (eager mode would run them inline)."""
    sent: list[str] = []
    monkeypatch.setattr(review_attempt, "delay", lambda attempt_id: sent.append(attempt_id))
    return sent


def test_sweep_redispatches_queued_attempts_the_broker_cannot_hold_any_more(settings, student, task, offline):
    stuck = only_attempt(store(student, task))
    now = timezone.now()
    after = now + timedelta(seconds=settings.CELERY_VISIBILITY_TIMEOUT + 1)

    assert attempts_sweep(now=now)["redispatched"] == 0
    counts = attempts_sweep(now=after)

    assert counts == {"redispatched": 1, "requeued": 0, "worker_lost": 0}
    stuck.refresh_from_db()
    assert stuck.status == AttemptStatus.COMPLETED  # the eager worker ran it


def test_an_attempt_whose_publish_never_happened_is_sent_within_two_sweep_intervals(
    settings, student, task, dispatched
):
    # The process died between the commit and the publish: the on-commit
    # dispatch never ran (store() does not run on-commit callbacks).
    unpublished = only_attempt(store(student, task))
    window = 2 * settings.REVIEW_SWEEP_INTERVAL
    now = timezone.now()

    assert attempts_sweep(now=now + timedelta(seconds=window - 5))["redispatched"] == 0
    assert attempts_sweep(now=now + timedelta(seconds=window + 1))["redispatched"] == 1
    assert dispatched == [str(unpublished.pk)]


def test_a_published_attempt_waits_for_the_visibility_timeout(settings, student, task, dispatched):
    with TestCase.captureOnCommitCallbacks(execute=True):
        published = only_attempt(store(student, task))
    assert dispatched == [str(published.pk)]  # sent on commit
    now = timezone.now()

    assert (
        attempts_sweep(now=now + timedelta(seconds=2 * settings.REVIEW_SWEEP_INTERVAL + 1))["redispatched"]
        == 0
    )
    assert (
        attempts_sweep(now=now + timedelta(seconds=settings.CELERY_VISIBILITY_TIMEOUT + 1))["redispatched"]
        == 1
    )


def test_sweep_does_not_redispatch_the_same_attempt_twice_in_one_window(settings, student, task, dispatched):
    attempt = only_attempt(store(student, task))
    after = timezone.now() + timedelta(seconds=settings.CELERY_VISIBILITY_TIMEOUT + 1)

    attempts_sweep(now=after)
    attempts_sweep(now=after)

    assert dispatched == [str(attempt.pk)]


def test_sweep_requeues_lost_worker_once_then_ends_worker_lost(settings, student, task, dispatched):
    attempt = only_attempt(store(student, task))
    hard = timedelta(seconds=settings.REVIEW_HARD_TIME_LIMIT + 1)

    attempt_claim(attempt_id=attempt.pk)
    assert attempts_sweep(now=timezone.now() + timedelta(seconds=10))["requeued"] == 0
    first = attempts_sweep(now=timezone.now() + hard)

    assert first == {"redispatched": 0, "requeued": 1, "worker_lost": 0}
    attempt.refresh_from_db()
    assert attempt.status == AttemptStatus.QUEUED
    assert attempt.claim is None
    assert dispatched == [str(attempt.pk)]

    attempt_claim(attempt_id=attempt.pk)  # the re-dispatched delivery
    second = attempts_sweep(now=timezone.now() + hard)

    assert second == {"redispatched": 0, "requeued": 0, "worker_lost": 1}
    attempt.refresh_from_db()
    assert attempt.status == AttemptStatus.UNAVAILABLE
    assert attempt.error_code == ErrorCode.WORKER_LOST
    assert attempt.finished_at is not None
    assert attempt.result is None
    assert attempt.claim_count == 2
    assert dispatched == [str(attempt.pk)]


def test_sweep_leaves_terminal_attempts_alone(settings, student, task, offline):
    attempt = only_attempt(submit(student, task))
    before = raw_row(attempt.pk)

    counts = attempts_sweep(now=timezone.now() + timedelta(days=1))

    assert counts == {"redispatched": 0, "requeued": 0, "worker_lost": 0}
    assert raw_row(attempt.pk) == before


def test_sweep_survives_a_broker_outage(settings, student, task, monkeypatch):
    def broker_down(attempt_id):
        raise ConnectionError("broker down")

    monkeypatch.setattr(review_attempt, "delay", broker_down)
    attempt = only_attempt(store(student, task))

    counts = attempts_sweep(now=timezone.now() + timedelta(seconds=settings.CELERY_VISIBILITY_TIMEOUT + 1))

    assert counts["redispatched"] == 1
    assert ReviewAttempt.objects.get(pk=attempt.pk).status == AttemptStatus.QUEUED  # still the outbox


def test_sweep_reviews_command_prints_counts(settings, student, task, dispatched):
    attempt = only_attempt(store(student, task))
    long_ago = timezone.now() - timedelta(seconds=settings.CELERY_VISIBILITY_TIMEOUT + 5)
    ReviewAttempt.objects.filter(pk=attempt.pk).update(dispatched_at=long_ago)
    out = StringIO()

    call_command("sweep_reviews", stdout=out)

    assert out.getvalue().strip() == ("sweep: 1 re-dispatched, 0 returned to queued, 0 ended WORKER_LOST")
    assert dispatched == [str(attempt.pk)]


# --- staff verdicts ----------------------------------------------------------------------


def test_staff_verdict_is_a_new_attempt_and_leaves_the_old_row_byte_identical(student, staff, task, offline):
    submission = submit(student, task)
    old = only_attempt(submission)
    assert old.result["overall"] == "NEED_REVIEW"
    before = raw_row(old.pk)

    verdict = staff_verdict_create(
        submission=submission,
        staff=staff,
        criteria=[{"rubric_id": "A3", "status": "PASS", "reason": "read it: the explanation is right"}],
    )

    assert raw_row(old.pk) == before
    assert verdict.pk != old.pk
    assert verdict.kind == AttemptKind.STAFF_VERDICT
    assert verdict.status == AttemptStatus.COMPLETED
    assert verdict.attempt_seq > old.attempt_seq
    assert verdict.requested_by_id == staff.pk
    by_id = {c["rubric_id"]: c for c in verdict.result["criteria"]}
    assert by_id["A3"] == {
        **{k: v for k, v in by_id["A3"].items() if k not in ("status", "reason", "basis", "evidence")},
        "status": "PASS",
        "reason": "read it: the explanation is right",
        "basis": "staff",
        "evidence": "",
    }
    old_by_id = {c["rubric_id"]: c for c in old.result["criteria"]}
    for unchanged in ("A1", "A2", "L1"):
        assert by_id[unchanged] == old_by_id[unchanged]
    assert verdict.result["overall"] == "PASS"
    assert (verdict.rubric_version, verdict.rubric_hash) == (old.rubric_version, old.rubric_hash)


def test_staff_verdict_can_overrule_a_model_pass(fake_llm, student, staff, task):
    fake_llm.reply(reply("PASS"))
    submission = submit(student, task)

    verdict = staff_verdict_create(
        submission=submission,
        staff=staff,
        criteria=[{"rubric_id": "A3", "status": "FAIL", "reason": "the explanation misses NaN"}],
    )

    assert verdict.result["overall"] == "FAIL"
    assert len(fake_llm.requests) == 1


def test_staff_verdict_before_any_review_starts_from_need_review(student, staff, task):
    submission = store(student, task)

    verdict = staff_verdict_create(
        submission=submission,
        staff=staff,
        criteria=[{"rubric_id": "A1", "status": "PASS", "reason": "ran it"}],
    )

    statuses = {c["rubric_id"]: (c["status"], c["basis"]) for c in verdict.result["criteria"]}
    assert statuses == {
        "A1": ("PASS", "staff"),
        "A2": ("NEED_REVIEW", "none"),
        "A3": ("NEED_REVIEW", "none"),
        "L1": ("NEED_REVIEW", "none"),
    }
    assert verdict.result["overall"] == "NEED_REVIEW"


def test_staff_verdict_with_unknown_criterion_stores_nothing(student, staff, task):
    submission = store(student, task)
    with pytest.raises(VerdictError):
        staff_verdict_create(
            submission=submission,
            staff=staff,
            criteria=[{"rubric_id": "Z9", "status": "PASS", "reason": "x"}],
        )
    assert submission.attempts.count() == 1


# --- re-review after a rubric change --------------------------------------------------------


def test_import_course_rereview_queues_one_attempt_per_students_latest_submission(db, tmp_path, offline):
    path = tmp_path / "course.json"
    path.write_text(json.dumps(course_data("rr-101", tasks=2)))
    call_command("import_course", str(path), stdout=StringIO())
    t1 = Task.objects.select_related("current_rubric").get(course__slug="rr-101", slug="t1")
    t2 = Task.objects.select_related("current_rubric").get(course__slug="rr-101", slug="t2")
    alice, bob = enroll(t1.course, "ann"), enroll(t1.course, "ben")
    alice_old = submit(alice, t1)
    alice_latest = submit(alice, t1, {**EVIDENCE, "report": "second"})
    bob_latest = submit(bob, t1)
    other_task = submit(alice, t2)
    before = {s.pk: s.attempts.count() for s in (alice_old, alice_latest, bob_latest, other_task)}

    bumped = course_data("rr-101", tasks=2, version="2026.2")
    bumped["tasks"][1]["rubric"]["version"] = "2026.1"  # t2 keeps its rubric
    path.write_text(json.dumps(bumped))
    out = StringIO()
    call_command("import_course", str(path), "--rereview", stdout=out)

    assert "re-review queued for 2 submissions of t1" in out.getvalue()
    after = {s.pk: s.attempts.count() for s in (alice_old, alice_latest, bob_latest, other_task)}
    assert after == {
        alice_old.pk: before[alice_old.pk],
        alice_latest.pk: before[alice_latest.pk] + 1,
        bob_latest.pk: before[bob_latest.pk] + 1,
        other_task.pk: before[other_task.pk],
    }
    for submission in (alice_latest, bob_latest):
        newest = submission.attempts.order_by("-attempt_seq").first()
        assert newest.rubric_version == "2026.2"
        assert newest.reused_from_id is None
        assert newest.status == AttemptStatus.QUEUED  # dispatched after the commit


def test_import_course_without_rereview_queues_nothing(db, tmp_path, offline):
    path = tmp_path / "course.json"
    path.write_text(json.dumps(course_data("nr-101")))
    call_command("import_course", str(path), stdout=StringIO())
    t1 = Task.objects.select_related("current_rubric").get(course__slug="nr-101", slug="t1")
    submission = submit(enroll(t1.course, "cy"), t1)

    path.write_text(json.dumps(course_data("nr-101", version="2026.2")))
    call_command("import_course", str(path), stdout=StringIO())

    assert submission.attempts.count() == 1


# --- model-call retention ------------------------------------------------------------------------


def test_purge_model_calls_deletes_only_rows_older_than_the_retention(db, settings):
    settings.MODEL_CALL_RETENTION_DAYS = 30
    now = timezone.now()
    ages = {"fresh": 1, "edge": 29, "old": 31, "ancient": 400}
    for label, days in ages.items():
        call = ModelCall.objects.create(
            purpose=ModelCall.Purpose.REVIEW,
            correlation_id=label,
            model=MODEL,
            request_messages=[],
            status=ModelCall.Status.OK,
        )
        ModelCall.objects.filter(pk=call.pk).update(created_at=now - timedelta(days=days))
    out = StringIO()

    call_command("purge_model_calls", stdout=out)

    assert sorted(ModelCall.objects.values_list("correlation_id", flat=True)) == ["edge", "fresh"]
    assert "deleted 2 model calls older than 30 days" in out.getvalue()


def test_rereview_also_catches_up_a_bump_imported_earlier_without_it(db, tmp_path, offline):
    path = tmp_path / "course.json"
    path.write_text(json.dumps(course_data("rr-202")))
    call_command("import_course", str(path), stdout=StringIO())
    t1 = Task.objects.select_related("current_rubric").get(course__slug="rr-202", slug="t1")
    latest = submit(enroll(t1.course, "cy"), t1)
    path.write_text(json.dumps(course_data("rr-202", version="2026.2")))
    call_command("import_course", str(path), stdout=StringIO())  # bumped, no --rereview

    out = StringIO()
    call_command("import_course", str(path), "--rereview", stdout=out)  # nothing changes in the file
    again = StringIO()
    call_command("import_course", str(path), "--rereview", stdout=again)

    assert "re-review queued for 1 submissions of t1" in out.getvalue()
    assert latest.attempts.order_by("-attempt_seq").first().rubric_version == "2026.2"
    assert "every latest submission is reviewed under the current rules" in again.getvalue()
