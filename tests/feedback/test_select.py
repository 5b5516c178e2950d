"""select_feedback: the seven states of SPEC §3 and the rules that pick them."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from feedback.models import AttemptStatus, Submission
from feedback.selectors import FeedbackState, InvalidReason, select_feedback
from feedback.services.intake import attempt_create
from feedback.services.verdicts import staff_verdict_create
from feedback.services.worker import attempt_claim, attempt_complete
from tests.factories import (
    criterion_entry,
    make_attempt,
    make_course,
    make_submission,
    make_task,
    review_result,
)
from tutor.models import Task

ATTEMPT_FIELDS = (
    "attempt_id",
    "attempt_seq",
    "attempt_status",
    "review_status",
    "rubric_version",
    "prompt_version",
    "engine_version",
    "model",
    "reused",
    "result",
)


def failing_result():
    return review_result(
        [
            criterion_entry("A1", "PASS", basis="ci"),
            criterion_entry("A3", "NEED_REVIEW", basis="model"),
            criterion_entry("A2", "FAIL"),
            criterion_entry("L1", "FAIL", kind="learning"),
        ]
    )


def passing_result():
    return review_result(
        [criterion_entry("A1", "PASS"), criterion_entry("L1", "FAIL", kind="learning")],
        next_step="Read about edge cases.",
    )


def fresh_task(task):
    """The task as a tutor request loads it, after a re-import changed its rubric."""
    return make_task(task.course, task.slug)


# --- the seven states ---------------------------------------------------------------


def test_no_submission_is_none(task, student):
    selection = select_feedback(student, task)

    assert selection.state == FeedbackState.NONE
    assert selection.submission_id is None
    assert selection.attempt_id is None
    assert selection.blocking_items == []
    assert selection.next_step is None


def test_submission_without_attempt_is_pending_with_null_attempt_fields(task, student):
    submission = make_submission(student, task)

    selection = select_feedback(student, task)

    assert selection.state == FeedbackState.PENDING
    assert selection.submission_id == submission.id
    assert selection.submission_seq == submission.submission_seq
    assert selection.snapshot_hash == submission.snapshot_hash
    assert all(getattr(selection, name) is None for name in ATTEMPT_FIELDS)


@pytest.mark.parametrize("status", [AttemptStatus.QUEUED, AttemptStatus.RUNNING])
def test_queued_or_running_attempt_is_pending_and_names_that_attempt(task, student, status):
    attempt = make_attempt(make_submission(student, task), status)

    selection = select_feedback(student, task)

    assert selection.state == FeedbackState.PENDING
    assert selection.attempt_id == attempt.id
    assert selection.attempt_seq == attempt.attempt_seq
    assert selection.attempt_status == status
    assert selection.review_status is None
    assert selection.blocking_items == []


def test_queued_attempt_from_the_service_is_pending(task, student):
    submission = make_submission(student, task)
    with transaction.atomic():
        attempt = attempt_create(submission=submission)

    selection = select_feedback(student, task)

    assert selection.state == FeedbackState.PENDING
    assert selection.attempt_id == attempt.id


def test_unavailable_attempt_is_unavailable_not_a_failure(task, student):
    attempt = make_attempt(make_submission(student, task), AttemptStatus.UNAVAILABLE)

    selection = select_feedback(student, task)

    assert selection.state == FeedbackState.UNAVAILABLE
    assert selection.attempt_id == attempt.id
    assert selection.review_status is None
    assert selection.blocking_items == []


def test_invalid_attempt_is_invalid_with_reason_attempt_invalid(task, student):
    attempt = make_attempt(make_submission(student, task), AttemptStatus.INVALID)

    selection = select_feedback(student, task)

    assert selection.state == FeedbackState.INVALID
    assert selection.reason == InvalidReason.ATTEMPT_INVALID
    assert selection.attempt_id == attempt.id
    assert selection.blocking_items == []


def test_completed_pass_is_passed_without_blocking_items(task, student):
    attempt = make_attempt(make_submission(student, task), result=passing_result())

    selection = select_feedback(student, task)

    assert selection.state == FeedbackState.PASSED
    assert selection.reason is None
    assert selection.attempt_id == attempt.id
    assert selection.review_status == "PASS"
    assert selection.blocking_items == []
    assert selection.next_step == "Read about edge cases."


def test_completed_fail_is_current_with_non_pass_acceptance_items_fail_first(task, student):
    attempt = make_attempt(make_submission(student, task), result=failing_result())

    selection = select_feedback(student, task)

    assert selection.state == FeedbackState.CURRENT
    assert selection.attempt_id == attempt.id
    assert selection.attempt_status == AttemptStatus.COMPLETED
    assert selection.review_status == "FAIL"
    assert selection.reused is False
    # PASS and learning criteria never block; FAIL comes before NEED_REVIEW.
    assert [(c["rubric_id"], c["status"]) for c in selection.blocking_items] == [
        ("A2", "FAIL"),
        ("A3", "NEED_REVIEW"),
    ]


def test_need_review_only_is_current(task, student):
    make_attempt(
        make_submission(student, task),
        result=review_result([criterion_entry("A1", "PASS"), criterion_entry("A3", "NEED_REVIEW")]),
    )

    selection = select_feedback(student, task)

    assert selection.state == FeedbackState.CURRENT
    assert selection.review_status == "NEED_REVIEW"


def test_blocking_items_with_equal_status_are_in_rubric_id_order(task, student):
    make_attempt(
        make_submission(student, task),
        result=review_result([criterion_entry(rid, "FAIL") for rid in ("C", "A", "B")]),
    )

    selection = select_feedback(student, task)

    assert [c["rubric_id"] for c in selection.blocking_items] == ["A", "B", "C"]


# --- latest submission, newest attempt ---------------------------------------------


def test_newer_submission_not_reviewed_is_pending_and_old_verdict_not_promoted(task, student):
    make_attempt(make_submission(student, task), result=failing_result())
    newer = make_submission(student, task)

    selection = select_feedback(student, task)

    assert selection.state == FeedbackState.PENDING
    assert selection.submission_id == newer.id
    assert selection.attempt_id is None
    assert selection.blocking_items == []


def test_newer_submission_with_queued_attempt_is_pending(task, student):
    make_attempt(make_submission(student, task), result=passing_result())
    newer = make_submission(student, task)
    queued = make_attempt(newer, AttemptStatus.QUEUED)

    selection = select_feedback(student, task)

    assert selection.state == FeedbackState.PENDING
    assert selection.submission_id == newer.id
    assert selection.attempt_id == queued.id


def test_newer_attempt_running_while_older_completed_is_pending(task, student):
    submission = make_submission(student, task)
    make_attempt(submission, result=failing_result())
    running = make_attempt(submission, AttemptStatus.RUNNING)

    selection = select_feedback(student, task)

    assert selection.state == FeedbackState.PENDING
    assert selection.attempt_id == running.id
    assert selection.blocking_items == []


def test_late_old_attempt_does_not_override_newer(task, student):
    submission = make_submission(student, task)
    with transaction.atomic():
        older = attempt_create(submission=submission, forced=True)
        newer = attempt_create(submission=submission, forced=True)
    _, older_claim = attempt_claim(attempt_id=older.id)
    _, newer_claim = attempt_claim(attempt_id=newer.id)

    assert attempt_complete(
        attempt_id=newer.id, claim=newer_claim, result=passing_result(), generation_attempts=1
    )
    assert attempt_complete(
        attempt_id=older.id, claim=older_claim, result=failing_result(), generation_attempts=1
    )

    selection = select_feedback(student, task)
    assert selection.state == FeedbackState.PASSED
    assert selection.attempt_id == newer.id


def test_later_unavailable_attempt_replaces_an_earlier_verdict(task, student):
    submission = make_submission(student, task)
    make_attempt(submission, result=failing_result())
    make_attempt(submission, AttemptStatus.UNAVAILABLE)

    assert select_feedback(student, task).state == FeedbackState.UNAVAILABLE


def test_order_is_by_seq_never_by_timestamp(task, student):
    now = timezone.now()
    older = make_submission(student, task)
    make_attempt(older, result=passing_result())
    newer = make_submission(student, task)
    first = make_attempt(newer, result=passing_result(), created_at=now + timedelta(days=2))
    second = make_attempt(newer, result=failing_result(), created_at=now + timedelta(days=1))
    # The older submission looks newest by its timestamp.
    Submission.objects.filter(pk=older.pk).update(created_at=now + timedelta(days=3))
    Submission.objects.filter(pk=newer.pk).update(created_at=now - timedelta(days=3))
    assert first.created_at > second.created_at

    selection = select_feedback(student, task)

    assert selection.submission_id == newer.id
    assert selection.attempt_id == second.id
    assert selection.state == FeedbackState.CURRENT


def test_staff_verdict_is_the_newest_attempt(task, student, staff):
    submission = make_submission(student, task)
    make_attempt(submission, result=failing_result())

    verdict = staff_verdict_create(
        submission=submission,
        staff=staff,
        criteria=[
            {"rubric_id": "A2", "status": "PASS", "reason": "checked by hand"},
            {"rubric_id": "A3", "status": "PASS", "reason": "explanation is right"},
        ],
    )

    selection = select_feedback(student, task)
    assert selection.attempt_id == verdict.id
    assert selection.state == FeedbackState.PASSED


# --- never another student's or task's -------------------------------------------------


def test_another_students_submissions_are_never_selected(task, student, other_student):
    mine = make_submission(student, task)
    make_attempt(mine, result=failing_result())
    theirs = make_submission(other_student, task)
    make_attempt(theirs, result=passing_result())

    selection = select_feedback(student, task)

    assert selection.submission_id == mine.id
    assert selection.state == FeedbackState.CURRENT


def test_another_students_submission_does_not_count_as_mine(task, student, other_student):
    make_attempt(make_submission(other_student, task), result=failing_result())

    assert select_feedback(student, task).state == FeedbackState.NONE


def test_another_tasks_submissions_are_never_selected(student):
    course = make_course(tasks=2)
    first, second = make_task(course, "t1"), make_task(course, "t2")
    make_attempt(make_submission(student, second), result=failing_result())

    assert select_feedback(student, first).state == FeedbackState.NONE

    mine = make_submission(student, first)
    make_attempt(mine, result=passing_result())
    make_submission(student, second)  # newer, for the other task

    selection = select_feedback(student, first)
    assert selection.submission_id == mine.id
    assert selection.state == FeedbackState.PASSED


# --- versions ------------------------------------------------------------------------------


def test_rubric_version_change_makes_the_review_stale(task, student):
    make_attempt(make_submission(student, task), result=failing_result())

    make_course(task.course.slug, version="2026.2")
    task = fresh_task(task)

    selection = select_feedback(student, task)
    assert selection.state == FeedbackState.STALE_RULES
    assert selection.submission_id is not None
    assert all(getattr(selection, name) is None for name in ATTEMPT_FIELDS)
    assert selection.blocking_items == []


def test_new_attempt_under_new_rubric_is_current_again(task, student):
    submission = make_submission(student, task)
    make_attempt(submission, result=passing_result())
    make_course(task.course.slug, version="2026.2")
    task = fresh_task(task)
    submission.task = task

    attempt = make_attempt(submission, result=failing_result())

    selection = select_feedback(student, task)
    assert selection.state == FeedbackState.CURRENT
    assert selection.attempt_id == attempt.id
    assert selection.rubric_version == "2026.2"


@pytest.mark.parametrize(
    "changed",
    [
        {"rubric_version": "2025.9"},
        {"rubric_hash": "0" * 64},
        {"prompt_version": "review-prompt-0"},
        {"engine_version": "review-engine-0"},
    ],
)
def test_any_version_mismatch_is_stale(task, student, changed):
    make_attempt(make_submission(student, task), result=failing_result(), **changed)

    assert select_feedback(student, task).state == FeedbackState.STALE_RULES


def test_prompt_version_change_in_settings_makes_the_review_stale(task, student, settings):
    make_attempt(make_submission(student, task), result=failing_result())

    settings.REVIEW_PROMPT_VERSION = "review-prompt-next"

    assert select_feedback(student, task).state == FeedbackState.STALE_RULES


def test_model_change_alone_does_not_make_the_review_stale(task, student, settings):
    attempt = make_attempt(make_submission(student, task), result=failing_result(), model="model-a")

    settings.TUTOR_LLM_MODEL = "model-b"

    selection = select_feedback(student, task)
    assert selection.state == FeedbackState.CURRENT
    assert selection.attempt_id == attempt.id
    assert selection.model == "model-a"


def test_task_without_current_rubric_has_no_compatible_attempt(task, student):
    make_attempt(make_submission(student, task), result=failing_result())
    Task.objects.filter(pk=task.pk).update(current_rubric=None)

    assert select_feedback(student, fresh_task(task)).state == FeedbackState.STALE_RULES


def test_newest_compatible_attempt_wins_over_a_newer_incompatible_one(task, student):
    submission = make_submission(student, task)
    compatible = make_attempt(submission, result=failing_result())
    make_attempt(submission, result=passing_result(), engine_version="review-engine-0")

    selection = select_feedback(student, task)

    assert selection.state == FeedbackState.CURRENT
    assert selection.attempt_id == compatible.id


def test_stale_attempt_does_not_hide_a_queued_compatible_one(task, student):
    submission = make_submission(student, task)
    make_attempt(submission, result=failing_result(), rubric_version="2025.9")
    queued = make_attempt(submission, AttemptStatus.QUEUED)

    selection = select_feedback(student, task)

    assert selection.state == FeedbackState.PENDING
    assert selection.attempt_id == queued.id


def test_reused_verdict_is_marked_reused(task, student):
    evidence = {"report": "first and undefined"}
    original = make_attempt(make_submission(student, task, evidence), result=failing_result())
    resubmitted = make_submission(student, task, evidence)
    with transaction.atomic():
        reused = attempt_create(submission=resubmitted)
    assert reused.reused_from_id == original.id

    selection = select_feedback(student, task)

    assert selection.submission_id == resubmitted.id
    assert selection.attempt_id == reused.id
    assert selection.reused is True
    assert selection.state == FeedbackState.CURRENT


# --- the result contract ----------------------------------------------------------------------


def broken(mutate):
    result = failing_result()
    mutate(result)
    return result


@pytest.mark.parametrize(
    "result",
    [
        pytest.param(
            review_result([criterion_entry("A" * 65, "FAIL")]),
            id="rubric_id-65-chars",
        ),
        pytest.param(review_result([criterion_entry("", "FAIL")]), id="empty-rubric_id"),
        pytest.param(
            broken(lambda r: r["criteria"][1].update(status="MAYBE")),
            id="unknown-criterion-status",
        ),
        pytest.param(broken(lambda r: r.update(overall="GOOD")), id="unknown-overall"),
        pytest.param(broken(lambda r: r.update(overall="PASS")), id="overall-contradicts-criteria"),
        pytest.param(broken(lambda r: r["criteria"][1].update(basis="vibes")), id="unknown-basis"),
        pytest.param(broken(lambda r: r["criteria"][1].update(kind="bonus")), id="unknown-kind"),
        pytest.param(broken(lambda r: r["criteria"][1].pop("reason")), id="missing-reason"),
        pytest.param(broken(lambda r: r.pop("next_step")), id="missing-next_step"),
        pytest.param(broken(lambda r: r.pop("criteria")), id="missing-criteria"),
        pytest.param(broken(lambda r: r["criteria"][1].update(evidence=42)), id="evidence-not-a-string"),
        pytest.param(broken(lambda r: r["criteria"].append("A9")), id="criterion-not-an-object"),
        pytest.param(broken(lambda r: r.update(criteria={"A1": "FAIL"})), id="criteria-not-a-list"),
        pytest.param(
            broken(lambda r: r["criteria"].append(dict(r["criteria"][2]))), id="duplicate-rubric_id"
        ),
        pytest.param(["FAIL"], id="result-not-an-object"),
    ],
)
def test_completed_attempt_breaking_the_result_contract_is_invalid(task, student, result):
    attempt = make_attempt(make_submission(student, task), result=result)

    selection = select_feedback(student, task)

    assert selection.state == FeedbackState.INVALID
    assert selection.reason == InvalidReason.CONTRACT_VIOLATION
    assert selection.attempt_id == attempt.id
    assert selection.review_status is None
    assert selection.result is None
    assert selection.blocking_items == []


def test_rubric_id_of_64_chars_is_accepted(task, student):
    make_attempt(make_submission(student, task), result=review_result([criterion_entry("A" * 64, "FAIL")]))

    selection = select_feedback(student, task)

    assert selection.state == FeedbackState.CURRENT
    assert selection.blocking_items[0]["rubric_id"] == "A" * 64


def test_rubric_id_limit_follows_settings(task, student, settings):
    make_attempt(make_submission(student, task), result=review_result([criterion_entry("A" * 10, "FAIL")]))

    settings.FEEDBACK_RUBRIC_ID_CHARS = 9

    assert select_feedback(student, task).reason == InvalidReason.CONTRACT_VIOLATION


# --- one statement, whatever the history ------------------------------------------------------


def build_history(student, task, count: int) -> None:
    """``count`` earlier submissions with a verdict each, then a latest one
    with ``count`` attempts, the newest completed."""
    for _ in range(count):
        make_attempt(make_submission(student, task), result=passing_result())
    latest = make_submission(student, task)
    for _ in range(count - 1):
        make_attempt(latest, AttemptStatus.UNAVAILABLE)
    make_attempt(latest, result=failing_result())


def test_query_count_is_the_same_for_1_and_200_submissions(
    task, student, other_student, django_assert_num_queries
):
    build_history(student, task, 1)
    build_history(other_student, task, 200)

    # Exactly one query each: the latest submission LEFT JOINed with its
    # deciding attempt; the task and its current rubric are already loaded.
    with django_assert_num_queries(1):
        short = select_feedback(student, task)
    with django_assert_num_queries(1):
        long = select_feedback(other_student, task)

    assert short.state == long.state == FeedbackState.CURRENT
    assert long.attempt_seq > short.attempt_seq
