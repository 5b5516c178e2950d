"""Memory items and their tokens, the correction records and the detection queue (SPEC §5; seed 002 §2.1)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from corrections.models.cases import CorrectionCase, Proposal
from corrections.models.common import Classifier, CorrectionType, Source, TopicMixin
from corrections.models.facts import Fact
from tutor.models import Course, TutorMessage, TutorSession


class MemoryTier(models.TextChoices):
    SESSION = "session"
    USER = "user"


class MemoryItem(TopicMixin):
    """A session or user memory item: what the tutor is told about this user
    (their preferences, their own corrections). Deletable by its owner."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memory_items")
    # Where it came from (admin scoping); user memory applies in every course of the user.
    course = models.ForeignKey(Course, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    tier = models.CharField(max_length=16, choices=MemoryTier.choices)
    kind = models.CharField(max_length=16, choices=CorrectionType.choices)
    session = models.ForeignKey(
        TutorSession, null=True, blank=True, on_delete=models.CASCADE, related_name="memory_items"
    )
    content = models.TextField()
    statement_key = models.CharField(max_length=64)
    expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(tier__in=[t.value for t in MemoryTier]), name="memoryitem_tier_valid"
            ),
            models.CheckConstraint(
                condition=Q(kind__in=[k.value for k in CorrectionType]), name="memoryitem_kind_valid"
            ),
            # Session memory belongs to one session; user memory to none.
            models.CheckConstraint(
                condition=Q(tier=MemoryTier.SESSION, session__isnull=False)
                | Q(tier=MemoryTier.USER, session__isnull=True),
                name="memoryitem_session_iff_session_tier",
            ),
            # Identical repeated corrections count once.
            models.UniqueConstraint(
                fields=["user", "kind", "statement_key"],
                condition=Q(tier=MemoryTier.USER),
                name="memoryitem_user_statement_once",
            ),
            models.UniqueConstraint(
                fields=["session", "kind", "statement_key"],
                condition=Q(tier=MemoryTier.SESSION),
                name="memoryitem_session_statement_once",
            ),
        ]
        indexes = [
            # memory_list: a user's items by tier, newest first
            models.Index(fields=["user", "tier", "-created_at"], name="memoryitem_user_tier_idx"),
            # the tutor context: a user's newest preferences (and how many), from the index alone
            models.Index(
                fields=["user", "tier", "kind", "-updated_at", "id"], name="memoryitem_kind_recent_idx"
            ),
            # the tutor context: a user's newest user memory of any other kind, read in
            # order until enough are found (and how many), from the index alone
            models.Index(fields=["user", "tier", "-updated_at", "id", "kind"], name="memoryitem_recent_idx"),
            # memory_purge_expired
            models.Index(
                fields=["expires_at"], condition=Q(expires_at__isnull=False), name="memoryitem_expiry_idx"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.tier} {self.kind}: {self.content[:60]}"


class MemoryToken(models.Model):
    """One topic token of a memory item: relevance ranking in one query.

    It carries copies of its item's owner, tier and kind (which never change)
    and of its ``updated_at`` (``memory_remember``, the one writer of items,
    writes an item's tokens again whenever it saves the item): the user
    memory that shares the most tokens with a message is ranked from these
    rows alone, without reading the user's other items."""

    memory = models.ForeignKey(MemoryItem, on_delete=models.CASCADE, related_name="tokens")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+", db_index=False
    )
    tier = models.CharField(max_length=16, choices=MemoryTier.choices)
    kind = models.CharField(max_length=16, choices=CorrectionType.choices)
    updated_at = models.DateTimeField()
    token = models.CharField(max_length=64)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["memory", "token"], name="memorytoken_unique")]
        indexes = [
            # the tutor context: WHERE user_id = … AND token IN (…message tokens…) AND tier = …
            # AND kind IN (…), counted per item and ordered by updated_at, from the index alone
            models.Index(
                fields=["user", "token", "tier", "kind", "updated_at", "memory"],
                name="memorytoken_user_token_idx",
            ),
        ]

    def __str__(self) -> str:
        return self.token


class Correction(TopicMixin):
    """One detected correction and where it went (SPEC §5): type, confidence,
    topic, the assistant's statement it refers to, the corrected statement,
    the user's own words (redacted) and the tiers written."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="+")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="corrections")
    session = models.ForeignKey(
        TutorSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    message = models.ForeignKey(
        TutorMessage, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    source = models.CharField(max_length=16, choices=Source.choices)
    type = models.CharField(max_length=16, choices=CorrectionType.choices)
    confidence = models.FloatField()
    classifier = models.CharField(max_length=16, choices=Classifier.choices, default=Classifier.RULES)
    original_statement = models.TextField(blank=True)
    corrected_statement = models.TextField(blank=True)
    content = models.TextField(help_text="The user's own words, redacted.")
    redactions = models.PositiveIntegerField(default=0)
    statement_key = models.CharField(max_length=64)
    # type, topic, statement (and the session, for session-scoped ones): a
    # repeat by the same user is the same correction and counts once.
    dedupe_key = models.CharField(max_length=64)
    tiers = models.JSONField(default=list, blank=True)
    case = models.ForeignKey(
        CorrectionCase, null=True, blank=True, on_delete=models.SET_NULL, related_name="corrections"
    )
    proposal = models.ForeignKey(
        Proposal, null=True, blank=True, on_delete=models.SET_NULL, related_name="corrections"
    )
    fact = models.ForeignKey(
        Fact, null=True, blank=True, on_delete=models.SET_NULL, related_name="corrections"
    )
    memory = models.ForeignKey(MemoryItem, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    correlation_id = models.CharField(max_length=64, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(type__in=[t.value for t in CorrectionType]), name="correction_type_valid"
            ),
            models.CheckConstraint(
                condition=Q(confidence__gte=0) & Q(confidence__lte=1), name="correction_confidence_range"
            ),
            # A duplicate delivery of the detection task writes nothing twice.
            models.UniqueConstraint(
                fields=["message"], condition=Q(message__isnull=False), name="correction_once_per_message"
            ),
            models.UniqueConstraint(
                fields=["user", "course", "dedupe_key"], name="correction_repeat_counts_once"
            ),
        ]
        indexes = [
            # the per-user rate limit and GET /api/corrections/ for the caller
            models.Index(fields=["user", "-created_at"], name="correction_user_time_idx"),
            # staff: a course's corrections, newest first
            models.Index(fields=["course", "-created_at"], name="correction_course_time_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.confidence:.2f} by user {self.user_id}: {self.content[:60]}"


class PendingDetection(models.Model):
    """The outbox of detection (SPEC §5: detection runs on every user
    message). Written with a user message that can be a correction, in its
    write (``corrections.receivers.detection_outbox_record``), and deleted by
    the detection task once it has
    run: whatever happens between the commit and the worker -- the web
    process dies before it publishes, the broker refuses the task or loses
    it -- the row stays, and the sweep (``corrections.tasks.sweep_detections``)
    publishes it again when it is due.

    ``due_at``: when the sweep may send it again. A stored message's row is
    due one visibility timeout later (by then Redis would have redelivered a
    published task); a refused publish makes it due one sweep interval later.
    The task is safe to run twice (one correction per message)."""

    message = models.OneToOneField(TutorMessage, primary_key=True, on_delete=models.CASCADE, related_name="+")
    correlation_id = models.CharField(max_length=64, blank=True)
    due_at = models.DateTimeField()
    failures = models.PositiveIntegerField(default=0)  # publishes the broker refused
    sends = models.PositiveIntegerField(default=0)  # publishes by the sweep
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [
            # detections_sweep: the rows due that may still be sent, oldest
            # first. Led by ``sends``, so the rows that have had all their
            # sends (left to an operator, and adding up over the months) are
            # outside the range it reads. The due rows that may still be sent
            # are read and sorted whole: a backlog only an outage builds.
            models.Index(fields=["sends", "due_at"], name="pendingdetection_live_idx"),
        ]

    def __str__(self) -> str:
        return (
            f"detection of message {self.message_id} ({self.failures} refused publishes, "
            f"{self.sends} sent by the sweep)"
        )
