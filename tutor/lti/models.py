"""The tool side of LTI 1.3 (SPEC §12): the tool's keys, platform
registrations, who launched what, and the outbox of scores going back.

Rules kept here as constraints:
- one active signing key at a time; retired keys stay published for a grace
  period (``LTI_KEY_GRACE_DAYS``) so tokens signed just before a rotation
  still verify;
- a registration is (issuer, client id) and belongs to one course;
- a person is (issuer, ``sub``): never matched by e-mail;
- a login nonce is accepted once;
- one score row per (attempt, line item): a duplicate delivery of the same
  finished attempt adds nothing.
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from tutor.models import Course, Task


class ToolKey(models.Model):
    """An RSA key pair of the tool. The private half signs the client
    assertions of AGS/NRPS token requests; it is stored here only, never
    shown in admin, printed or logged (``__str__`` names the ``kid``)."""

    class Status(models.TextChoices):
        ACTIVE = "active"  # signs, and is published
        RETIRED = "retired"  # published until its grace period ends

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    kid = models.CharField(max_length=64, unique=True)
    public_pem = models.TextField()
    private_pem = models.TextField(editable=False)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.ACTIVE)
    created_at = models.DateTimeField(auto_now_add=True)
    retired_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["status"], condition=Q(status="active"), name="ltitoolkey_one_active"
            ),
            models.CheckConstraint(
                condition=Q(status__in=["active", "retired"]), name="ltitoolkey_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(status="active") | Q(retired_at__isnull=False), name="ltitoolkey_retired_has_time"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kid} ({self.status})"


class PendingScores(models.TextChoices):
    """What a score with acceptance criteria still NEED_REVIEW posts (SPEC §12;
    the ``LTI_PENDING_SCORES`` setting and ``Registration.pending_scores``)."""

    PENDING_MANUAL = "pending_manual", "PendingManual while staff review is pending"
    FULLY_GRADED_PROVISIONAL = (
        "fully_graded_provisional",
        "FullyGraded now (a lower bound), again after review",
    )
    HOLD = "hold", "nothing until every acceptance criterion is decided"


class Registration(models.Model):
    """A platform (LMS) registered for one course: where its OIDC login,
    token and key-set endpoints are. Launches, rosters and scores go through
    this row; ``active=False`` refuses launches and stops passback."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="lti_registrations")
    issuer = models.CharField(max_length=255)
    client_id = models.CharField(max_length=255)
    auth_url = models.URLField(max_length=500, help_text="the platform's OIDC authorization endpoint")
    token_url = models.URLField(max_length=500, help_text="the platform's OAuth 2 token endpoint")
    jwks_url = models.URLField(max_length=500, help_text="the platform's public key set")
    # Brightspace names an audience of its own for the client assertion of
    # token requests; empty: the token URL is the audience (LTI security 1.0 §4.1.1).
    auth_audience = models.CharField(
        max_length=500,
        blank=True,
        help_text="the `aud` of the tool's token requests when the platform names one (Brightspace's "
        "OAuth2 Audience); empty: the token URL",
    )
    role_map = models.CharField(
        max_length=1000,
        blank=True,
        help_text="LMS roles -> tutor role for this platform, e.g. Instructor=staff;Learner=student "
        "(first match wins); empty: the LTI_ROLE_MAP setting",
    )
    pending_scores = models.CharField(
        max_length=32,
        blank=True,
        choices=PendingScores.choices,
        help_text="what goes to the gradebook while staff review is pending; empty: the "
        "LTI_PENDING_SCORES setting",
    )
    active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["course_id", "issuer", "client_id"]
        constraints = [
            models.UniqueConstraint(fields=["issuer", "client_id"], name="ltiregistration_unique_client"),
        ]

    def __str__(self) -> str:
        return f"{self.issuer} [{self.client_id}]"


class Deployment(models.Model):
    """A deployment id the platform may launch with; any other is refused."""

    registration = models.ForeignKey(Registration, on_delete=models.CASCADE, related_name="deployments")
    deployment_id = models.CharField(max_length=255)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["registration_id", "deployment_id"]
        constraints = [
            models.UniqueConstraint(fields=["registration", "deployment_id"], name="ltideployment_unique_id"),
        ]

    def __str__(self) -> str:
        return self.deployment_id


class LoginNonce(models.Model):
    """The nonce and state of one OIDC login initiation (the browser holds
    the state in a cookie). A launch must echo both, before ``expires_at``,
    and uses the row once: ``used_at`` is set by a conditional UPDATE."""

    nonce = models.CharField(max_length=128, unique=True)
    state = models.CharField(max_length=128)
    registration = models.ForeignKey(Registration, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # the purge of expired rows (tutor.lti.services.launch.login_nonces_purge)
        indexes = [models.Index(fields=["expires_at"], name="ltinonce_expiry_idx")]

    def __str__(self) -> str:
        return f"login nonce ({'used' if self.used_at else 'open'})"


class Identity(models.Model):
    """A person of a platform: (issuer, ``sub``) -> the tutor's user. Name
    and e-mail are as the platform last sent them, for display only."""

    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="lti_identities"
    )
    name = models.CharField(max_length=200, blank=True)
    email = models.CharField(max_length=254, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_seen_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["issuer", "subject"]
        verbose_name_plural = "identities"
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="ltiidentity_unique_issuer_sub"),
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer}"


class Context(models.Model):
    """An LMS course (context) seen in launches, with its roster (NRPS) URL.

    ``bound``: the registration's course takes launches and rosters from
    this LMS course. Once a registration has a bound context, every other
    is refused (SPEC §12: one course per registration); with none bound,
    the deployment ids alone say who may launch."""

    registration = models.ForeignKey(Registration, on_delete=models.CASCADE, related_name="contexts")
    context_id = models.CharField(max_length=255)
    title = models.CharField(max_length=255, blank=True)
    memberships_url = models.URLField(max_length=1000, blank=True)
    # The last roster read whole and applied: a differences-only answer
    # (NRPS 2.0 §2.4.3) is applied only on top of one.
    roster_synced_at = models.DateTimeField(null=True, blank=True)
    bound = models.BooleanField(
        default=False,
        help_text="launches and rosters come from this LMS course; once one context of the "
        "registration is bound, every other is refused",
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["registration_id", "context_id"]
        constraints = [
            models.UniqueConstraint(fields=["registration", "context_id"], name="lticontext_unique_id"),
        ]

    def __str__(self) -> str:
        return self.title or self.context_id


class ResourceLink(models.Model):
    """An assignment link in the LMS, pointing at one task (custom parameter
    ``task``). ``lineitem_url`` is the AGS line item its scores go to; empty
    when the platform granted no score scope."""

    registration = models.ForeignKey(Registration, on_delete=models.CASCADE, related_name="resource_links")
    context = models.ForeignKey(
        Context, null=True, blank=True, on_delete=models.SET_NULL, related_name="resource_links"
    )
    resource_link_id = models.CharField(max_length=255)
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="lti_links")
    title = models.CharField(max_length=255, blank=True)
    lineitem_url = models.URLField(max_length=1000, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["registration_id", "resource_link_id"]
        constraints = [
            models.UniqueConstraint(
                fields=["registration", "resource_link_id"], name="ltiresourcelink_unique_id"
            ),
        ]

    def __str__(self) -> str:
        return self.title or self.resource_link_id


class LinkMember(models.Model):
    """Someone who launched a resource link: a student's scores for the
    link's task go to that link's line item (SPEC §12)."""

    link = models.ForeignKey(ResourceLink, on_delete=models.CASCADE, related_name="members")
    identity = models.ForeignKey(Identity, on_delete=models.CASCADE, related_name="links")
    role = models.CharField(max_length=16)
    launch_count = models.PositiveIntegerField(default=0)
    first_launch_at = models.DateTimeField(auto_now_add=True)
    last_launch_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["link_id", "identity_id"]
        constraints = [
            models.UniqueConstraint(fields=["link", "identity"], name="ltilinkmember_unique"),
        ]

    def __str__(self) -> str:
        return f"{self.identity} on {self.link}"


class ScoreStatus(models.TextChoices):
    QUEUED = "queued"  # waiting for a post (first or a retry after next_try_at)
    POSTING = "posting"  # claimed by a worker
    POSTED = "posted"  # the platform accepted it: terminal
    FAILED = "failed"  # refused by the platform or out of tries: terminal
    SUPERSEDED = "superseded"  # a later score for the same line item and user replaced it unposted


class ScorePost(models.Model):
    """One score for one line item and user: the outbox row (SPEC §2's
    pattern). Only the worker holding ``claim`` posts it, so a duplicate
    task delivery posts nothing; the sweep re-dispatches rows the broker
    lost and returns rows of dead workers."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    link = models.ForeignKey(ResourceLink, on_delete=models.CASCADE, related_name="scores")
    identity = models.ForeignKey(Identity, on_delete=models.CASCADE, related_name="scores")
    # SET_NULL: an audited attempt purge may delete the attempt; the copy of its
    # seq keeps the row readable.
    attempt = models.ForeignKey(
        "feedback.ReviewAttempt", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    attempt_seq = models.BigIntegerField()
    # The AGS timestamp of this document, fixed when the row is queued (or
    # sent again by staff) and strictly increasing per (line item, user): a
    # retry re-sends the same document, a platform keeping the newest
    # timestamp keeps the newest score.
    scored_at = models.DateTimeField()
    score_given = models.PositiveIntegerField()
    score_maximum = models.PositiveIntegerField()
    activity_progress = models.CharField(max_length=32)
    grading_progress = models.CharField(max_length=32)
    comment = models.CharField(max_length=500, blank=True)  # shown in the gradebook
    status = models.CharField(max_length=16, choices=ScoreStatus.choices, default=ScoreStatus.QUEUED)
    tries = models.PositiveSmallIntegerField(default=0)
    claim = models.UUIDField(null=True, blank=True)
    claimed_at = models.DateTimeField(null=True, blank=True)
    next_try_at = models.DateTimeField()
    dispatched_at = models.DateTimeField(null=True, blank=True)
    posted_at = models.DateTimeField(null=True, blank=True)
    last_http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    last_answer = models.TextField(blank=True)
    # Posted, known from the platform refusing a retry as "already stored"
    # (its earlier try arrived, the answer did not).
    confirmed_by_refusal = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(fields=["attempt", "link"], name="ltiscorepost_one_per_attempt_link"),
            models.CheckConstraint(
                condition=Q(status__in=[s.value for s in ScoreStatus]), name="ltiscorepost_status_valid"
            ),
            models.CheckConstraint(
                condition=Q(score_maximum__gt=0) & Q(score_given__lte=models.F("score_maximum")),
                name="ltiscorepost_score_in_range",
            ),
        ]
        indexes = [
            # the sweep's two work queues (tutor.lti.services.scores.scores_sweep)
            models.Index(fields=["next_try_at"], condition=Q(status="queued"), name="ltiscore_queued_idx"),
            models.Index(fields=["claimed_at"], condition=Q(status="posting"), name="ltiscore_posting_idx"),
            # superseding the queued rows of one (line item, user)
            models.Index(fields=["link", "identity", "status"], name="ltiscore_link_user_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.score_given}/{self.score_maximum} for attempt #{self.attempt_seq} ({self.status})"
