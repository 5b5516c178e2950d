"""Machine checks, criteria without a check, and the overall verdict (SPEC §2)."""

from __future__ import annotations

import json

import pytest
from django.test import TestCase

from feedback.checks import run_machine_check
from feedback.evidence import normalize_evidence
from feedback.models import AttemptStatus
from feedback.results import aggregate_overall
from feedback.services.intake import submission_create
from tests.factories import enroll, make_course, make_task

CI_CRITERION = {"id": "A1", "kind": "acceptance", "text": "CI passes", "check": {"type": "ci_passed"}}


def contains(**check) -> dict:
    return {"id": "C1", "kind": "acceptance", "text": "mentions", "check": {"type": "contains", **check}}


def ev(**raw) -> dict:
    return normalize_evidence(raw)


# --- ci_passed -----------------------------------------------------------------


def test_ci_passed_reported_by_service_has_basis_ci():
    result = run_machine_check(
        CI_CRITERION, ev(ci={"status": "passed", "exit_code": 0, "log_tail": "ok"}), "service"
    )
    assert (result["status"], result["basis"]) == ("PASS", "ci")


def test_ci_passed_reported_by_student_has_basis_self_report():
    result = run_machine_check(
        CI_CRITERION, ev(ci={"status": "passed", "exit_code": 0, "log_tail": ""}), "student"
    )
    assert (result["status"], result["basis"]) == ("PASS", "self_report")


def test_ci_failed_is_fail_with_exit_code_and_log_tail():
    log_tail = "x" * 1000 + "AssertionError: expected undefined"
    result = run_machine_check(
        CI_CRITERION, ev(ci={"status": "failed", "exit_code": 2, "log_tail": log_tail}), "service"
    )
    assert result["status"] == "FAIL"
    assert result["basis"] == "ci"
    assert "exit code 2" in result["reason"]
    assert result["evidence"].endswith("AssertionError: expected undefined")
    assert len(result["evidence"]) <= 300


@pytest.mark.parametrize("ci_source,basis", [("service", "ci"), ("student", "self_report")])
def test_missing_ci_needs_review(ci_source, basis):
    result = run_machine_check(CI_CRITERION, ev(report="no ci here"), ci_source)
    assert result["status"] == "NEED_REVIEW"
    assert result["basis"] == basis
    assert result["reason"] == "no CI result in the evidence"


# --- file_exists ---------------------------------------------------------------


def test_file_exists_passes_and_fails_on_the_exact_path():
    check = {"type": "file_exists", "path": "test/first.test.js"}
    criterion = {"id": "F1", "kind": "acceptance", "text": "has tests", "check": check}
    present = run_machine_check(criterion, ev(files={"test/first.test.js": ""}), "student")
    absent = run_machine_check(criterion, ev(files={"test/First.test.js": "x"}), "student")
    assert (present["status"], present["basis"]) == ("PASS", "check")
    assert (absent["status"], absent["basis"]) == ("FAIL", "check")
    assert "test/first.test.js is missing" in absent["reason"]


# --- contains ------------------------------------------------------------------


def test_contains_all_in_report_is_case_insensitive():
    result = run_machine_check(
        contains(field="report", all=["first", "Undefined"]), ev(report="FIRST gives UNDEFINED"), "student"
    )
    assert (result["status"], result["basis"]) == ("PASS", "check")


def test_contains_all_lists_every_missing_term():
    result = run_machine_check(
        contains(field="report", all=["first", "undefined", "empty"]), ev(report="first only"), "student"
    )
    assert result["status"] == "FAIL"
    assert "undefined, empty" in result["reason"]


def test_contains_any_needs_one_term():
    check = contains(field="report", any=["null", "undefined"])
    hit = run_machine_check(check, ev(report="It is Undefined."), "student")
    miss = run_machine_check(check, ev(report="It is zero."), "student")
    assert hit["status"] == "PASS"
    assert miss["status"] == "FAIL"
    assert "none of: null, undefined" in miss["reason"]


def test_contains_all_and_any_both_must_hold():
    check = contains(field="report", all=["first"], any=["null", "undefined"])
    assert run_machine_check(check, ev(report="first: undefined"), "student")["status"] == "PASS"
    assert run_machine_check(check, ev(report="first: zero"), "student")["status"] == "FAIL"
    assert run_machine_check(check, ev(report="last: undefined"), "student")["status"] == "FAIL"


def test_contains_in_file_reads_that_file_only():
    check = contains(file="src/first.js", all=["return"])
    in_file = run_machine_check(check, ev(report="", files={"src/first.js": "RETURN xs[0]"}), "student")
    in_report = run_machine_check(check, ev(report="return", files={"src/first.js": "xs[0]"}), "student")
    assert in_file["status"] == "PASS"
    assert in_report["status"] == "FAIL"


def test_contains_in_missing_file_fails():
    result = run_machine_check(contains(file="src/first.js", all=["x"]), ev(report="x"), "student")
    assert result["status"] == "FAIL"
    assert result["basis"] == "check"
    assert "src/first.js is missing" in result["reason"]


@pytest.mark.parametrize(
    "criterion",
    [
        {"id": "S1", "kind": "acceptance", "text": "semantic", "check": {"type": "semantic"}},
        {"id": "N1", "kind": "acceptance", "text": "no check"},
    ],
)
def test_semantic_and_unchecked_criteria_are_not_machine_checked(criterion):
    assert run_machine_check(criterion, ev(report="anything"), "student") is None


# --- aggregation ---------------------------------------------------------------


def item(kind: str, status: str) -> dict:
    return {"kind": kind, "status": status}


@pytest.mark.parametrize(
    "statuses,overall",
    [
        ([item("acceptance", "PASS"), item("acceptance", "PASS")], "PASS"),
        ([item("acceptance", "PASS"), item("acceptance", "NEED_REVIEW")], "NEED_REVIEW"),
        ([item("acceptance", "NEED_REVIEW"), item("acceptance", "FAIL")], "FAIL"),
        ([item("acceptance", "PASS"), item("learning", "FAIL")], "PASS"),
        ([item("acceptance", "PASS"), item("learning", "NEED_REVIEW")], "PASS"),
        ([item("learning", "FAIL")], "PASS"),
    ],
)
def test_overall_fail_beats_need_review_beats_pass_and_learning_never_blocks(statuses, overall):
    assert aggregate_overall(statuses) == overall


# --- in the pipeline -------------------------------------------------------------


MIXED_CRITERIA = [
    CI_CRITERION,
    {
        "id": "A2",
        "kind": "acceptance",
        "text": "Has a test file",
        "check": {"type": "file_exists", "path": "t.js"},
    },  # fmt: skip
    {"id": "A3", "kind": "acceptance", "text": "Judged by the model", "check": {"type": "semantic"}},
    {"id": "A4", "kind": "acceptance", "text": "Demo recorded for the class"},
    {
        "id": "L1",
        "kind": "learning",
        "text": "Mentions edge cases",
        "check": {"type": "contains", "field": "report", "all": ["edge"]},
    },  # fmt: skip
]


def reviewed(task, student, evidence, ci_source="service"):
    with TestCase.captureOnCommitCallbacks(execute=True):
        submission = submission_create(
            student=student, task=task, evidence=evidence, submitted_by=student, ci_source=ci_source
        )
    return submission.attempts.get()


@pytest.fixture
def mixed_task(db):
    return make_task(make_course("mixed", criteria=MIXED_CRITERIA))


def test_criterion_without_check_needs_review_and_is_never_sent_to_the_model(fake_llm, mixed_task):
    student = enroll(mixed_task.course, "carol")
    fake_llm.reply(
        json.dumps(
            {
                "verdicts": [{"rubric_id": "A3", "status": "PASS", "reason": "ok", "evidence": "q"}],
                "next_step": "",
            }
        )
    )
    attempt = reviewed(
        mixed_task,
        student,
        {"report": "done", "files": {"t.js": ""}, "ci": {"status": "passed", "exit_code": 0}},
    )

    assert attempt.status == AttemptStatus.COMPLETED
    by_id = {c["rubric_id"]: c for c in attempt.result["criteria"]}
    assert [c["rubric_id"] for c in attempt.result["criteria"]] == ["A1", "A2", "A3", "A4", "L1"]
    assert (by_id["A1"]["status"], by_id["A1"]["basis"]) == ("PASS", "ci")
    assert (by_id["A2"]["status"], by_id["A2"]["basis"]) == ("PASS", "check")
    assert (by_id["A3"]["status"], by_id["A3"]["basis"]) == ("PASS", "model")
    assert (by_id["A4"]["status"], by_id["A4"]["basis"]) == ("NEED_REVIEW", "none")
    assert (by_id["L1"]["status"], by_id["L1"]["basis"]) == ("FAIL", "check")
    assert attempt.result["overall"] == "NEED_REVIEW"  # A4 waits for staff; L1 never blocks
    assert by_id["A4"]["kind"] == "acceptance"
    sent = fake_llm.all_text()
    assert "Judged by the model" in sent
    for other in ("Demo recorded for the class", "Has a test file", "Mentions edge cases", "CI passes"):
        assert other not in sent


def test_failing_learning_criterion_does_not_block_a_pass(db):
    criteria = [
        CI_CRITERION,
        {
            "id": "L1",
            "kind": "learning",
            "text": "Mentions edge cases",
            "check": {"type": "contains", "field": "report", "all": ["edge"]},
        },  # fmt: skip
    ]
    task = make_task(make_course("learning", criteria=criteria))
    student = enroll(task.course, "dave")

    attempt = reviewed(task, student, {"report": "no", "ci": {"status": "passed", "exit_code": 0}})

    by_id = {c["rubric_id"]: c for c in attempt.result["criteria"]}
    assert by_id["L1"]["status"] == "FAIL"
    assert by_id["L1"]["kind"] == "learning"
    assert attempt.result["overall"] == "PASS"


def test_failed_acceptance_check_fails_overall_without_model(settings, task, student):
    settings.TUTOR_LLM_BASE_URL = None
    attempt = reviewed(
        task, student, {"report": "first", "ci": {"status": "failed", "exit_code": 1}}, ci_source="student"
    )
    by_id = {c["rubric_id"]: c for c in attempt.result["criteria"]}
    assert (by_id["A1"]["status"], by_id["A1"]["basis"]) == ("FAIL", "self_report")
    assert by_id["A2"]["status"] == "FAIL"
    assert attempt.result["overall"] == "FAIL"
    assert attempt.result["next_step"].startswith("Fix A1")
