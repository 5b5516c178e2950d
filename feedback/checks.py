"""Machine checks on the evidence (SPEC §2): ``ci_passed``, ``file_exists``,
``contains``. Each returns a criterion result; ``semantic`` criteria and
criteria without a check are decided elsewhere."""

from __future__ import annotations

from feedback.results import Basis, criterion_result
from tutor.kernel.redaction import redact_text
from tutor.kernel.rubrics import Verdict

LOG_TAIL_CHARS = 300  # how much of a CI log a reason may quote


def check_ci_passed(criterion: dict, evidence: dict, ci_source: str) -> dict:
    # Seed 000 §7.2: a CI verdict and a student's own claim must not be flattened.
    basis = Basis.CI if ci_source == "service" else Basis.SELF_REPORT
    ci = evidence.get("ci")
    if not ci:
        return criterion_result(criterion, Verdict.NEED_REVIEW, "no CI result in the evidence", "", basis)
    # The quote reaches the tutor's prompt through the feedback block: secrets
    # in a CI log are redacted, before the cut (SPEC §2).
    tail = redact_text(ci.get("log_tail") or "")[-LOG_TAIL_CHARS:]
    if ci.get("status") == "passed":
        return criterion_result(criterion, Verdict.PASS, "CI passed", tail, basis)
    code = ci.get("exit_code")
    reason = "CI failed" + (f" with exit code {code}" if code is not None else "")
    return criterion_result(criterion, Verdict.FAIL, reason, tail, basis)


def check_file_exists(criterion: dict, evidence: dict) -> dict:
    path = criterion["check"]["path"]
    if path in evidence["files"]:
        return criterion_result(criterion, Verdict.PASS, f"{path} is present", path, Basis.CHECK)
    return criterion_result(
        criterion, Verdict.FAIL, f"{path} is missing from the submitted files", "", Basis.CHECK
    )


def check_contains(criterion: dict, evidence: dict) -> dict:
    check = criterion["check"]
    if "file" in check:
        where = check["file"]
        text = evidence["files"].get(where)
        if text is None:
            return criterion_result(
                criterion, Verdict.FAIL, f"{where} is missing from the submitted files", "", Basis.CHECK
            )
    else:
        where, text = "the report", evidence["report"]
    haystack = text.casefold()
    missing = [t for t in check.get("all", []) if t.casefold() not in haystack]
    any_terms = check.get("any", [])
    found_any = [t for t in any_terms if t.casefold() in haystack]
    problems = []
    if missing:
        problems.append(f"{where} does not mention: {', '.join(missing)}")
    if any_terms and not found_any:
        problems.append(f"{where} mentions none of: {', '.join(any_terms)}")
    if problems:
        return criterion_result(criterion, Verdict.FAIL, "; ".join(problems), "", Basis.CHECK)
    found = list(check.get("all", [])) + found_any
    return criterion_result(
        criterion, Verdict.PASS, f"{where} mentions {', '.join(found)}", ", ".join(found), Basis.CHECK
    )


def run_machine_check(criterion: dict, evidence: dict, ci_source: str) -> dict | None:
    """The result of a machine check, or None for semantic/unchecked criteria."""
    check = criterion.get("check") or {}
    kind = check.get("type")
    if kind == "ci_passed":
        return check_ci_passed(criterion, evidence, ci_source)
    if kind == "file_exists":
        return check_file_exists(criterion, evidence)
    if kind == "contains":
        return check_contains(criterion, evidence)
    return None
