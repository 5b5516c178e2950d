"""The shape of a review result and its aggregation in code (SPEC §2)."""

from __future__ import annotations

from django.db import models


class Verdict(models.TextChoices):
    PASS = "PASS"
    FAIL = "FAIL"
    NEED_REVIEW = "NEED_REVIEW"


class Basis(models.TextChoices):
    CI = "ci"  # reported by the course's CI service account
    SELF_REPORT = "self_report"  # the student's own CI claim: same verdict, weaker basis
    CHECK = "check"  # a machine check on the evidence
    MODEL = "model"
    STAFF = "staff"
    NONE = "none"  # nothing could judge it: NEED_REVIEW


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
    acceptance = [c["status"] for c in criteria if c["kind"] == "acceptance"]
    if Verdict.FAIL in acceptance:
        return Verdict.FAIL
    if Verdict.NEED_REVIEW in acceptance:
        return Verdict.NEED_REVIEW
    return Verdict.PASS


def default_next_step(criteria: list[dict]) -> str:
    """Without a model's advice: point at the first blocking acceptance item."""
    for wanted in (Verdict.FAIL, Verdict.NEED_REVIEW):
        for c in criteria:
            if c["kind"] == "acceptance" and c["status"] == wanted:
                verb = "Fix" if wanted == Verdict.FAIL else "Ask staff to check"
                return f"{verb} {c['rubric_id']}: {c['criterion']}"
    return "All acceptance criteria pass."
