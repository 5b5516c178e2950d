"""Capture from reviews (SPEC §6 capture a): a criterion FAILed with an
external basis and PASSed on the next submission is one pending draft --
never from unavailable or invalid attempts, never from hidden criteria, and
exactly once whatever the deliveries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.test import Client, TestCase

from feedback.models import ReviewAttempt
from feedback.signals import attempt_finished
from lessons.models import Lesson
from lessons.services.capture import lessons_capture_from_attempt
from tests.factories import (
    client_for,
    course_data,
    criterion_entry,
    enroll,
    make_attempt,
    make_course,
    make_submission,
    make_task,
)
from tests.factories import review_result as result
from tutor.coursefile import course_import, load_course_file, validate_course
from tutor.models import AuditEvent, Enrollment

CI_FAIL = criterion_entry(
    "A1",
    "FAIL",
    basis="ci",
    reason="CI failed with exit code 1",
    evidence="1 failing\n  first([]) should be undefined",
)
CI_PASS = criterion_entry("A1", "PASS", basis="ci", reason="CI passed", evidence="3 passing")
CHECK_FAIL = criterion_entry("A2", "FAIL", basis="check", reason="the report does not mention: undefined")
CHECK_PASS = criterion_entry("A2", "PASS", basis="check", reason="the report mentions first, undefined")


def reviewed(student, task, *criteria, status="completed", next_step="Fix the first failing item."):
    submission = make_submission(student, task, ci_source="service")
    return make_attempt(submission, status=status, result=result(list(criteria), next_step=next_step))


@pytest.mark.django_db
def test_a_fixed_criterion_becomes_one_pending_draft_per_criterion(course, task, student):
    reviewed(student, task, CI_FAIL, CHECK_FAIL, next_step="Handle the empty array in first().")
    fixing = reviewed(student, task, CI_PASS, CHECK_PASS)

    created = lessons_capture_from_attempt(attempt_id=fixing.pk)

    assert len(created) == 2
    ci = Lesson.objects.get(source_rubric_id="A1")
    assert (ci.status, ci.kind, ci.source, ci.course, ci.source_attempt) == (
        "pending",
        "guardrail",
        "review",
        course,
        fixing,
    )
    assert ci.source_submission_id == fixing.submission_id
    assert ci.tags == ["javascript", "docs"]
    assert ci.symptoms == ["CI failed with exit code 1", "1 failing", "first([]) should be undefined"]
    assert ci.title == "[t1 A1] CI failed with exit code 1"
    assert "Symptom: CI failed with exit code 1" in ci.body
    # What the passing evidence shows changed -- not the review's next step.
    assert (
        "What fixed it: the CI result changed from 'CI failed with exit code 1' to 'CI passed'; "
        "its log now ends: 3 passing"
    ) in ci.body
    assert "Handle the empty array" not in ci.body
    assert "(A1) passed on the next submission (CI passed)" in ci.body
    a2 = Lesson.objects.get(source_rubric_id="A2").body
    assert "What fixed it: the report mentions first, undefined (before: the report does not mention" in a2
    assert Lesson.objects.get(source_rubric_id="A2").symptoms == ["the report does not mention: undefined"]
    event = AuditEvent.objects.get(target_id=str(ci.pk))
    assert (event.event, event.actor, event.actor_label, event.to_state) == (
        "lesson_created",
        None,
        "review capture",
        "pending",
    )


@pytest.mark.django_db
def test_a_draft_carries_at_most_max_tags_of_its_task_and_their_pairs(task, student):
    from lessons.models import MAX_TAGS, LessonKey

    task.tags = [f"tag-{i:02d}" for i in range(60)]
    task.save(update_fields=["tags"])
    reviewed(student, task, CI_FAIL)
    fixing = reviewed(student, task, CI_PASS)

    [draft] = lessons_capture_from_attempt(attempt_id=fixing.pk)

    assert draft.tags == task.tags[:MAX_TAGS]
    pairs = LessonKey.objects.filter(lesson=draft, kind="tag_pair").count()
    assert pairs == MAX_TAGS * (MAX_TAGS - 1) // 2  # not 60·59/2


@pytest.mark.django_db
def test_capture_listens_to_attempt_finished_and_happens_once_whatever_the_deliveries(task, student):
    reviewed(student, task, CI_FAIL)
    fixing = reviewed(student, task, CI_PASS)

    for _ in range(3):  # a duplicate delivery of the hook, or of the capture
        attempt_finished.send(sender=ReviewAttempt, attempt_id=fixing.pk, status="completed")
    rereview = make_attempt(fixing.submission, result=result([CI_PASS]))  # the fixing submission re-reviewed
    attempt_finished.send(sender=ReviewAttempt, attempt_id=rereview.pk, status="completed")

    assert Lesson.objects.filter(source="review").count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize("side", ["failing", "fixing"])
@pytest.mark.parametrize("status", ["unavailable", "invalid"])
def test_never_from_an_unavailable_or_invalid_attempt(task, student, side, status):
    # An unavailable attempt keeps its machine-check verdicts (SPEC §2), still no lesson.
    first = reviewed(student, task, CI_FAIL, status=status if side == "failing" else "completed")
    fixing = reviewed(student, task, CI_PASS, status=status if side == "fixing" else "completed")
    assert ReviewAttempt.objects.get(pk=first.pk).result is not None

    lessons_capture_from_attempt(attempt_id=fixing.pk)
    attempt_finished.send(sender=ReviewAttempt, attempt_id=fixing.pk, status=fixing.status)

    assert Lesson.objects.count() == 0


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            criterion_entry("A1", "FAIL", basis="self_report"),
            criterion_entry("A1", "PASS", basis="self_report"),
        ),
        (criterion_entry("A3", "FAIL", basis="model"), criterion_entry("A3", "PASS", basis="model")),
        (CI_FAIL, criterion_entry("A1", "PASS", basis="staff")),
        (CI_FAIL, criterion_entry("A1", "PASS", basis="self_report")),
        (CI_FAIL, criterion_entry("A1", "NEED_REVIEW", basis="none")),
        (criterion_entry("A1", "NEED_REVIEW", basis="ci"), CI_PASS),
    ],
    ids=["self-report", "model", "staff-pass", "self-reported-pass", "not-passed", "not-failed"],
)
def test_only_an_external_fail_then_an_external_pass_is_a_verified_fix(task, student, before, after):
    reviewed(student, task, before)
    fixing = reviewed(student, task, after)

    assert lessons_capture_from_attempt(attempt_id=fixing.pk) == []


@pytest.mark.django_db
def test_only_the_students_next_submission_counts(task, student, other_student):
    reviewed(student, task, CI_FAIL)
    reviewed(other_student, task, CI_PASS)  # another student's pass fixes nothing of alice's
    still_failing = reviewed(student, task, CI_FAIL)
    fixing = reviewed(student, task, CI_PASS)
    passing_again = reviewed(student, task, CI_PASS)

    for attempt in (still_failing, fixing, passing_again):
        lessons_capture_from_attempt(attempt_id=attempt.pk)

    [lesson] = Lesson.objects.all()
    assert lesson.source_submission_id == fixing.submission_id


@pytest.mark.django_db
def test_never_from_a_hidden_criterion(db):
    criteria = [
        {"id": "A1", "kind": "acceptance", "text": "CI passes", "check": {"type": "ci_passed"}},
        {
            "id": "H1",
            "kind": "acceptance",
            "text": "Hidden tests pass",
            "check": {"type": "ci_passed"},
            "visibility": "hidden",
        },
    ]
    course = course_import(spec=validate_course(course_data("hidden-101", criteria=criteria))).course
    task = make_task(course)
    student = enroll(course, "dave")
    hidden_fail = criterion_entry("H1", "FAIL", basis="ci", reason="expected 42, got 41")
    reviewed(student, task, CI_FAIL, hidden_fail)
    fixing = reviewed(student, task, CI_PASS, criterion_entry("H1", "PASS", basis="ci"))

    lessons_capture_from_attempt(attempt_id=fixing.pk)

    assert list(Lesson.objects.values_list("source_rubric_id", flat=True)) == ["A1"]
    assert not Lesson.objects.filter(body__contains="expected 42").exists()


@pytest.mark.django_db
def test_a_rubric_version_change_between_the_submissions_captures_nothing(task, student):
    reviewed(student, task, CI_FAIL)
    fixing = make_attempt(make_submission(student, task), result=result([CI_PASS]), rubric_version="2027.1")

    assert lessons_capture_from_attempt(attempt_id=fixing.pk) == []


@pytest.mark.django_db
def test_secrets_in_the_failing_review_are_redacted_before_the_draft_is_stored(task, student):
    leaky = criterion_entry(
        "A1",
        "FAIL",
        basis="ci",
        reason="CI failed: could not reach 10.1.2.3",
        evidence="export GITHUB_TOKEN=ghp_abcdefghijklmnopqrstuvwxyz0123\nmail ops@example.com",
    )
    reviewed(student, task, leaky)
    fixing = reviewed(student, task, CI_PASS)

    [lesson] = lessons_capture_from_attempt(attempt_id=fixing.pk)

    stored = " ".join([lesson.title, lesson.body, *lesson.symptoms])
    for secret in ("10.1.2.3", "ghp_abcdefghijklmnopqrstuvwxyz0123", "ops@example.com"):
        assert secret not in stored
    assert lesson.redactions >= 5  # in the title, the body and the symptoms
    assert set(lesson.redaction_kinds) >= {"ip_address", "api_key", "email"}


# --- hidden checks stay hidden (SPEC §6, §9): a draft is built from what the
# student may see of both reviews, through the real API and eager review.

HIDDEN_LOG = "expected 42, got 41 in hidden/answer.spec.js"
HIDDEN_TERM = "sentinel-undefined-branch"


def hidden_course(slug, criteria):
    course = make_course(slug, criteria=criteria)
    return make_task(course), enroll(course, "alice"), enroll(course, "ci", Enrollment.Role.SERVICE)


def ci_submit(service, task, student, *, passed: bool, report: str):
    ci = (
        {"status": "passed", "exit_code": 0, "log_tail": "3 passing"}
        if passed
        else {"status": "failed", "exit_code": 1, "log_tail": f"1 failing\n{HIDDEN_LOG}"}
    )
    with TestCase.captureOnCommitCallbacks(execute=True):  # the review runs after the commit
        response = client_for(service).post(
            "/api/submissions/",
            {"task": str(task.pk), "student": student.username, "evidence": {"report": report, "ci": ci}},
            format="json",
        )
    assert response.status_code == 201, response.content
    return response.json()["id"]


def a3_passes(next_step: str) -> str:
    """The model's review: A3 passes, with ``next_step``."""
    verdict = {"rubric_id": "A3", "status": "PASS", "reason": "explains it", "evidence": "first"}
    return json.dumps({"verdicts": [verdict], "next_step": next_step})


def stored_text(lesson: Lesson) -> str:
    return " ".join([lesson.title, lesson.body, *lesson.symptoms, *lesson.tags])


@pytest.mark.django_db
def test_a_visible_ci_fix_draft_carries_no_ci_log_a_hidden_check_reads(settings):
    settings.TUTOR_LLM_BASE_URL = None  # the offline reviewer: machine checks only
    task, student, service = hidden_course(
        "hidden-log-101",
        [
            {"id": "A1", "kind": "acceptance", "text": "CI passes", "check": {"type": "ci_passed"}},
            {
                "id": "A2",
                "kind": "acceptance",
                "text": "Report names undefined",
                "check": {"type": "contains", "field": "report", "all": ["undefined"]},
            },
            {
                "id": "H1",
                "kind": "acceptance",
                "text": "Hidden tests pass",
                "check": {"type": "ci_passed"},
                "visibility": "hidden",
            },
        ],
    )
    failing_id = ci_submit(service, task, student, passed=False, report="first() returns nothing")
    ci_submit(service, task, student, passed=True, report="first() returns undefined")

    # The stored review does hold the hidden log: staff see it, a draft must not.
    staff_view = ReviewAttempt.objects.get(submission_id=failing_id).result["criteria"]
    assert HIDDEN_LOG in next(c for c in staff_view if c["rubric_id"] == "A1")["evidence"]
    lessons = {lesson.source_rubric_id: lesson for lesson in Lesson.objects.filter(source="review")}
    assert set(lessons) == {"A1", "A2"}  # never from the hidden criterion
    assert lessons["A1"].symptoms == ["CI failed with exit code 1"]
    assert "Evidence:" not in lessons["A1"].body
    for lesson in lessons.values():
        text = stored_text(lesson)
        assert "expected 42" not in text and "1 failing" not in text
        assert "hidden check" not in text and "CI log is not shown" not in text  # no stand-in copied


@pytest.mark.django_db
def test_a_next_step_quoting_a_hidden_check_never_reaches_a_draft(fake_llm):
    task, student, service = hidden_course(
        "hidden-step-101",
        [
            {"id": "A1", "kind": "acceptance", "text": "CI passes", "check": {"type": "ci_passed"}},
            {"id": "A3", "kind": "acceptance", "text": "Explains it", "check": {"type": "semantic"}},
            {
                "id": "H2",
                "kind": "acceptance",
                "text": "Covers the hidden branch",
                "check": {"type": "contains", "field": "report", "all": [HIDDEN_TERM]},
                "visibility": "hidden",
            },
        ],
    )

    fake_llm.reply(a3_passes(f"Cover the {HIDDEN_TERM} case, then rerun CI"), a3_passes("Keep going"))
    failing_id = ci_submit(service, task, student, passed=False, report="first() returns undefined")
    ci_submit(service, task, student, passed=True, report=f"first() returns undefined {HIDDEN_TERM}")

    assert HIDDEN_TERM in ReviewAttempt.objects.get(submission_id=failing_id).result["next_step"]
    [lesson] = Lesson.objects.filter(source="review")
    assert lesson.source_rubric_id == "A1"
    assert HIDDEN_TERM not in stored_text(lesson)
    assert "hidden check" not in lesson.body and "Cover the" not in lesson.body
    assert "What fixed it: the CI result changed from 'CI failed with exit code 1' to 'CI passed'" in (
        lesson.body
    )
    # The visible log of a rubric without a hidden CI check is still a symptom.
    assert lesson.symptoms == ["CI failed with exit code 1", "1 failing", HIDDEN_LOG]


@pytest.mark.django_db
def test_under_a_hidden_check_a_next_step_quoting_a_line_of_its_log_never_reaches_a_draft(fake_llm):
    task, student, service = hidden_course(
        "hidden-quote-101",
        [
            {"id": "A1", "kind": "acceptance", "text": "CI passes", "check": {"type": "ci_passed"}},
            {"id": "A3", "kind": "acceptance", "text": "Explains it", "check": {"type": "semantic"}},
            {
                "id": "H1",
                "kind": "acceptance",
                "text": "Hidden tests pass",
                "check": {"type": "ci_passed"},
                "visibility": "hidden",
            },
        ],
    )

    # Part of the hidden log, not all of it: no whole-evidence match catches it.
    fake_llm.reply(a3_passes("In hidden/answer.spec.js it expected 42: return 42"), a3_passes("Keep going"))
    ci_submit(service, task, student, passed=False, report="first() returns nothing")
    ci_submit(service, task, student, passed=True, report="first() returns 42")

    [lesson] = Lesson.objects.filter(source="review")
    assert lesson.source_rubric_id == "A1"
    assert "answer.spec.js" not in stored_text(lesson) and "expected 42" not in stored_text(lesson)
    assert "return 42" not in lesson.body  # the next step is never a draft's


# --- the draft states the real fix (SPEC §6 capture a; issue 36 item 3): the
# criterion that went FAIL → PASS, never another criterion's next step.

DEMO_COURSE = Path(__file__).resolve().parents[2] / "tutor" / "demo" / "course.yaml"


FAILING_CI = {"status": "failed", "exit_code": 1, "log_tail": "1 failing"}


def demo_submit(service, task, student, *, files: dict | None = None, ci: dict = FAILING_CI):
    """A CI submission (by default one whose CI still fails: A1 stays FAIL)."""
    evidence = {"report": "first() returns undefined", "files": files or {}, "ci": ci}
    with TestCase.captureOnCommitCallbacks(execute=True):  # the review runs after the commit
        response = client_for(service).post(
            "/api/submissions/",
            {"task": str(task.pk), "student": student.username, "evidence": evidence},
            format="json",
        )
    assert response.status_code == 201, response.content


@pytest.mark.django_db
def test_a_draft_after_an_a4_fix_names_a4s_change_not_another_criterions_next_step(settings):
    settings.TUTOR_LLM_BASE_URL = None  # the offline reviewer: machine checks only
    course = course_import(spec=validate_course(load_course_file(DEMO_COURSE))).course
    task = make_task(course, "t1-explain")
    student, service = enroll(course, "alice"), enroll(course, "ci", Enrollment.Role.SERVICE)

    demo_submit(service, task, student, files={"src/first.js": "export const first = (xs) => xs[0];"})
    failing = ReviewAttempt.objects.filter(submission__student=student).get()
    assert failing.result["next_step"] == "Fix A1: CI passes"  # the first failing item, not A4
    fixed = {"REPORT.md": "# first()\nReturns undefined.", "src/first.js": ""}
    demo_submit(service, task, student, files=fixed)

    [draft] = Lesson.objects.filter(source="review")
    assert draft.source_rubric_id == "A4"
    assert draft.title == "[t1-explain A4] REPORT.md is missing from the submitted files"
    assert "Fix A1" not in draft.body and "CI passes" not in draft.body
    assert draft.body.splitlines() == [
        "Symptom: REPORT.md is missing from the submitted files",
        "What fixed it: REPORT.md appeared in the submitted files.",
        "Verified: 'The report file is committed' (A4) passed on the next submission (REPORT.md is present).",
    ]


# --- issue 41 item 6: the review redacted the CI log before it was stored; the
# draft quoting it must still say that secrets were removed.

LEAKY_LOG = "1 failing\nauth failed for ops@example.com from 10.1.2.3\nAPI_KEY=Zx81kPq0Lm72vBn4Tr95sWd3"


@pytest.mark.django_db
def test_a_draft_counts_the_markers_the_review_already_put_in_and_staff_see_them(settings, superuser):
    from django.urls import reverse

    from tutor.kernel.redaction import markers_in

    settings.TUTOR_LLM_BASE_URL = None  # the offline reviewer: machine checks only
    course = make_course("leaky-101")
    task, student = make_task(course), enroll(course, "alice")
    service = enroll(course, "ci", Enrollment.Role.SERVICE)
    demo_submit(service, task, student, ci={"status": "failed", "exit_code": 1, "log_tail": LEAKY_LOG})
    demo_submit(service, task, student, ci={"status": "passed", "exit_code": 0, "log_tail": "3 passing"})

    failing = ReviewAttempt.objects.filter(submission__number=1, submission__student=student).get()
    quoted = next(c for c in failing.result["criteria"] if c["rubric_id"] == "A1")["evidence"]
    assert "ops@example.com" not in quoted and markers_in(quoted) == 3  # the review's own markers
    [draft] = Lesson.objects.filter(source="review")
    stored = " ".join([draft.title, draft.body, *draft.symptoms])
    assert "[REDACTED:email]" in draft.body
    assert draft.redactions == markers_in(stored) >= 3  # not 0: nothing was left to redact here
    assert draft.redaction_kinds["email"] >= 1 and draft.redaction_kinds["ip_address"] >= 1
    assert sum(draft.redaction_kinds.values()) == draft.redactions
    created = AuditEvent.objects.get(target_id=str(draft.pk), event="lesson_created")
    assert created.extra["redactions"] == draft.redactions

    admin = Client()
    admin.force_login(superuser)
    queue = admin.get(reverse("admin:lessons_lesson_changelist")).content.decode()
    page = admin.get(reverse("admin:lessons_lesson_change", args=[draft.pk])).content.decode()
    shown = f"{draft.redactions} ("
    assert shown in queue and shown in page and "email ×" in page
