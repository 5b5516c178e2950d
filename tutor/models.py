"""Course content, enrolments and the model-call audit (SPEC §1, §4, §9)."""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from tutor.kernel.jsonfield import CompactJSONField
from tutor.kernel.tags import tags_cleaned, tags_problem, validate_tags


class Course(models.Model):
    # Public ids are UUIDs (SPEC §7): they reveal nothing and cannot be guessed.
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    slug = models.SlugField(max_length=64, unique=True)
    title = models.CharField(max_length=200)
    # SPEC §13: the AI notice must be acknowledged before the first tutor message.
    # db_default: rows written by code that predates the column (an older
    # migration state, a rolling deploy) get False from the database.
    ai_notice_required = models.BooleanField(
        default=False,
        db_default=False,
        help_text="Students must acknowledge the AI notice before they can send the tutor a message.",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["slug"]

    def __str__(self) -> str:
        return self.slug


class Task(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="tasks")
    slug = models.SlugField(max_length=64)
    title = models.CharField(max_length=200)
    goal = models.TextField(blank=True)
    steps = models.JSONField(default=list, blank=True)
    materials = models.TextField(blank=True)
    tags = models.JSONField(default=list, blank=True, validators=[validate_tags])
    position = models.PositiveIntegerField(default=0)
    # The rubric version new review attempts are stamped with; older versions
    # stay in Rubric so earlier attempts keep their meaning (SPEC §1, §3).
    current_rubric = models.ForeignKey(
        "Rubric", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        ordering = ["course_id", "position", "slug"]
        constraints = [models.UniqueConstraint(fields=["course", "slug"], name="task_unique_slug_per_course")]

    def __str__(self) -> str:
        return f"{self.course.slug}/{self.slug}"

    def clean(self) -> None:
        """Tags are stored as the course file stores them (``tutor.kernel.tags``)."""
        if tags_problem(self.tags) is None:
            self.tags = tags_cleaned(self.tags)


class Rubric(models.Model):
    """One version of a task's rubric. Never edited: a change is a new version.

    ``criteria`` is a list of ``{id, kind, text, check}`` validated by
    :func:`tutor.coursefile.validate_criteria`; ``content_hash`` is the
    canonical hash of that list, stamped on every review attempt.
    """

    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="rubrics")
    version = models.CharField(max_length=64)
    criteria = models.JSONField()
    content_hash = models.CharField(max_length=64)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task_id", "created_at", "id"]
        constraints = [
            models.UniqueConstraint(fields=["task", "version"], name="rubric_unique_version_per_task")
        ]

    def __str__(self) -> str:
        return f"{self.task} rubric {self.version}"


class Enrollment(models.Model):
    class Role(models.TextChoices):
        STUDENT = "student"
        STAFF = "staff"
        SERVICE = "service"  # a CI integration submitting on students' behalf

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="enrollments")
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="enrollments")
    role = models.CharField(max_length=16, choices=Role.choices, default=Role.STUDENT)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["course_id", "user_id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "course"], name="enrollment_unique_user_course"),
            models.CheckConstraint(
                condition=Q(role__in=["student", "staff", "service"]), name="enrollment_role_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} in {self.course} as {self.role}"


class ModelCall(models.Model):
    """Audit row of one request to the language model (SPEC §4): what was sent,
    what came back, how long it took. Kept for ``MODEL_CALL_RETENTION_DAYS``."""

    class Purpose(models.TextChoices):
        REVIEW = "review"
        TUTOR = "tutor"
        CLASSIFICATION = "classification"

    class Status(models.TextChoices):
        OK = "ok"
        HTTP_ERROR = "http_error"
        TIMEOUT = "timeout"
        CONNECTION_ERROR = "connection_error"
        BAD_RESPONSE = "bad_response"
        OFFLINE = "offline"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    purpose = models.CharField(max_length=16, choices=Purpose.choices)
    # The course whose review or tutor turn made the call: course staff see
    # their own course's calls in admin (SPEC §8); null for calls of no course.
    course = models.ForeignKey(Course, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    correlation_id = models.CharField(max_length=64, db_index=True)
    # Whose messages or work the call carried (SPEC §13: an erasure or an
    # export finds them); null for calls of no student and for older rows.
    student = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    model = models.CharField(max_length=200)
    request_messages = CompactJSONField()
    response_text = models.TextField(blank=True)
    response_json = CompactJSONField(null=True, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    latency_ms = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        indexes = [
            # admin for course staff: their course's calls, newest first
            models.Index(fields=["course", "-created_at"], name="modelcall_course_time_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.purpose} {self.status} {self.created_at:%Y-%m-%d %H:%M:%S}"


class TutorSession(models.Model):
    """A student's conversation about one task (SPEC §4). At most one open
    session per (student, task); ``new`` archives it and starts another."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    student = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="tutor_sessions"
    )
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="tutor_sessions")
    archived = models.BooleanField(default=False)
    # Set while a reply is being produced: a second message meanwhile is a 409.
    reply_pending_since = models.DateTimeField(null=True, blank=True)
    message_count = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    archived_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["student", "task"], condition=Q(archived=False), name="tutorsession_one_open_per_task"
            )
        ]

    def __str__(self) -> str:
        return f"session {self.pk} ({self.student} on {self.task})"


class TutorMessage(models.Model):
    class Role(models.TextChoices):
        USER = "user"
        ASSISTANT = "assistant"

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    session = models.ForeignKey(TutorSession, on_delete=models.CASCADE, related_name="messages")
    # Order within the session, from the session's counter: never timestamps.
    position = models.PositiveIntegerField()
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField()
    correlation_id = models.CharField(max_length=64, blank=True)
    context_meta = CompactJSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["session_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["session", "position"], name="tutormessage_unique_position"),
            models.CheckConstraint(
                condition=Q(role__in=["user", "assistant"]), name="tutormessage_role_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.role} #{self.position} in {self.session_id}"


class AuditEvent(models.Model):
    """One human decision or lifecycle transition (SPEC §8), written by
    :func:`tutor.audit.audit_record` in the transaction of the change itself,
    so a change and its record commit or roll back together. Never edited."""

    class Event(models.TextChoices):
        # The names of SPEC §8. The column has no ``choices``: an app adding an
        # event adds a name here, never a migration of this table.
        STAFF_VERDICT = "staff_verdict"
        REVIEW_FORCED = "review_forced"
        ENROLLMENT_CHANGED = "enrollment_changed"
        COURSE_IMPORTED = "course_imported"
        RUBRIC_BUMPED = "rubric_bumped"
        CASE_CLAIMED = "case_claimed"
        CASE_ACCEPTED = "case_accepted"
        CASE_REJECTED = "case_rejected"
        CASE_DISPUTED = "case_disputed"
        FACT_CHANGED = "fact_changed"
        MEMORY_FORGOTTEN = "memory_forgotten"
        LESSON_CREATED = "lesson_created"
        LESSON_EDITED = "lesson_edited"
        LESSON_IMPORTED = "lesson_imported"
        LESSON_APPROVED = "lesson_approved"
        LESSON_REJECTED = "lesson_rejected"
        LESSON_INJECTED = "lesson_injected"
        LESSON_QUARANTINED = "lesson_quarantined"
        LESSON_RETIRED = "lesson_retired"
        LESSON_KEPT = "lesson_kept"
        DELTA_APPLIED = "delta_applied"
        SKILL_ACCEPTED = "skill_accepted"
        SKILL_DISMISSED = "skill_dismissed"
        REGRADE_REQUESTED = "regrade_requested"
        REGRADE_SETTLED = "regrade_settled"
        REGRADE_DECLINED = "regrade_declined"
        ATTEMPTS_PURGED = "attempts_purged"
        LTI_REGISTERED = "lti_registered"
        LTI_LAUNCHED = "lti_launched"
        LTI_SCORE_POSTED = "lti_score_posted"
        LTI_ROSTER_SYNCED = "lti_roster_synced"
        LTI_SCORE_FAILED = "lti_score_failed"
        LTI_SCORE_REQUEUED = "lti_score_requeued"
        LTI_KEY_ROTATED = "lti_key_rotated"
        LTI_LAUNCH_REFUSED = "lti_launch_refused"
        LTI_ROSTER_REFUSED = "lti_roster_refused"
        SIGNIN_LOCKED_OUT = "signin_locked_out"

        STUDENT_ERASED = "student_erased"
        ERASURE_RESIDUE = "erasure_residue"
        RETENTION_APPLIED = "retention_applied"

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Who acted, as it read at the time: the username, or "operator" for a
    # management command run from a shell.
    actor_label = models.CharField(max_length=150)
    event = models.CharField(max_length=64)
    # The course the decision belongs to, for staff scoping; null for global rows.
    course = models.ForeignKey(Course, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    target_type = models.ForeignKey(
        "contenttypes.ContentType", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    target_id = models.CharField(max_length=64, blank=True)
    target_repr = models.CharField(max_length=200, blank=True)
    from_state = models.CharField(max_length=64, blank=True)
    to_state = models.CharField(max_length=64, blank=True)
    reason = models.TextField(blank=True)
    correlation_id = models.CharField(max_length=64, blank=True)
    extra = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            # admin: a course's trail, newest first
            models.Index(fields=["course", "-created_at"], name="audit_course_time_idx"),
            # admin filter by event, newest first
            models.Index(fields=["event", "-created_at"], name="audit_event_time_idx"),
            # "the whole history of this object" (facts, cases, lessons, attempts)
            models.Index(fields=["target_type", "target_id"], name="audit_target_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.event} by {self.actor_label} at {self.created_at:%Y-%m-%d %H:%M:%S}"


class ScopeVersion(models.Model):
    """The version of one scope of rows that processes keep snapshots of
    (``tutor.db.snapshots``), such as a course's injected lessons: a random
    number, replaced after each committed change of the scope. Equality is
    all a reader asks of it; a scope without a row has version 0."""

    key = models.CharField(max_length=80, primary_key=True)
    version = models.BigIntegerField()
    changed_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"{self.key}@{self.version}"


class ScopeChange(models.Model):
    """One published change of a scope (``tutor.db.snapshots``): the version
    it wrote and the ids of the rows it changed -- or null, when the writer
    did not say (then a reader loads the scope again). A process holding a
    snapshot applies the rows changed since it read, instead of loading the
    whole scope (SPEC §10). Kept for ``TUTOR_SNAPSHOT_RELOAD_AGE`` and then
    pruned: no snapshot is older."""

    id = models.BigAutoField(primary_key=True)
    key = models.CharField(max_length=80)
    version = models.BigIntegerField()
    rows = models.JSONField(null=True)
    changed_at = models.DateTimeField(db_index=True)

    class Meta:
        indexes = [
            models.Index(fields=["key", "id"], name="scopechange_key_id"),
            models.Index(fields=["key", "version"], name="scopechange_key_version"),
        ]

    def __str__(self) -> str:
        return f"{self.key}@{self.version}"


class NoticeAcknowledgement(models.Model):
    """A student read the AI notice of one course in one version (SPEC §13):
    when, and which text. A new version (another provider or model, a
    changed retention) asks again; the rows of earlier versions stay."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="+")
    version = models.CharField(max_length=64)
    acknowledged_at = models.DateTimeField()

    class Meta:
        ordering = ["-acknowledged_at", "-id"]
        constraints = [
            models.UniqueConstraint(fields=["user", "course", "version"], name="noticeack_once_per_version")
        ]
        indexes = [
            # the tutor turn and /api/me/: a user's newest acknowledgement in a course
            models.Index(fields=["user", "course", "-acknowledged_at"], name="noticeack_latest_idx"),
        ]

    def __str__(self) -> str:
        return f"notice {self.version} acknowledged"


class RetentionKind(models.TextChoices):
    """The kinds of data with a retention period of their own (SPEC §13)."""

    MESSAGES = "messages", "tutor messages"
    MEMORY = "memory", "memory items"
    RECALL_TRACES = "recall_traces", "recall traces"
    MODEL_CALLS = "model_calls", "model-call bodies"
    SUBMISSIONS = "submissions", "submissions and evidence"
    AUDIT = "audit", "audit events"


class RetentionOverride(models.Model):
    """A course's own retention period for one kind of data, in days (0:
    kept); without a row the setting ``RETENTION_<KIND>_DAYS`` applies."""

    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="retention_overrides")
    kind = models.CharField(max_length=32, choices=RetentionKind.choices)
    days = models.PositiveIntegerField(help_text="0 keeps this kind of data of the course")

    class Meta:
        ordering = ["course_id", "kind"]
        constraints = [
            models.UniqueConstraint(fields=["course", "kind"], name="retentionoverride_one_per_kind"),
            models.CheckConstraint(
                condition=Q(
                    kind__in=["messages", "memory", "recall_traces", "model_calls", "submissions", "audit"]
                ),
                name="retentionoverride_kind_valid",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind}: {self.days} days"
