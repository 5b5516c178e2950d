"""The shape of a review result and its aggregation in code (SPEC §2)."""

from __future__ import annotations

import json
from typing import Any

from django.db import models

from tutor.kernel.rubrics import CriterionKind, Verdict


class Basis(models.TextChoices):
    CI = "ci"  # reported by the course's CI service account
    SELF_REPORT = "self_report"  # the student's own CI claim: same verdict, weaker basis
    CHECK = "check"  # a machine check on the evidence
    MODEL = "model"
    STAFF = "staff"
    NONE = "none"  # nothing could judge it: NEED_REVIEW


# The bases that are an external signal (SPEC §6): the course's CI or a machine
# check -- not the student's own report, not the model. Only these capture a
# lesson draft or move the playbook's counters.
EXTERNAL_SIGNAL_BASES = (Basis.CI, Basis.CHECK)


def criterion_result(criterion: dict, status: str, reason: str, evidence: str, basis: str) -> dict:
    return {
        "rubric_id": criterion["id"],
        "criterion": criterion["text"],
        "kind": criterion["kind"],
        "status": status,
        "reason": reason,
        "evidence": evidence,
        "basis": basis,
    }


def aggregate_overall(criteria: list[dict]) -> str:
    """FAIL if any acceptance criterion FAILs, else NEED_REVIEW if any is
    NEED_REVIEW, else PASS. Learning criteria never block (SPEC §2)."""
    acceptance = [c["status"] for c in criteria if c["kind"] == CriterionKind.ACCEPTANCE]
    if Verdict.FAIL in acceptance:
        return Verdict.FAIL
    if Verdict.NEED_REVIEW in acceptance:
        return Verdict.NEED_REVIEW
    return Verdict.PASS


def default_next_step(criteria: list[dict]) -> str:
    """Without a model's advice: point at the first blocking acceptance item."""
    for wanted in (Verdict.FAIL, Verdict.NEED_REVIEW):
        for c in criteria:
            if c["kind"] == CriterionKind.ACCEPTANCE and c["status"] == wanted:
                verb = "Fix" if wanted == Verdict.FAIL else "Ask staff to check"
                return f"{verb} {c['rubric_id']}: {c['criterion']}"
    return "All acceptance criteria pass."


CRITERION_STRING_KEYS = ("rubric_id", "criterion", "kind", "status", "reason", "evidence", "basis")
# Read once: a TextChoices' ``values`` builds its list again on every read, and
# the contract is checked on every tutor request (the student's latest result).
_KINDS = frozenset(CriterionKind.values)
_VERDICTS = frozenset(Verdict.values)
_BASES = frozenset(Basis.values)


def result_contract_error(result: Any, *, rubric_id_chars: int) -> str | None:
    """What makes a completed attempt's ``result`` unusable, or None.

    The contract is the result shape of SPEC §2. Identifiers are never cut
    (SPEC §3): a ``rubric_id`` over the limit rejects the whole record, and so
    does an ``overall`` that contradicts its own criteria -- a PASS over a
    failing acceptance criterion would hide the to-do list.
    """
    if not isinstance(result, dict):
        return "result is not an object"
    criteria = result.get("criteria")
    if not isinstance(criteria, list):
        return "criteria is missing or not a list"
    seen: set[str] = set()
    for i, criterion in enumerate(criteria):
        if not isinstance(criterion, dict):
            return f"criteria[{i}] is not an object"
        for key in CRITERION_STRING_KEYS:
            if not isinstance(criterion.get(key), str):
                return f"criteria[{i}].{key} is missing or not a string"
        rubric_id = criterion["rubric_id"]
        if not rubric_id or len(rubric_id) > rubric_id_chars:
            return f"criteria[{i}].rubric_id must have 1-{rubric_id_chars} characters"
        if rubric_id in seen:
            return f"criteria[{i}].rubric_id {rubric_id!r} appears twice"
        seen.add(rubric_id)
        if criterion["kind"] not in _KINDS:
            return f"criteria[{i}].kind {criterion['kind']!r} is unknown"
        if criterion["status"] not in _VERDICTS:
            return f"criteria[{i}].status {criterion['status']!r} is unknown"
        if criterion["basis"] not in _BASES:
            return f"criteria[{i}].basis {criterion['basis']!r} is unknown"
    if not isinstance(result.get("next_step"), str):
        return "next_step is missing or not a string"
    overall = result.get("overall")
    if not isinstance(overall, str) or overall not in _VERDICTS:
        return f"overall {overall!r} is unknown"
    if overall != aggregate_overall(criteria):
        return f"overall {overall} contradicts its criteria ({aggregate_overall(criteria)})"
    return None


# Why a NEED_REVIEW waits for a person (SPEC §8): nothing could judge it (no
# automatic check, semantic review not configured: basis ``none``) or the
# model could not decide. A NEED_REVIEW from the CI or a machine check asks
# the student for evidence instead (run CI, send the file): not staff's.
STAFF_SETTLED_BASES = (Basis.NONE, Basis.MODEL)


def criteria_awaiting_staff(result: Any) -> list[str]:
    """The rubric ids of ``result`` that wait for staff: acceptance or
    learning criteria NEED_REVIEW on a basis of ``STAFF_SETTLED_BASES``,
    whatever the other criteria say. The one rule behind the student's
    "waiting for a teacher's review" and the admin queue (through
    ``ReviewAttempt.awaiting_staff``, written from it)."""
    if not isinstance(result, dict) or not isinstance(result.get("criteria"), list):
        return []
    return sorted(
        c["rubric_id"]
        for c in result["criteria"]
        if isinstance(c, dict)
        and isinstance(c.get("rubric_id"), str)
        and c.get("status") == Verdict.NEED_REVIEW
        and c.get("basis") in STAFF_SETTLED_BASES
    )


def awaiting_staff_marks(result: Any) -> str | None:
    """``criteria_awaiting_staff`` as ``ReviewAttempt.awaiting_staff`` stores
    it ('"A3" "L1"'), or None when no criterion waits."""
    return " ".join(json.dumps(i) for i in criteria_awaiting_staff(result)) or None


def model_failed_marks(result: Any) -> str | None:
    """The rubric ids the model judged FAIL in ``result``, JSON-encoded one by
    one ('"A3" "A5"'), or None: ``ReviewAttempt.model_failed``. A JSON string
    is quoted, so a LIKE on '"A3"' never matches "A30"."""
    if not isinstance(result, dict) or not isinstance(result.get("criteria"), list):
        return None
    ids = [
        c["rubric_id"]
        for c in result["criteria"]
        if isinstance(c, dict) and c.get("basis") == Basis.MODEL and c.get("status") == Verdict.FAIL
    ]
    return " ".join(json.dumps(i) for i in sorted(ids)) or None
