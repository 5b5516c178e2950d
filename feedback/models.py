"""Submissions and immutable review attempts (SPEC §2).

Order is decided by server-assigned sequence numbers only: ``submission_seq``
and ``attempt_seq`` come from a counter row updated inside the inserting
transaction, so they are gapless, follow commit order and are never reused
(SPEC §11: identity columns are neither).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from tutor.models import Rubric, Task


class Counter(models.Model):
    """One row per sequence. Incremented with an UPDATE in the transaction that
    inserts the numbered row: the row lock (PostgreSQL) or the IMMEDIATE write
    lock (SQLite) makes concurrent inserts take numbers in commit order."""

    name = models.CharField(max_length=32, primary_key=True)
    value = models.BigIntegerField(default=0)

    def __str__(self) -> str:
        return f"{self.name}={self.value}"


class CiSource(models.TextChoices):
    STUDENT = "student"  # the student's own claim about CI: basis self_report
    SERVICE = "service"  # reported by the course's CI integration: basis ci


class Submission(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    student = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="submissions"
    )
    task = models.ForeignKey(Task, on_delete=models.PROTECT, related_name="submissions")
    submission_seq = models.BigIntegerField(unique=True, editable=False)
    previous = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="next"
    )
    # The student's Nth submission of this task (SPEC §7, turn 3): what the
    # student is shown ("your submission 2"); ``submission_seq`` stays the
    # system-wide order. Nullable: added in place on SQLite.
    number = models.PositiveIntegerField(null=True, blank=True)
    evidence = models.JSONField()
    # Sizes, file names and CI status (feedback.evidence.evidence_summary):
    # what a list shows instead of the evidence, which may be 1 MiB a row.
    # Computed once, when the submission is stored; it never changes either.
    evidence_summary = models.JSONField(default=dict)
    # Redactions made in the evidence before it was stored, per field
    # ({"report": 1, "files/.env": 2}; feedback.evidence.redact_evidence): for staff.
    evidence_redactions = models.JSONField(default=dict, blank=True)
    # The review cache's key: the hash of the evidence as stored (redacted), so
    # evidence that differs only in a secret is the same review (SPEC §2).
    snapshot_hash = models.CharField(max_length=64)
    # The hash of the evidence as it was sent, secrets included: knows the same
    # upload again; never shown. Empty for rows stored before it existed.
    sent_hash = models.CharField(max_length=64, blank=True, default="", db_default="", editable=False)
    ci_source = models.CharField(max_length=16, choices=CiSource.choices)
    submitted_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-submission_seq"]
        indexes = [
            # "latest submission of (student, task)" -- SPEC §3
            models.Index(fields=["student", "task", "-submission_seq"], name="submission_latest_idx"),
            # the review cache: the same student's same task on identical evidence
            # (feedback.services.intake._reusable_attempt) -- SPEC §2 cache
            models.Index(fields=["student", "task", "snapshot_hash"], name="submission_cache_idx"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(submission_seq__gt=0), name="submission_seq_positive"),
            models.CheckConstraint(
                condition=Q(ci_source__in=["student", "service"]), name="submission_ci_source_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"submission #{self.submission_seq}"

    def save(self, *args, **kwargs):
        # A submission is evidence as it was sent, redacted (SPEC §2): never rewritten.
        if not self._state.adding:
            raise TypeError(f"submission {self.pk} is immutable")
        if not self.evidence_summary:
            from feedback.evidence import evidence_summary

            self.evidence_summary = evidence_summary(self.evidence)
        super().save(*args, **kwargs)


class AttemptStatus(models.TextChoices):
    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    UNAVAILABLE = "unavailable"
    INVALID = "invalid"


TERMINAL_STATUSES = (AttemptStatus.COMPLETED, AttemptStatus.UNAVAILABLE, AttemptStatus.INVALID)


class ErrorCode(models.TextChoices):
    REVIEW_UNAVAILABLE = "REVIEW_UNAVAILABLE"
    REVIEW_CONFIG_ERROR = "REVIEW_CONFIG_ERROR"
    WORKER_LOST = "WORKER_LOST"
    TIME_LIMIT = "TIME_LIMIT"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    MODEL_OUTPUT_INVALID = "MODEL_OUTPUT_INVALID"
    EVIDENCE_INVALID = "EVIDENCE_INVALID"


class AttemptKind(models.TextChoices):
    REVIEW = "review"  # the pipeline reviews the evidence
    STAFF_VERDICT = "staff_verdict"  # staff settle or overrule criteria


class TerminalAttemptError(RuntimeError):
    """Raised when code tries to change a review attempt that has finished."""


class ReviewAttempt(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    submission = models.ForeignKey(Submission, on_delete=models.PROTECT, related_name="attempts")
    attempt_seq = models.BigIntegerField(unique=True, editable=False)
    kind = models.CharField(max_length=16, choices=AttemptKind.choices, default=AttemptKind.REVIEW)
    # Versions are stamped at creation (SPEC §2); "current" compares against them.
    rubric = models.ForeignKey(Rubric, on_delete=models.PROTECT, related_name="attempts")
    rubric_version = models.CharField(max_length=64)
    rubric_hash = models.CharField(max_length=64)
    prompt_version = models.CharField(max_length=64)
    engine_version = models.CharField(max_length=64)
    model = models.CharField(max_length=200)  # provenance only: never makes an attempt stale
    status = models.CharField(max_length=16, choices=AttemptStatus.choices, default=AttemptStatus.QUEUED)
    result = models.JSONField(null=True, blank=True)
    reused_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="reuses"
    )
    error_code = models.CharField(max_length=32, choices=ErrorCode.choices, blank=True)
    error_detail = models.TextField(blank=True)
    generation_attempts = models.PositiveSmallIntegerField(default=0)
    # The rubric ids the model judged FAIL, as JSON strings ('["A3"]'), written
    # with the terminal result: the queue finds model FAILs on low-agreement
    # criteria with a LIKE on this column on any database (SPEC §8). Nullable
    # so that SQLite adds the column in place: a rebuilt table would lose the
    # immutability trigger of migration 0002.
    model_failed = models.TextField(null=True, blank=True)
    # The rubric ids NEED_REVIEW for a reason staff can settle
    # (``feedback.results.criteria_awaiting_staff``), written with the result
    # like ``model_failed``: the queue finds them whatever the overall says.
    awaiting_staff = models.TextField(null=True, blank=True)
    forced = models.BooleanField(default=False)
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    correlation_id = models.CharField(max_length=64, blank=True)
    # Claiming (SPEC §2): a worker owns the attempt while ``claim`` holds its token.
    claim = models.UUIDField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    claim_count = models.PositiveSmallIntegerField(default=0)
    lost_count = models.PositiveSmallIntegerField(default=0)
    # When the broker accepted the review task (SPEC §2 sweep): null until a
    # publish succeeds. A failed publish sets it one visibility timeout back,
    # so the next sweep sends it at once; a published task is sent again only
    # once the broker cannot still hold it (feedback.services.dispatch).
    dispatched_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-attempt_seq"]
        indexes = [
            # "newest (compatible) attempt of a submission" -- SPEC §3
            models.Index(fields=["submission", "-attempt_seq"], name="attempt_newest_idx"),
            # the sweep's two work queues (feedback.services.worker.attempts_sweep):
            # queued attempts by last dispatch, running ones by claim time
            models.Index(
                fields=["dispatched_at"], condition=Q(status="queued"), name="attempt_queued_dispatch_idx"
            ),
            models.Index(
                fields=["claimed_at"], condition=Q(status="running"), name="attempt_running_claim_idx"
            ),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(attempt_seq__gt=0), name="attempt_seq_positive"),
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in AttemptStatus]), name="attempt_status_valid"
            ),
            # A terminal attempt has a finish time; a completed one has a result.
            models.CheckConstraint(
                condition=Q(status__in=["queued", "running"]) | Q(finished_at__isnull=False),
                name="attempt_terminal_has_finished_at",
            ),
            models.CheckConstraint(
                condition=~Q(status="completed") | Q(result__isnull=False),
                name="attempt_completed_has_result",
            ),
            models.CheckConstraint(
                condition=Q(reused_from__isnull=True) | ~Q(reused_from=F("id")),
                name="attempt_not_reused_from_itself",
            ),
        ]

    def __str__(self) -> str:
        return f"attempt #{self.attempt_seq} ({self.status})"

    def save(self, *args, **kwargs):
        # Terminal attempts are history (SPEC §2). The database trigger of
        # migration 0002 backs this for writes that bypass save().
        if not self._state.adding:
            stored = ReviewAttempt.objects.filter(pk=self.pk).values_list("status", flat=True).first()
            if stored in TERMINAL_STATUSES:
                raise TerminalAttemptError(f"review attempt {self.pk} is {stored} and immutable")
        super().save(*args, **kwargs)

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES


class CriterionAgreement(models.Model):
    """One staff verdict on a criterion a machine had judged: the pair
    (machine status, staff status) under the rubric version both used. Counted
    per criterion and rubric version for the agreement report (SPEC §7
    ``review-agreement``); a rubric bump starts a new count."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="+")
    rubric = models.ForeignKey(Rubric, on_delete=models.CASCADE, related_name="agreements")
    criterion = models.CharField(max_length=64)  # the rubric id of the criterion
    machine_basis = models.CharField(max_length=16)
    machine_status = models.CharField(max_length=16)
    staff_status = models.CharField(max_length=16)
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="+")
    machine_attempt = models.ForeignKey(ReviewAttempt, on_delete=models.CASCADE, related_name="+")
    staff_attempt = models.ForeignKey(ReviewAttempt, on_delete=models.CASCADE, related_name="agreements")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["staff_attempt", "criterion"], name="agreement_one_per_verdict_criterion"
            )
        ]
        indexes = [
            # the report and the flag: all pairs of one rubric version, by criterion
            models.Index(fields=["rubric", "criterion"], name="agreement_rubric_criterion_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.criterion}: {self.machine_basis} {self.machine_status} / staff {self.staff_status}"

    @property
    def agrees(self) -> bool:
        return self.machine_status == self.staff_status


class RegradeStatus(models.TextChoices):
    OPEN = "open"
    SETTLED = "settled"  # a staff verdict named the criterion
    DECLINED = "declined"  # staff kept the verdict, with a reason


class RegradeRequest(models.Model):
    """A student asks staff to look at one criterion of the newest completed
    review of their latest submission (SPEC §7 regrade requests)."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    submission = models.ForeignKey(Submission, on_delete=models.CASCADE, related_name="regrade_requests")
    attempt = models.ForeignKey(ReviewAttempt, on_delete=models.CASCADE, related_name="regrade_requests")
    student = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    rubric_id = models.CharField(max_length=64)
    reason = models.TextField()  # redacted before storage
    redactions = models.PositiveSmallIntegerField(default=0)
    status = models.CharField(max_length=16, choices=RegradeStatus.choices, default=RegradeStatus.OPEN)
    response = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    settled_by = models.ForeignKey(
        ReviewAttempt, null=True, blank=True, on_delete=models.SET_NULL, related_name="settled_regrades"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["submission", "rubric_id"],
                condition=Q(status="open"),
                name="regrade_one_open_per_criterion",
            ),
            models.CheckConstraint(
                condition=Q(status__in=["open", "settled", "declined"]), name="regrade_status_valid"
            ),
        ]
        indexes = [
            # the admin queue: open requests, oldest first
            models.Index(fields=["created_at"], condition=Q(status="open"), name="regrade_open_idx"),
        ]

    def __str__(self) -> str:
        return f"regrade {self.rubric_id} ({self.status})"


class AttemptPurgePermit(models.Model):
    """Lifts the database's DELETE guard on terminal review attempts for one
    transaction (migration 0004): the guard lets a DELETE through only while
    a row of this table is visible to it. Rows are inserted and deleted
    inside the transaction of ``feedback.services.retention.attempts_purge``,
    the one audited way to delete attempts (SPEC §2), and of ``flush``, so no
    other transaction ever sees one."""

    reason = models.CharField(max_length=200)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        # Not managed, so that ``flush`` leaves the table alone: on SQLite it
        # empties tables in no fixed order, and a permit deleted before the
        # attempts would stop the flush (feedback/management/commands/flush.py).
        # Migration 0004 creates the table.
        managed = False
        db_table = "feedback_attemptpurgepermit"

    def __str__(self) -> str:
        return f"purge permit: {self.reason}"


class AttemptScrubPermit(models.Model):
    """Lets the immutability trigger of terminal review attempts pass one
    kind of UPDATE of one attempt (migration 0009): the erasure of a student
    (``feedback.rights``, SPEC §13) removing the free text of a result --
    reasons, quoted evidence, the next step, the error detail -- while its
    verdicts (overall, and each criterion's rubric id, status and basis) and
    every other column stay as they were. Rows are inserted and deleted in
    the erasure's own transaction, so no other transaction ever sees one."""

    attempt_id = models.UUIDField(primary_key=True)

    def __str__(self) -> str:
        return f"scrub permit for attempt {self.attempt_id}"
