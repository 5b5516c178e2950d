"""System facts, their token and key indexes, task overlaps and supporters (SPEC §5; seed 002 §2.1)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from corrections.models.common import TopicMixin
from tutor.models import Course, Task


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
