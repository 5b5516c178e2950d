"""Regrade requests (SPEC §7): a student asks staff to look at one criterion;
a staff verdict naming it settles the request, or staff decline it with a
reason. Every step is audited."""

from __future__ import annotations

from django.db import transaction
from django.utils import timezone

from feedback.models import AttemptStatus, RegradeRequest, RegradeStatus, ReviewAttempt, Submission
from feedback.results import Basis
from feedback.visibility import hidden_criteria, hidden_text
from tutor.audit import audit_record
from tutor.kernel.errors import Conflict, InvalidInput
from tutor.kernel.readable import nothing_to_read
from tutor.kernel.redaction import redact
from tutor.kernel.rubrics import CriterionKind, Verdict
from tutor.models import AuditEvent

REGRADE_REASON_MAX_CHARS = 1000
REGRADE_RESPONSE_MAX_CHARS = 2000


def _newest_completed(submission: Submission) -> ReviewAttempt | None:
    return submission.attempts.filter(status=AttemptStatus.COMPLETED).order_by("-attempt_seq").first()


def regrade_request_create(*, submission: Submission, student, rubric_id: str, reason: str) -> RegradeRequest:
    """Open a request on one criterion of the newest completed attempt of the
    student's latest submission.

    Rule (SPEC §7): only the latest submission; only a non-PASS acceptance
    criterion of its newest completed attempt; not one whose basis is ``ci``
    (the course's CI service decided it -- rerun CI instead); one open request
    per (submission, criterion). The reason is redacted before it is stored.
    """
    reason = reason.strip()
    # Text that shows nothing (a zero-width space) is no reason: the rule of messages and corrections.
    if nothing_to_read(reason) or len(reason) > REGRADE_REASON_MAX_CHARS:
        raise InvalidInput(f"give a reason of 1-{REGRADE_REASON_MAX_CHARS} characters", field="reason")
    with transaction.atomic():
        # One request at a time per submission (a row lock on PostgreSQL;
        # SQLite's IMMEDIATE transactions already serialise): two at once must
        # not both pass the "already open" check below.
        Submission.objects.select_for_update().filter(pk=submission.pk).values_list("pk", flat=True).first()
        latest = (
            Submission.objects.filter(student_id=submission.student_id, task_id=submission.task_id)
            .order_by("-submission_seq")
            .values_list("pk", flat=True)
            .first()
        )
        if latest != submission.pk:
            raise Conflict("regrade requests are for your latest submission of this task only")
        attempt = _newest_completed(submission)
        if attempt is None:
            raise Conflict("this submission has no completed review yet")
        entry = next((c for c in attempt.result["criteria"] if c["rubric_id"] == rubric_id), None)
        if entry is None:
            raise InvalidInput(f"{rubric_id!r} is not a criterion of this review", field="rubric_id")
        if entry["kind"] != CriterionKind.ACCEPTANCE:
            raise InvalidInput("only acceptance criteria can be regraded", field="rubric_id")
        if entry["status"] == Verdict.PASS:
            raise InvalidInput(f"{rubric_id} passed; there is nothing to regrade", field="rubric_id")
        if entry["basis"] == Basis.CI:
            raise InvalidInput(
                f"{rubric_id} was decided by the course's CI service: run CI again instead", field="rubric_id"
            )
        if RegradeRequest.objects.filter(
            submission=submission, rubric_id=rubric_id, status=RegradeStatus.OPEN
        ).exists():
            raise Conflict(f"a regrade request for {rubric_id} is already open")
        redacted = redact(reason)
        request = RegradeRequest.objects.create(
            submission=submission,
            attempt=attempt,
            student=student,
            rubric_id=rubric_id,
            reason=redacted.text,
            redactions=redacted.count,
        )
        audit_record(
            actor=student,
            event=AuditEvent.Event.REGRADE_REQUESTED,
            target=request,
            course=submission.task.course_id,
            to_state=RegradeStatus.OPEN,
            reason=redacted.text,
            extra={"submission": str(submission.pk), "rubric_id": rubric_id, "attempt": str(attempt.pk)},
        )
    return request


def regrades_settle(*, submission: Submission, verdict: ReviewAttempt, staff, rubric_ids: list[str]) -> int:
    """The staff verdict ``verdict`` settles the open requests on the criteria
    it names; call inside the verdict's transaction."""
    settled = 0
    hidden = hidden_criteria(verdict.rubric.criteria)
    for request in RegradeRequest.objects.filter(
        submission=submission, rubric_id__in=rubric_ids, status=RegradeStatus.OPEN
    ):
        entry = next(c for c in verdict.result["criteria"] if c["rubric_id"] == request.rubric_id)
        # The response is read by the student: a hidden check's staff reason
        # stays hidden there too (SPEC §9), as it does in the result.
        reason = hidden_text(entry["status"]) if request.rubric_id in hidden else entry["reason"]
        response = f"Staff gave a verdict: {entry['status']} — {reason}"[:REGRADE_RESPONSE_MAX_CHARS]
        if _decide(request, RegradeStatus.SETTLED, staff=staff, response=response, settled_by=verdict):
            audit_record(
                actor=staff,
                event=AuditEvent.Event.REGRADE_SETTLED,
                target=request,
                course=submission.task.course_id,
                from_state=RegradeStatus.OPEN,
                to_state=RegradeStatus.SETTLED,
                reason=response,
                extra={"verdict_attempt": str(verdict.pk), "rubric_id": request.rubric_id},
            )
            settled += 1
    return settled


def regrade_decline(*, request: RegradeRequest, staff, response: str) -> RegradeRequest:
    """Keep the review's verdict and tell the student why (an open request only)."""
    response = response.strip()
    if nothing_to_read(response) or len(response) > REGRADE_RESPONSE_MAX_CHARS:
        raise InvalidInput(f"give a reason of 1-{REGRADE_RESPONSE_MAX_CHARS} characters", field="response")
    with transaction.atomic():
        if not _decide(request, RegradeStatus.DECLINED, staff=staff, response=response):
            raise Conflict("this regrade request was already decided")
        audit_record(
            actor=staff,
            event=AuditEvent.Event.REGRADE_DECLINED,
            target=request,
            course=request.submission.task.course_id,
            from_state=RegradeStatus.OPEN,
            to_state=RegradeStatus.DECLINED,
            reason=response,
            extra={"rubric_id": request.rubric_id},
        )
    request.refresh_from_db()
    return request


def _decide(request: RegradeRequest, status: str, *, staff, response: str, settled_by=None) -> bool:
    """Claim the open request for this decision (a second decider finds nothing)."""
    return (
        RegradeRequest.objects.filter(pk=request.pk, status=RegradeStatus.OPEN).update(
            status=status,
            response=response,
            decided_by=staff,
            decided_at=timezone.now(),
            settled_by=settled_by,
        )
        == 1
    )
