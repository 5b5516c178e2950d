"""The review pipeline for one attempt (SPEC §2).

precheck evidence → machine checks → semantic criteria through the model →
aggregation in code. Whatever happens, the attempt ends in exactly one
terminal state, and a provider outage or a malformed model answer never
becomes a student FAIL.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.db import DatabaseError, transaction

from feedback.checks import run_machine_check
from feedback.models import AttemptStatus, ErrorCode, ReviewAttempt
from feedback.results import Basis, aggregate_overall, criterion_result, default_next_step
from feedback.reviewer import review_semantic
from feedback.services.worker import attempt_claim, attempt_complete, attempt_failed
from tutor import llm
from tutor.kernel.correlation import reset_correlation_id, set_correlation_id
from tutor.kernel.rubrics import Verdict

log = logging.getLogger(__name__)

NOT_CONFIGURED_REASON = "semantic review not configured"
NO_CHECK_REASON = "no automatic check for this criterion: staff review needed"


class ReviewInvalid(Exception):
    """The review could not produce a valid record (attempt ``invalid``)."""

    def __init__(self, error_code: str, detail: str, generations: int = 0):
        super().__init__(detail)
        self.error_code = error_code
        self.generations = generations


def precheck(evidence: object) -> None:
    """The stored evidence has the normalised shape of SPEC §2."""
    ok = (
        isinstance(evidence, dict)
        and isinstance(evidence.get("report"), str)
        and isinstance(evidence.get("files"), dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in evidence["files"].items())
        and (evidence.get("ci") is None or isinstance(evidence.get("ci"), dict))
    )
    if not ok:
        raise ReviewInvalid(ErrorCode.EVIDENCE_INVALID, "stored evidence does not have the expected shape")


# The verdicts a review has before it asks the model: what an attempt that
# ends unavailable keeps (feedback.agreement.MACHINE_BASES adds the model).
PRE_MODEL_BASES = (Basis.CI, Basis.SELF_REPORT, Basis.CHECK)


@dataclass
class ReviewProgress:
    """What a review has decided so far: the machine checks' verdicts, kept
    when the model part then fails (SPEC §2: an ``unavailable`` attempt
    keeps them in its record)."""

    machine: list[dict] = field(default_factory=list)
    checks_done: bool = False

    def partial_result(self) -> dict | None:
        """``{"overall": null, "criteria": [ci/self_report/check criteria],
        "next_step": ""}`` once the checks ran; None before."""
        if not self.checks_done:
            return None
        return {"overall": None, "criteria": list(self.machine), "next_step": ""}


def build_result(attempt: ReviewAttempt, progress: ReviewProgress | None = None) -> tuple[dict, int]:
    """The result of reviewing ``attempt``, and how many model generations it
    took. ``progress`` receives the machine checks' verdicts as soon as they
    are known, before the model is asked."""
    progress = progress if progress is not None else ReviewProgress()
    submission = attempt.submission
    evidence = submission.evidence
    precheck(evidence)
    criteria = attempt.rubric.criteria
    results: dict[str, dict] = {}
    semantic = []
    for criterion in criteria:
        checked = run_machine_check(criterion, evidence, submission.ci_source)
        if checked is not None:
            results[criterion["id"]] = checked
        elif (criterion.get("check") or {}).get("type") == "semantic":
            semantic.append(criterion)
        else:
            results[criterion["id"]] = criterion_result(
                criterion, Verdict.NEED_REVIEW, NO_CHECK_REASON, "", Basis.NONE
            )
    progress.machine = [
        results[c["id"]] for c in criteria if results.get(c["id"], {}).get("basis") in PRE_MODEL_BASES
    ]
    progress.checks_done = True
    next_step = None
    generations = 0
    if semantic and not llm.is_configured():
        for criterion in semantic:
            results[criterion["id"]] = criterion_result(
                criterion, Verdict.NEED_REVIEW, NOT_CONFIGURED_REASON, "", Basis.NONE
            )
    elif semantic:
        review = review_semantic(
            submission.task,
            semantic,
            evidence,
            correlation_id=attempt.correlation_id or str(attempt.pk),
            student_id=submission.student_id,
        )
        generations = review.loop.generations
        if review.loop.outcome != "passed":
            raise ReviewInvalid(
                ErrorCode.MODEL_OUTPUT_INVALID,
                f"model output {review.loop.outcome}: " + " | ".join(review.loop.errors)[-1500:],
                generations,
            )
        for criterion in semantic:
            verdict = review.verdicts[criterion["id"]]
            results[criterion["id"]] = criterion_result(
                criterion, verdict["status"], verdict["reason"], verdict["evidence"], Basis.MODEL
            )
        next_step = review.next_step
    ordered = [results[c["id"]] for c in criteria]
    overall = aggregate_overall(ordered)
    if not next_step:  # no model, or it left the step empty: point at the first blocking item
        next_step = default_next_step(ordered)
    return {"overall": overall, "criteria": ordered, "next_step": next_step}, generations


def failure_of(exc: BaseException, attempt_pk) -> tuple[str, str, str, int]:
    """(status, error_code, detail, generations) for a review that raised.

    Rule (SPEC §2): provider trouble and time limits are ``unavailable``,
    model output the repair loop could not fix is ``invalid``; neither is
    ever a student FAIL.
    """
    if isinstance(exc, ReviewInvalid):
        return AttemptStatus.INVALID, exc.error_code, str(exc), exc.generations
    if isinstance(exc, llm.ModelConfigError):
        return AttemptStatus.UNAVAILABLE, ErrorCode.REVIEW_CONFIG_ERROR, str(exc), 0
    if isinstance(exc, llm.ModelUnavailable):
        return AttemptStatus.UNAVAILABLE, ErrorCode.REVIEW_UNAVAILABLE, str(exc), 0
    if isinstance(exc, SoftTimeLimitExceeded):
        detail = f"review exceeded {settings.REVIEW_SOFT_TIME_LIMIT}s"
        return AttemptStatus.UNAVAILABLE, ErrorCode.TIME_LIMIT, detail, 0
    log.error("review of attempt %s failed", attempt_pk, exc_info=exc)
    return AttemptStatus.UNAVAILABLE, ErrorCode.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}", 0


def run_review(attempt_id) -> str | None:
    """Claim and review one attempt; returns its terminal status, or None when
    there was nothing to claim (a duplicate delivery, or another worker has it)
    or the claim was lost before the result could be written.

    Every exception -- while reviewing or while storing the result (a value
    the database refuses) -- ends the attempt through ``attempt_failed``: a
    task never crashes holding its claim. An ``unavailable`` ending keeps the
    machine checks' verdicts (``ReviewProgress.partial_result``)."""
    claimed = attempt_claim(attempt_id=attempt_id)
    if claimed is None:
        return None
    attempt, claim = claimed
    token = set_correlation_id(attempt.correlation_id or None)
    progress = ReviewProgress()
    try:
        try:
            result, generations = build_result(attempt, progress)
            # A savepoint: a refused value must not spoil the connection
            # (PostgreSQL) for the failure write below.
            with transaction.atomic():
                written = attempt_complete(
                    attempt_id=attempt.pk, claim=claim, result=result, generation_attempts=generations
                )
            status = AttemptStatus.COMPLETED
        except Exception as exc:
            status, code, detail, generations = failure_of(exc, attempt.pk)
            partial = progress.partial_result() if status == AttemptStatus.UNAVAILABLE else None
            failed = {
                "attempt_id": attempt.pk,
                "claim": claim,
                "status": status,
                "error_code": code,
                "detail": detail,
                "generation_attempts": generations,
            }
            try:
                with transaction.atomic():
                    written = attempt_failed(**failed, result=partial)
            except DatabaseError:
                if partial is None:
                    raise  # the database itself is failing: the sweep recovers the claim
                log.exception("attempt %s: its partial result could not be stored", attempt.pk)
                written = attempt_failed(**failed)
        log.info("review of attempt %s ended %s", attempt.pk, status if written else "without its claim")
        return status if written else None
    finally:
        reset_correlation_id(token)
