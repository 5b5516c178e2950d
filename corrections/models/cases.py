"""Review cases, their proposals and the process rules staff approve (SPEC §8; seed 002)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from corrections.models.common import TopicMixin
from corrections.models.facts import Fact
from tutor.models import Course


class CaseStatus(models.TextChoices):
    OPEN = "open"
    CLAIMED = "claimed"
    ACCEPTED = "accepted"
    REJECTED = "rejected"
    DISPUTED = "disputed"


UNDECIDED_CASE_STATUSES = (CaseStatus.OPEN, CaseStatus.CLAIMED)


class CaseKind(models.TextChoices):
    FACT = "fact"  # a correction conflicting with a course fact
    PROCESS = "process"  # a process correction awaiting approval as a course rule


class CorrectionCase(TopicMixin):
    """A review case: all conflicting corrections on one topic of a course,
    as proposals grouped by statement (SPEC §5, seed 002 §4.4). A claim is a
    lease (``claimed_until``): past it, anyone may claim or decide again."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=16, choices=CaseKind.choices)
    status = models.CharField(max_length=16, choices=CaseStatus.choices, default=CaseStatus.OPEN)
    active_fact = models.ForeignKey(
        Fact, null=True, blank=True, on_delete=models.SET_NULL, related_name="cases"
    )
    claimed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    claimed_until = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    reason = models.TextField(blank=True)
    # What an acceptance made: the new fact, or the course process rule.
    result_fact = models.ForeignKey(Fact, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        verbose_name = "correction case"
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in CaseStatus]), name="correctioncase_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=[k.value for k in CaseKind]), name="correctioncase_kind_valid"
            ),
            # SPEC §5: several conflicting corrections on one topic join one open case.
            models.UniqueConstraint(
                fields=["course", "kind", "topic_key"],
                condition=Q(status__in=[s.value for s in UNDECIDED_CASE_STATUSES]),
                name="correctioncase_one_open_per_topic",
            ),
        ]
        indexes = [
            # the queue: a course's undecided cases, oldest first
            models.Index(
                fields=["course", "created_at"],
                condition=Q(status__in=["open", "claimed"]),
                name="correctioncase_queue_idx",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind} case on {self.topic or '(no topic)'} ({self.status})"

    def lease_expired(self, now) -> bool:
        claimed = self.status == CaseStatus.CLAIMED
        return claimed and self.claimed_until is not None and self.claimed_until < now

    def effective_status(self, now) -> str:
        """A claim whose lease ran out is open again (anyone may claim or decide)."""
        return CaseStatus.OPEN if self.lease_expired(now) else self.status


class Proposal(models.Model):
    """One statement proposed in a case, with its distinct supporters."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    case = models.ForeignKey(CorrectionCase, on_delete=models.CASCADE, related_name="proposals")
    statement = models.TextField()
    statement_key = models.CharField(max_length=64)
    statement_unit = models.CharField(max_length=16, blank=True)
    supporter_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["case", "statement_key"], name="proposal_unique_statement")
        ]

    def __str__(self) -> str:
        return self.statement[:80]


class ProposalSupporter(models.Model):
    proposal = models.ForeignKey(Proposal, on_delete=models.CASCADE, related_name="supporters")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    correction = models.ForeignKey(
        "Correction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["proposal", "user"], name="proposalsupporter_one_per_user")
        ]

    def __str__(self) -> str:
        return f"supporter {self.user_id} of proposal {self.proposal_id}"


class ProcessRule(models.Model):
    """An approved process correction: part of the course's system message."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="+")
    statement = models.TextField()
    statement_key = models.CharField(max_length=64)
    case = models.OneToOneField(
        CorrectionCase, null=True, blank=True, on_delete=models.SET_NULL, related_name="process_rule"
    )
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["course", "statement_key"], name="processrule_unique_statement")
        ]
        indexes = [
            # process_rules_for_context: a course's rules, oldest first
            models.Index(fields=["course", "created_at"], name="processrule_course_idx"),
        ]

    def __str__(self) -> str:
        return self.statement[:80]
