"""Corrections, memory tiers, system facts and review cases (SPEC §5, §8; seed 002).

Three tiers (seed 002 §2.1): session memory (this conversation only), user
memory (every conversation of that user) and system facts (every student of
the course). A correction is recorded once with where it went; memory items
and facts are what the tutor is later told. A conflicting factual correction
never touches an active fact: it becomes a proposal in a review case, and
course staff decide.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from tutor.models import Course, Task, TutorMessage, TutorSession


class CorrectionType(models.TextChoices):
    FACTUAL = "factual"
    PREFERENCE = "preference"
    PROCESS = "process"
    NEGATIVE = "negative"


class Tier(models.TextChoices):
    """Where a correction was written; ``case`` marks a review case."""

    SESSION = "session"
    USER = "user"
    SYSTEM = "system"
    CASE = "case"


class Source(models.TextChoices):
    CHAT = "chat"  # detected on a stored tutor message
    EXPLICIT = "explicit"  # POST /api/corrections/


class Classifier(models.TextChoices):
    RULES = "rules"
    MODEL = "model"
    # The classifier was on but failed (no answer, or one out of shape): the rules decided.
    RULES_FALLBACK = "rules_fallback", "Rules (the model failed)"


class TopicMixin(models.Model):
    """A topic: its tokens in order (``topic`` reads them joined), and the
    sorted key (``corrections.text.topic_key``) for exact lookups."""

    topic = models.CharField(max_length=255, blank=True)
    topic_tokens = models.JSONField(default=list, blank=True)
    topic_key = models.CharField(max_length=255, blank=True)
    token_count = models.PositiveSmallIntegerField(default=0)

    class Meta:
        abstract = True


class FactStatus(models.TextChoices):
    PROPOSED = "proposed"  # a student's statement awaiting staff (or corroboration): not injected
    VERIFIED = "verified"
    DISPUTED = "disputed"  # injected with the other statements, marked as disputed
    SUPERSEDED = "superseded"  # history: valid_to is set


CURRENT_FACT_STATUSES = (FactStatus.PROPOSED, FactStatus.VERIFIED, FactStatus.DISPUTED)
INJECTED_FACT_STATUSES = (FactStatus.VERIFIED, FactStatus.DISPUTED)


class Fact(TopicMixin):
    """A course's system fact, temporal: valid from ``valid_from`` until a
    staff decision supersedes it (``valid_to``). At most one current fact per
    topic key; a conflicting correction goes to a review case instead."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="+")
    statement = models.TextField()
    # "The same statement" (SPEC §5): the number and unit it states, or its text key.
    statement_key = models.CharField(max_length=64)
    statement_unit = models.CharField(max_length=16, blank=True)
    status = models.CharField(max_length=16, choices=FactStatus.choices)
    pinned = models.BooleanField(default=False, help_text="Exempt from CORRECTIONS_FACT_TTL_DAYS.")
    valid_from = models.DateTimeField()
    valid_to = models.DateTimeField(null=True, blank=True)
    # Last confirmation (a new supporter, a staff decision): the TTL counts from here.
    confirmed_at = models.DateTimeField()
    supporter_count = models.PositiveIntegerField(default=0)
    # Set by a dispute: the other statements the tutor is told about.
    disputed_with = models.JSONField(default=list, blank=True)
    # A dispute's staff note: what the tutor is told about the topic (SPEC §5).
    staff_note = models.TextField(blank=True)
    # Provenance: who proposed it, which decision made or changed it, why.
    proposed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    supersedes = models.OneToOneField(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="superseded_by"
    )
    case = models.ForeignKey(
        "CorrectionCase", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decision_reason = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in FactStatus]), name="fact_status_valid"
            ),
            # A conflicting correction never overwrites: one current fact per topic.
            models.UniqueConstraint(
                fields=["course", "topic_key"],
                condition=Q(status__in=[s.value for s in CURRENT_FACT_STATUSES]),
                name="fact_one_current_per_topic",
            ),
            models.CheckConstraint(
                condition=Q(status=FactStatus.SUPERSEDED, valid_to__isnull=False)
                | (~Q(status=FactStatus.SUPERSEDED) & Q(valid_to__isnull=True)),
                name="fact_valid_to_iff_superseded",
            ),
        ]
        indexes = [
            # admin: a course's facts by status, newest first
            models.Index(fields=["course", "status", "-created_at"], name="fact_course_status_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.topic or '(no topic)'}: {self.statement[:60]}"


class FactToken(models.Model):
    """One topic token of a fact: the relevance lookup of the tutor context
    (SPEC §5) counts a long message's hits per fact over these rows, and the
    tutor context counts a fact's hits in the message from them."""

    fact = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="tokens")
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="+")
    token = models.CharField(max_length=64)
    # The fact's own token_count (a fact's topic never changes), so the hits a
    # fact needs are known from these rows alone.
    token_count = models.PositiveSmallIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["fact", "token"], name="facttoken_unique")]
        indexes = [
            # facts by a long message's tokens: WHERE course_id = … AND token IN (…)
            # GROUP BY fact_id HAVING COUNT(*) >= least(…, token_count), from the index alone
            models.Index(fields=["course", "token", "fact", "token_count"], name="facttoken_hits_idx"),
        ]

    def __str__(self) -> str:
        return self.token


class FactKey(models.Model):
    """The smallest sets of a fact's topic tokens whose presence in a text
    makes the fact relevant at CORRECTIONS_INJECT_MIN_TOKENS = 2 (SPEC §5):
    every pair of its tokens ("a b", sorted), or its only token. A message's
    own singles and pairs find, by equality, exactly the facts it contains two
    tokens of (or the one of a one-token fact) -- without reading the facts
    that share one word with it (``corrections.text.token_keys``)."""

    # No index of their own on the foreign keys: the unique constraint and the
    # lookup index lead with them.
    fact = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="keys", db_index=False)
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="+", db_index=False)
    key = models.CharField(max_length=2 * 64 + 1)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["fact", "key"], name="factkey_unique")]
        indexes = [
            # facts by a message's keys: WHERE course_id = … AND key IN (…), from the index alone
            models.Index(fields=["course", "key", "fact"], name="factkey_lookup_idx"),
        ]

    def __str__(self) -> str:
        return self.key


class TaskToken(models.Model):
    """One token of a task's text (title, goal, steps, materials) as the
    relevance lookup reads it (``corrections.text.query_tokens``), kept when
    the task is saved: a new fact finds the tasks whose text it overlaps."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="+", db_index=False)
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="+", db_index=False)
    token = models.CharField(max_length=64)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["task", "token"], name="tasktoken_unique")]
        indexes = [
            # a new fact's tasks: WHERE course_id = … AND token IN (…fact tokens…) GROUP BY task_id
            models.Index(fields=["course", "token", "task"], name="tasktoken_lookup_idx"),
        ]

    def __str__(self) -> str:
        return self.token


# ``reach`` of a fact whose every token the task text contains: relevant
# whatever CORRECTIONS_INJECT_MIN_TOKENS is (the largest value the column holds).
REACH_ALL = 32767


class TaskFactOverlap(models.Model):
    """How many of a fact's topic tokens a task's text contains, for every
    (task, fact) of a course that share one or more: the task half of the
    relevance rule (SPEC §5) worked out when a fact is written or a task's
    text changes, so a tutor request reads only the task's relevant facts.

    ``reach`` is the largest CORRECTIONS_INJECT_MIN_TOKENS for which the task
    makes the fact relevant: ``hits`` while the task misses some of its tokens,
    ``REACH_ALL`` once it contains all of them. "hits ≥ min(N, token_count)"
    is then ``reach ≥ N``: one range of one index, whatever N is set to."""

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="+", db_index=False)
    fact = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="task_overlaps")
    hits = models.PositiveSmallIntegerField()
    reach = models.PositiveSmallIntegerField()

    class Meta:
        constraints = [
            # also the task_hits lookup of the tutor context: WHERE task_id = … AND fact_id = …
            models.UniqueConstraint(fields=["task", "fact"], name="taskfactoverlap_unique"),
            models.CheckConstraint(condition=Q(hits__gte=1), name="taskfactoverlap_hits_positive"),
        ]
        indexes = [
            # the task's relevant facts: WHERE task_id = … AND reach >= N, from the index alone
            models.Index(fields=["task", "reach", "fact"], name="taskfactoverlap_reach_idx"),
        ]

    def __str__(self) -> str:
        return f"task {self.task_id} ∩ fact {self.fact_id}: {self.hits}"


class FactSupporter(models.Model):
    """A distinct user who stated the fact (seed 002: supporters count users, not messages)."""

    fact = models.ForeignKey(Fact, on_delete=models.CASCADE, related_name="supporters")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    correction = models.ForeignKey(
        "Correction", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [models.UniqueConstraint(fields=["fact", "user"], name="factsupporter_one_per_user")]

    def __str__(self) -> str:
        return f"supporter {self.user_id} of fact {self.fact_id}"


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
