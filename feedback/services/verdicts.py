"""Staff verdicts (SPEC §2): staff settle NEED_REVIEW or overrule any
criterion through a new, completed attempt; earlier attempts are untouched."""

from __future__ import annotations

import re

from django.db import transaction
from django.utils import timezone

from feedback.agreement import MACHINE_BASES
from feedback.models import AttemptKind, AttemptStatus, CriterionAgreement, ReviewAttempt, Submission
from feedback.results import Basis, aggregate_overall, awaiting_staff_marks
from feedback.services.dispatch import announce_on_commit
from feedback.services.regrades import regrades_settle
from feedback.services.sequences import next_seq
from feedback.versions import current_versions
from tutor.audit import audit_record
from tutor.kernel.correlation import get_correlation_id
from tutor.kernel.errors import InvalidInput
from tutor.kernel.rubrics import Verdict
from tutor.models import AuditEvent

NOT_REVIEWED_REASON = "not reviewed yet"


class VerdictError(InvalidInput):
    """A verdict names a criterion the rubric does not have; ``index`` is its
    position in the given ``criteria``."""

    def __init__(self, index: int, message: str):
        super().__init__(message, field=f"criteria.{index}.rubric_id")
        self.index = index


def verdict_next_step(*, earlier: str, given: str | None, criteria: list[dict]) -> str:
    """The ``next_step`` of a staff verdict (SPEC §2).

    Rule: the staff member's own text when given; otherwise empty when the
    verdict's overall is PASS; otherwise the earlier step is kept only while
    a rubric id it names as a whole word is still not PASS, and is empty
    else -- the tutor is never told a next step that contradicts the verdict.
    """
    if given:
        return given
    if aggregate_overall(criteria) == Verdict.PASS or not earlier:
        return ""
    open_ids = {c["rubric_id"] for c in criteria if c["status"] != Verdict.PASS}
    named = {
        c["rubric_id"] for c in criteria if re.search(rf"(?<!\w){re.escape(c['rubric_id'])}(?!\w)", earlier)
    }
    return earlier if named & open_ids else ""


def staff_verdict_create(
    *, submission: Submission, staff, criteria: list[dict], next_step: str | None = None
) -> ReviewAttempt:
    """Settle or overrule criteria through a new, completed attempt (SPEC §2).

    Starts from the newest completed compatible attempt (or, without one, from
    every criterion NEED_REVIEW); the given criteria get basis ``staff`` and
    the staff reason. Writes a ``staff_verdict`` audit event in the same
    transaction.
    """
    versions = current_versions(submission.task)
    rubric_criteria = {c["id"]: c for c in versions.rubric.criteria}
    for i, item in enumerate(criteria):
        if item["rubric_id"] not in rubric_criteria:
            raise VerdictError(
                i, f"{item['rubric_id']!r} is not a criterion of rubric {versions.rubric_version}"
            )
    with transaction.atomic():
        base = (
            submission.attempts.filter(status=AttemptStatus.COMPLETED, **versions.compatible_filter())
            .order_by("-attempt_seq")
            .first()
        )
        if base is not None:
            by_id = {c["rubric_id"]: dict(c) for c in base.result["criteria"]}
            earlier_step = base.result.get("next_step", "")
        else:
            by_id = {
                cid: {
                    "rubric_id": cid,
                    "criterion": c["text"],
                    "kind": c["kind"],
                    "status": Verdict.NEED_REVIEW.value,
                    "reason": NOT_REVIEWED_REASON,
                    "evidence": "",
                    "basis": Basis.NONE.value,
                }
                for cid, c in rubric_criteria.items()
            }
            earlier_step = ""
        changes = []
        for item in criteria:
            entry = by_id[item["rubric_id"]]
            changes.append(
                {
                    "rubric_id": item["rubric_id"],
                    "from": entry["status"],
                    "from_basis": entry["basis"],
                    "to": item["status"],
                }
            )
            entry.update(status=item["status"], reason=item["reason"], basis=Basis.STAFF.value, evidence="")
        ordered = [by_id[cid] for cid in rubric_criteria if cid in by_id]
        overall = aggregate_overall(ordered)
        result = {
            "overall": overall,
            "criteria": ordered,
            "next_step": verdict_next_step(earlier=earlier_step, given=next_step, criteria=ordered),
        }
        attempt = ReviewAttempt.objects.create(
            submission=submission,
            attempt_seq=next_seq("attempt"),
            kind=AttemptKind.STAFF_VERDICT,
            requested_by=staff,
            correlation_id=get_correlation_id(),
            status=AttemptStatus.COMPLETED,
            result=result,
            awaiting_staff=awaiting_staff_marks(result),
            finished_at=timezone.now(),
            **{**versions.stamp(), "model": f"staff:{staff.get_username()}"[:200]},
        )
        audit_record(
            actor=staff,
            event=AuditEvent.Event.STAFF_VERDICT,
            target=attempt,
            course=submission.task.course_id,
            from_state=base.result["overall"] if base is not None else "",
            to_state=overall,
            reason="; ".join(f"{i['rubric_id']}: {i['reason']}" for i in criteria)[:2000],
            extra={
                "submission": str(submission.pk),
                "base_attempt": str(base.pk) if base is not None else None,
                "criteria": changes,
            },
        )
        if base is not None:
            _record_agreement(base=base, verdict=attempt, criteria=criteria)
        regrades_settle(
            submission=submission, verdict=attempt, staff=staff, rubric_ids=[i["rubric_id"] for i in criteria]
        )
        announce_on_commit(attempt.pk, attempt.status)
    return attempt


def _record_agreement(*, base: ReviewAttempt, verdict: ReviewAttempt, criteria: list[dict]) -> None:
    """One pair (machine status, staff status) per criterion of the verdict
    that a machine had judged in the review the verdict started from."""
    judged = {c["rubric_id"]: c for c in base.result["criteria"] if c.get("basis") in MACHINE_BASES}
    CriterionAgreement.objects.bulk_create(
        [
            CriterionAgreement(
                task_id=verdict.submission.task_id,
                rubric_id=verdict.rubric_id,
                criterion=item["rubric_id"],
                machine_basis=judged[item["rubric_id"]]["basis"],
                machine_status=judged[item["rubric_id"]]["status"],
                staff_status=item["status"],
                submission_id=verdict.submission_id,
                machine_attempt=base,
                staff_attempt=verdict,
            )
            for item in criteria
            if item["rubric_id"] in judged
        ]
    )
