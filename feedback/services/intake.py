"""Submissions and new review attempts (SPEC §2): intake, the review cache,
review requests and re-reviews after a rubric change."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.db import transaction
from django.db.models import OuterRef, Q, Subquery
from django.utils import timezone

from feedback.evidence import check_evidence_limits, normalize_evidence, redact_evidence, snapshot_hash
from feedback.models import AttemptKind, AttemptStatus, ReviewAttempt, Submission
from feedback.services.dispatch import dispatch_on_commit, unpublished_mark
from feedback.services.sequences import next_seq
from feedback.versions import Versions, current_versions, is_compatible
from tutor.audit import audit_record
from tutor.kernel.correlation import get_correlation_id
from tutor.kernel.errors import Conflict
from tutor.models import AuditEvent, Task


def reusable_attempts(submission: Submission, versions: Versions):
    """Earlier completed reviews of the same student's same task on identical
    evidence and versions, newest first (SPEC §2 cache). Never across
    students; unavailable and invalid attempts are never reused.

    Served by ``submission_cache_idx`` (student, task, snapshot_hash): the
    cost stays that of one student's history of one task whatever the table
    size (a test pins the plan on both databases)."""
    return ReviewAttempt.objects.filter(
        submission__student_id=submission.student_id,
        submission__task_id=submission.task_id,
        submission__snapshot_hash=submission.snapshot_hash,
        submission__ci_source=submission.ci_source,
        kind=AttemptKind.REVIEW,
        status=AttemptStatus.COMPLETED,
        model=versions.model,
        **versions.compatible_filter(),
    ).order_by("-attempt_seq")


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
    source = None if forced else reusable_attempts(submission, versions).first()
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
            model_failed=source.model_failed,
            awaiting_staff=source.awaiting_staff,
            reused_from=original,
            generation_attempts=0,
            finished_at=now,
        )
    else:
        attempt = ReviewAttempt.objects.create(**fields, dispatched_at=unpublished_mark(now))
    dispatch_on_commit(attempt)
    return attempt


def submission_create(
    *, student, task: Task, evidence: dict[str, Any], submitted_by, ci_source: str
) -> Submission:
    """Store a submission and its first attempt (SPEC §2). Raises
    EvidenceTooLarge before anything is written. The evidence is stored
    redacted, with its redactions counted per field; ``snapshot_hash`` (the
    review cache's key) hashes what is stored and ``sent_hash`` what was sent."""
    evidence = normalize_evidence(evidence)
    check_evidence_limits(evidence)
    sent_hash = snapshot_hash(evidence)
    evidence, redactions = redact_evidence(evidence)
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
            number=submission_number(previous),
            evidence=evidence,
            evidence_redactions=redactions,
            snapshot_hash=snapshot_hash(evidence),
            sent_hash=sent_hash,
            ci_source=ci_source,
            submitted_by=submitted_by,
        )
        attempt_create(submission=submission, requested_by=submitted_by, versions=versions)
    return submission


def submission_number(previous: Submission | None) -> int:
    """The student's count of submissions for the task, this one included:
    one more than the one it follows (``previous`` is the student's latest)."""
    return (previous.number or 0) + 1 if previous is not None else 1


class ReviewNotAllowed(Conflict):
    """The owner may not ask for a review now (SPEC §7: 409)."""


def review_request(*, submission: Submission, user, is_staff: bool, force: bool) -> ReviewAttempt:
    """A new attempt for ``submission`` (SPEC §7 ``POST …/reviews/``).

    Staff may always ask, and ``force`` skips the cache (audited as
    ``review_forced``). The owner may retry only the latest submission and
    only when its newest attempt is unavailable, invalid or stale.
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
        forced = force and is_staff
        attempt = attempt_create(submission=submission, requested_by=user, forced=forced, versions=versions)
        if forced:
            audit_record(
                actor=user,
                event=AuditEvent.Event.REVIEW_FORCED,
                target=attempt,
                course=submission.task.course_id,
                to_state=attempt.status,
                extra={"submission": str(submission.pk), "attempt_seq": attempt.attempt_seq},
            )
    return attempt


def stale_latest_submission_ids(task: Task, versions: Versions) -> list:
    """Every student's latest submission of ``task`` (no later one names it
    ``previous``) whose newest attempt was made under other versions, or
    that has none: what a re-review after a rubric change is for."""
    newest = ReviewAttempt.objects.filter(submission=OuterRef("pk")).order_by("-attempt_seq")
    latest = Submission.objects.filter(task=task, next__isnull=True).annotate(
        **{f"newest_{key}": Subquery(newest.values(key)[:1]) for key in versions.compatible_filter()}
    )
    current = Q(**{f"newest_{key}": value for key, value in versions.compatible_filter().items()})
    stale = latest.filter(Q(newest_rubric_version__isnull=True) | ~current)
    return list(stale.order_by("submission_seq").values_list("pk", flat=True))


def rereview_latest_submissions(*, task: Task, progress: Callable[[int, int], None] | None = None) -> int:
    """Queue a new attempt for every student's latest submission of ``task``
    not reviewed under its current rules (``import_course --rereview``: after
    a rubric bump, also one imported earlier without the flag). ``progress``
    is called with (done, total) as attempts are queued."""
    versions = current_versions(task)
    ids = stale_latest_submission_ids(task, versions)
    count = 0
    for sub in Submission.objects.filter(id__in=ids).select_related("task").iterator(chunk_size=500):
        with transaction.atomic():
            attempt_create(submission=sub, versions=versions)
        count += 1
        if progress is not None:
            progress(count, len(ids))
    return count
