"""Hidden checks (SPEC §9): what of a hidden criterion students and the tutor
may see.

Rule: a criterion with ``visibility: hidden`` shows its status and text;
its reason, evidence, check configuration and check output never reach a
student or the tutor -- a fixed text per status stands in their place, the
item keeps its usual keys, and a ``next_step`` that quotes a hidden check's
reason, evidence or configured terms is replaced by the fixed text. Staff see
everything. Applied where results leave for students (the API) and for the
tutor (the feedback selection), never to the stored record.
"""

from __future__ import annotations

import copy

from tutor.kernel.rubrics import CheckType, Verdict, is_hidden

HIDDEN_TEXT = {
    Verdict.FAIL: "a hidden check did not pass; ask staff if you need a hint",
    Verdict.PASS: "a hidden check passed",
    Verdict.NEED_REVIEW: "a hidden check needs a look from staff",
}
HIDDEN_TEXT_OTHER = HIDDEN_TEXT[Verdict.NEED_REVIEW]
# Quoted text shorter than this cannot give a hidden check away, and would
# match everywhere ("a", "1").
MIN_QUOTE_CHARS = 3


def hidden_text(status: str) -> str:
    return HIDDEN_TEXT.get(status, HIDDEN_TEXT_OTHER)


def hidden_criteria(criteria: list[dict]) -> dict[str, dict]:
    """The hidden criteria of a rubric, by id."""
    return {c["id"]: c for c in criteria or [] if is_hidden(c)}


def _configured_terms(criterion: dict) -> list[str]:
    check = criterion.get("check") or {}
    terms = [*check.get("all", []), *check.get("any", [])]
    for key in ("path", "file"):
        if check.get(key):
            terms.append(check[key])
    return terms


# A machine check's reason is a template ("CI passed", "REPORT.md is
# missing …"): what it gives away is its configured terms and its output,
# which are matched; a model's or a person's reason is free text, matched whole.
TEMPLATE_REASON_BASES = ("ci", "self_report", "check")
# What a visible CI check shows of the CI log when a hidden check reads the same log.
CI_LOG_HIDDEN = "the CI log is not shown: a hidden check reads it"


def reads_ci_log(criterion: dict) -> bool:
    return (criterion.get("check") or {}).get("type") == CheckType.CI_PASSED


def _quotes(text: str, secrets: list[str]) -> bool:
    folded = text.casefold()
    return any(len(s.strip()) >= MIN_QUOTE_CHARS and s.strip().casefold() in folded for s in secrets)


def student_result(result, criteria: list[dict]):
    """A copy of ``result`` as a student or the tutor may see it; the result
    itself when the rubric has no hidden criterion or the result is not an
    object (contract checks judge those, unchanged)."""
    hidden = hidden_criteria(criteria)
    if not hidden or not isinstance(result, dict) or not isinstance(result.get("criteria"), list):
        return result
    shown = copy.deepcopy(result)
    # Every ci_passed check quotes the same CI log: when a hidden one reads
    # it, the log is hidden output for the visible ones too (SPEC §9).
    hidden_log = any(reads_ci_log(c) for c in hidden.values())
    first_quoted_status = None
    for entry in shown["criteria"]:
        if not isinstance(entry, dict):
            continue
        if entry.get("rubric_id") not in hidden:
            if hidden_log and entry.get("basis") in ("ci", "self_report") and entry.get("evidence"):
                entry["evidence"] = CI_LOG_HIDDEN
            continue
        own = [str(entry.get("evidence") or ""), *_configured_terms(hidden[entry["rubric_id"]])]
        if entry.get("basis") not in TEMPLATE_REASON_BASES:
            own.append(str(entry.get("reason") or ""))
        if (
            first_quoted_status is None
            and isinstance(shown.get("next_step"), str)
            and _quotes(shown["next_step"], own)
        ):
            first_quoted_status = entry.get("status")
        text = hidden_text(entry.get("status"))
        entry["reason"] = text
        entry["evidence"] = text
    if first_quoted_status is not None:
        shown["next_step"] = hidden_text(first_quoted_status)
    return shown
