"""Writes of the feedback app: submissions, attempts and their transitions (SPEC §2).

Every transition is a conditional UPDATE: a row count other than 1 means
someone else got there first, and the caller backs off instead of
overwriting (a duplicate task delivery, a late worker, the sweep).
"""

from __future__ import annotations

import logging
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from feedback.evidence import check_evidence_limits, normalize_evidence, snapshot_hash
from feedback.models import (
    TERMINAL_STATUSES,
    AttemptKind,
    AttemptStatus,
    CiSource,
    Counter,
    ErrorCode,
    ReviewAttempt,
    Submission,
)
from feedback.results import aggregate_overall
from feedback.versions import Versions, current_versions, is_compatible
from tutor.middleware import get_correlation_id
from tutor.models import Task

log = logging.getLogger(__name__)


# --- sequences -----------------------------------------------------------------


def next_seq(name: str, count: int = 1) -> int:
    """Reserve ``count`` values of the named sequence and return the first;
    call inside the inserting transaction.

    The UPDATE takes the counter row's lock (PostgreSQL) or the database write
    lock (SQLite, IMMEDIATE) and holds it until commit, so values are gapless,
    never reused (a rollback rolls the increment back) and in commit order.
    """
    assert transaction.get_connection().in_atomic_block, "next_seq needs a transaction"
    if Counter.objects.filter(name=name).update(value=F("value") + count) == 0:
        Counter.objects.get_or_create(name=name)
        Counter.objects.filter(name=name).update(value=F("value") + count)
    return Counter.objects.values_list("value", flat=True).get(name=name) - count + 1


# --- dispatch -----------------------------------------------------------------


def attempt_dispatch(attempt_id: uuid.UUID | str) -> None:
    """Send the review task. Called from ``on_commit(robust=True)`` and by the
    sweep; a broker outage is logged, and the queued row stays as the outbox."""
    from feedback.tasks import review_attempt

    try:
        review_attempt.delay(str(attempt_id))
    except Exception:
        log.warning("could not dispatch review attempt %s; the sweep will retry", attempt_id, exc_info=True)


def _dispatch_on_commit(attempt: ReviewAttempt) -> None:
    if attempt.status == AttemptStatus.QUEUED:
        attempt_id = attempt.pk
        transaction.on_commit(lambda: attempt_dispatch(attempt_id), robust=True)


# --- creation -------------------------------------------------------------------


def _reusable_attempt(submission: Submission, versions: Versions) -> ReviewAttempt | None:
    """An earlier completed review of the same student's same task on identical
    evidence and versions (SPEC §2 cache). Never across students; unavailable
    and invalid attempts are never reused."""
    return (
        ReviewAttempt.objects.filter(
            submission__student_id=submission.student_id,
            submission__task_id=submission.task_id,
            submission__snapshot_hash=submission.snapshot_hash,
            submission__ci_source=submission.ci_source,
            kind=AttemptKind.REVIEW,
            status=AttemptStatus.COMPLETED,
            model=versions.model,
            **versions.compatible_filter(),
        )
        .order_by("-attempt_seq")
        .first()
    )


def attempt_create(
    *,
    submission: Submission,
    requested_by=None,
    forced: bool = False,
    versions: Versions | None = None,
) -> ReviewAttempt:
    """Queue a new review attempt, or complete it at once from the cache.

    Must run inside a transaction; dispatch happens after commit.
    """
    versions = versions or current_versions(submission.task)
    now = timezone.now()
    source = None if forced else _reusable_attempt(submission, versions)
    fields: dict[str, Any] = {
        "submission": submission,
        "attempt_seq": next_seq("attempt"),
        "kind": AttemptKind.REVIEW,
        "forced": forced,
        "requested_by": requested_by,
        "correlation_id": get_correlation_id(),
        **versions.stamp(),
    }
    if source is not None:
        original = source.reused_from or source
        attempt = ReviewAttempt.objects.create(
            **fields,
            status=AttemptStatus.COMPLETED,
            result=source.result,
            reused_from=original,
            generation_attempts=0,
            finished_at=now,
        )
    else:
        attempt = ReviewAttempt.objects.create(**fields, dispatched_at=now)
    _dispatch_on_commit(attempt)
    return attempt


def submission_create(
    *, student, task: Task, evidence: dict[str, Any], submitted_by, ci_source: str
) -> Submission:
    """Store a submission and its first attempt (SPEC §2). Raises
    EvidenceTooLarge before anything is written."""
    evidence = normalize_evidence(evidence)
    check_evidence_limits(evidence)
    versions = current_versions(task)
    with transaction.atomic():
        # Number first: the counter's row lock makes concurrent submissions wait
        # here, so on PostgreSQL (READ COMMITTED) the read below already sees the
        # one committed just before; read first, two submissions would name the
        # same ``previous`` and the second would fail its unique constraint.
        seq = next_seq("submission")
        previous = Submission.objects.filter(student=student, task=task).order_by("-submission_seq").first()
        submission = Submission.objects.create(
            student=student,
            task=task,
            submission_seq=seq,
            previous=previous,
            evidence=evidence,
            snapshot_hash=snapshot_hash(evidence),
            ci_source=ci_source,
            submitted_by=submitted_by,
        )
        attempt_create(submission=submission, requested_by=submitted_by, versions=versions)
    return submission


# --- review requests ------------------------------------------------------------


class ReviewNotAllowed(Exception):
    """The owner may not ask for a review now (SPEC §7: 409)."""


def review_request(*, submission: Submission, user, is_staff: bool, force: bool) -> ReviewAttempt:
    """A new attempt for ``submission`` (SPEC §7 ``POST …/reviews/``).

    Staff may always ask, and ``force`` skips the cache. The owner may retry
    only the latest submission and only when its newest attempt is
    unavailable, invalid or stale.
    """
    versions = current_versions(submission.task)
    with transaction.atomic():
        # One request per submission at a time (a row lock on PostgreSQL; SQLite's
        # IMMEDIATE transactions already serialise): two simultaneous retries
        # must not both pass the check below.
        Submission.objects.select_for_update().filter(pk=submission.pk).values_list("pk", flat=True).first()
        if not is_staff:
            latest_seq = (
                Submission.objects.filter(student_id=submission.student_id, task_id=submission.task_id)
                .order_by("-submission_seq")
                .values_list("submission_seq", flat=True)
                .first()
            )
            if latest_seq != submission.submission_seq:
                raise ReviewNotAllowed("only the latest submission of a task can be re-reviewed")
            newest = submission.attempts.order_by("-attempt_seq").first()
            retryable = newest is None or (
                newest.status in (AttemptStatus.UNAVAILABLE, AttemptStatus.INVALID)
                or not is_compatible(newest, versions)
            )
            if not retryable:
                raise ReviewNotAllowed(
                    f"the newest review attempt is {newest.status} under the current rules; "
                    "a retry is allowed only after an unavailable, invalid or outdated review"
                )
        return attempt_create(
            submission=submission, requested_by=user, forced=force and is_staff, versions=versions
        )


def rereview_latest_submissions(*, task: Task) -> int:
    """Queue a new attempt for every student's latest submission of ``task``
    (``import_course --rereview``, after a rubric change)."""
    latest_ids = {}
    for sub_id, student_id in (
        Submission.objects.filter(task=task).order_by("submission_seq").values_list("id", "student_id")
    ):
        latest_ids[student_id] = sub_id
    count = 0
    versions = current_versions(task)
    for sub in Submission.objects.filter(id__in=latest_ids.values()).select_related("task"):
        with transaction.atomic():
            attempt_create(submission=sub, versions=versions)
        count += 1
    return count


class VerdictError(ValueError):
    """A verdict names a criterion the rubric does not have; ``index`` is its
    position in the given ``criteria``."""

    def __init__(self, index: int, message: str):
        super().__init__(message)
        self.index = index


def staff_verdict_create(*, submission: Submission, staff, criteria: list[dict]) -> ReviewAttempt:
    """Settle or overrule criteria through a new, completed attempt (SPEC §2).

    Starts from the newest completed compatible attempt (or, without one, from
    every criterion NEED_REVIEW); the given criteria get basis ``staff`` and
    the staff reason. Earlier attempts are untouched.
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
            next_step = base.result.get("next_step", "")
        else:
            by_id = {
                cid: {
                    "rubric_id": cid,
                    "criterion": c["text"],
                    "kind": c["kind"],
                    "status": "NEED_REVIEW",
                    "reason": "not reviewed yet",
                    "evidence": "",
                    "basis": "none",
                }
                for cid, c in rubric_criteria.items()
            }
            next_step = ""
        for item in criteria:
            entry = by_id[item["rubric_id"]]
            entry.update(status=item["status"], reason=item["reason"], basis="staff", evidence="")
        ordered = [by_id[cid] for cid in rubric_criteria if cid in by_id]
        result = {"overall": aggregate_overall(ordered), "criteria": ordered, "next_step": next_step}
        attempt = ReviewAttempt.objects.create(
            submission=submission,
            attempt_seq=next_seq("attempt"),
            kind=AttemptKind.STAFF_VERDICT,
            requested_by=staff,
            correlation_id=get_correlation_id(),
            status=AttemptStatus.COMPLETED,
            result=result,
            finished_at=timezone.now(),
            **{**versions.stamp(), "model": f"staff:{staff.get_username()}"[:200]},
        )
    return attempt


# --- worker transitions -------------------------------------------------------


def attempt_claim(*, attempt_id) -> tuple[ReviewAttempt, uuid.UUID] | None:
    """Claim a queued attempt for this worker; None when another delivery,
    worker or the sweep got there first (a duplicate delivery is a no-op)."""
    token = uuid.uuid4()
    claimed = ReviewAttempt.objects.filter(pk=attempt_id, status=AttemptStatus.QUEUED).update(
        status=AttemptStatus.RUNNING,
        claim=token,
        claimed_at=timezone.now(),
        claim_count=F("claim_count") + 1,
    )
    if claimed != 1:
        return None
    attempt = ReviewAttempt.objects.select_related(
        "submission", "submission__task", "submission__task__course", "rubric"
    ).get(pk=attempt_id)
    return attempt, token


def _finish(attempt_id, claim: uuid.UUID, **fields) -> bool:
    """Write a terminal state only if this worker still holds the claim."""
    done = ReviewAttempt.objects.filter(pk=attempt_id, status=AttemptStatus.RUNNING, claim=claim).update(
        finished_at=timezone.now(), **fields
    )
    if done != 1:
        log.info("attempt %s: claim lost, result discarded", attempt_id)
    return done == 1


def attempt_complete(*, attempt_id, claim: uuid.UUID, result: dict, generation_attempts: int) -> bool:
    return _finish(
        attempt_id,
        claim,
        status=AttemptStatus.COMPLETED,
        result=result,
        generation_attempts=generation_attempts,
    )


def attempt_failed(
    *,
    attempt_id,
    claim: uuid.UUID,
    status: str,
    error_code: str,
    detail: str = "",
    generation_attempts: int = 0,
) -> bool:
    """End an attempt ``unavailable`` or ``invalid`` -- never a student FAIL."""
    assert status in (AttemptStatus.UNAVAILABLE, AttemptStatus.INVALID)
    return _finish(
        attempt_id,
        claim,
        status=status,
        error_code=error_code,
        error_detail=detail[:2000],
        generation_attempts=generation_attempts,
    )


# --- the sweep -------------------------------------------------------------------


def attempts_sweep(*, now=None) -> dict[str, int]:
    """Keep every attempt moving to exactly one terminal state (SPEC §2).

    - ``queued`` longer than ``REVIEW_QUEUED_REDISPATCH_AFTER`` since its last
      dispatch: the broker may have been down -- dispatch again;
    - ``running`` with a claim older than the hard time limit: its worker died.
      The first time it goes back to ``queued``; the second time it ends
      ``unavailable`` with ``WORKER_LOST``.
    """
    now = now or timezone.now()
    counts = {"redispatched": 0, "requeued": 0, "worker_lost": 0}
    stale_dispatch = now - timedelta(seconds=settings.REVIEW_QUEUED_REDISPATCH_AFTER)
    for attempt_id in ReviewAttempt.objects.filter(
        status=AttemptStatus.QUEUED, dispatched_at__lt=stale_dispatch
    ).values_list("id", flat=True)[:1000]:
        if ReviewAttempt.objects.filter(
            pk=attempt_id, status=AttemptStatus.QUEUED, dispatched_at__lt=stale_dispatch
        ).update(dispatched_at=now):
            attempt_dispatch(attempt_id)
            counts["redispatched"] += 1

    lost_before = now - timedelta(seconds=settings.REVIEW_HARD_TIME_LIMIT)
    for attempt_id, claim, lost_count in ReviewAttempt.objects.filter(
        status=AttemptStatus.RUNNING, claimed_at__lt=lost_before
    ).values_list("id", "claim", "lost_count")[:1000]:
        running = ReviewAttempt.objects.filter(pk=attempt_id, status=AttemptStatus.RUNNING, claim=claim)
        if lost_count == 0:
            if running.update(
                status=AttemptStatus.QUEUED,
                claim=None,
                claimed_at=None,
                lost_count=F("lost_count") + 1,
                dispatched_at=now,
            ):
                attempt_dispatch(attempt_id)
                counts["requeued"] += 1
        elif running.update(
            status=AttemptStatus.UNAVAILABLE,
            error_code=ErrorCode.WORKER_LOST,
            error_detail="the worker reviewing this attempt stopped twice",
            lost_count=F("lost_count") + 1,
            finished_at=now,
        ):
            counts["worker_lost"] += 1
    return counts


def is_terminal_status(status: str) -> bool:
    return status in TERMINAL_STATUSES


__all__ = [
    "CiSource",
    "attempt_claim",
    "attempt_complete",
    "attempt_create",
    "attempt_dispatch",
    "attempt_failed",
    "attempts_sweep",
    "next_seq",
    "rereview_latest_submissions",
    "review_request",
    "staff_verdict_create",
    "submission_create",
]
