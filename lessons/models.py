"""Lessons (playbook bullets), their recall traces and usage (SPEC §6; seeds 003, 004).

A lesson is knowledge a course keeps from a verified fix: captured as a
``pending`` draft, redacted before it is stored, and injected into tutor
contexts only after a human approved it. Its ``helpful``/``harmful`` counters
move only by deterministic deltas backed by an external signal (seed 004).
"""

from __future__ import annotations

import uuid

from django.conf import settings
from django.db import models
from django.db.models import Q

from feedback.models import ReviewAttempt, Submission
from tutor.kernel import tags as task_tags
from tutor.kernel.jsonfield import CompactJSONField
from tutor.models import Course, Task, TutorSession

# SPEC §6: at most three ``add`` deltas per signal attempt, across requests.
# A database rule (``lesson_delta_slot_range``), so it is a constant, not a setting.
DELTA_MAX_ADDS = 3

TITLE_MAX_CHARS = 200
BODY_MAX_CHARS = 4000
# A lesson's tags come from a task's (capture): one limit for both.
TAG_MAX_CHARS = task_tags.TAG_MAX_CHARS
MAX_TAGS = task_tags.MAX_TAGS
SYMPTOM_MAX_CHARS = 200
MAX_SYMPTOMS = 20


class LessonStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"
    INJECTED = "injected"
    QUARANTINED = "quarantined"
    RETIRED = "retired"
    REJECTED = "rejected"


class LessonKind(models.TextChoices):
    STRATEGY = "strategy"  # what worked (a passing signal)
    GUARDRAIL = "guardrail"  # what to avoid (a failing check or CI)
    NOTE = "note"  # staff knowledge without a signal


class LessonSource(models.TextChoices):
    REVIEW = "review"  # captured from a fixed criterion (a FAIL, then a PASS)
    MANUAL = "manual"  # entered by staff in the API or admin
    DELTA = "delta"  # an ``add`` playbook delta
    IMPORT = "import"  # ``manage.py import_lessons``


class RejectReason(models.TextChoices):
    """The template list of SPEC §6 (seed 003: rejection has reason templates)."""

    NOT_REPRODUCIBLE = "not_reproducible"
    SENSITIVE_DATA = "sensitive_data"
    INFRASTRUCTURE_NOISE = "infrastructure_noise"
    DUPLICATE = "duplicate"
    TOO_SPECIFIC = "too_specific"
    OTHER = "other"  # needs a free-text note


class Lesson(models.Model):
    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # Null: a global lesson, a candidate in every course (managed by superusers).
    course = models.ForeignKey(
        Course, null=True, blank=True, on_delete=models.CASCADE, related_name="lessons"
    )
    title = models.CharField(max_length=TITLE_MAX_CHARS)
    body = models.TextField()
    tags = models.JSONField(default=list, blank=True)
    symptoms = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=16, choices=LessonStatus.choices, default=LessonStatus.PENDING)
    kind = models.CharField(max_length=16, choices=LessonKind.choices, default=LessonKind.NOTE)
    hit_count = models.PositiveIntegerField(default=0)
    last_hit = models.DateField(null=True, blank=True)
    review_by = models.DateField()
    # Estimated from the text as the tutor prompt renders it (lessons.text),
    # or kept as an imported library gave it.
    tokens = models.PositiveIntegerField()
    helpful = models.PositiveIntegerField(default=0)
    harmful = models.PositiveIntegerField(default=0)
    # A superuser kept this global lesson injected at this many harmful marks
    # (``lesson_keep``): the queue of held global lessons lists it again only
    # once it has more.
    harmful_kept = models.PositiveIntegerField(default=0)

    source = models.CharField(max_length=16, choices=LessonSource.choices)
    # The attempt behind the lesson: the passing review of a capture, or a
    # delta's signal attempt.
    source_attempt = models.ForeignKey(
        ReviewAttempt, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    # Capture: the submission that fixed the criterion, and the criterion.
    source_submission = models.ForeignKey(
        Submission, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    source_rubric_id = models.CharField(max_length=64, blank=True)
    # ``add`` deltas: the 1st, 2nd or 3rd add of its signal attempt.
    delta_slot = models.PositiveSmallIntegerField(null=True, blank=True)

    # How many secrets and personal data were replaced before storage, and of what kinds.
    redactions = models.PositiveIntegerField(default=0)
    redaction_kinds = models.JSONField(default=dict, blank=True)
    reject_reason = models.CharField(max_length=32, choices=RejectReason.choices, blank=True)
    reject_note = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    # The latest move to ``injected``: the decay's reference before a first hit.
    injected_at = models.DateTimeField(null=True, blank=True)
    # Word and CJK-bigram shingles of title and body, for the near-duplicate
    # check of ``add`` deltas (token Jaccard); their count bounds the search.
    shingles = models.JSONField(default=list, blank=True)
    shingle_count = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at", "id"]
        indexes = [
            # recall: the per-decision counts of a course's lessons (lessons.selectors)
            models.Index(fields=["course", "status", "review_by"], name="lesson_scope_status_idx"),
            # a recall trace's floor lines: the scope's first injected lessons by id (lessons.selectors)
            models.Index(fields=["course", "status", "id"], name="lesson_scope_id_idx"),
            # admin and API queues: pending / quarantined, oldest first
            models.Index(fields=["status", "created_at"], name="lesson_queue_idx"),
            # near-duplicate check: lessons whose shingle count allows Jaccard >= 0.8, then
            # their course (not leading: the recall counts must take lesson_scope_status_idx)
            models.Index(fields=["shingle_count", "course"], name="lesson_duplicate_idx"),
        ]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=LessonStatus.values), name="lesson_status_valid"),
            models.CheckConstraint(condition=Q(kind__in=LessonKind.values), name="lesson_kind_valid"),
            models.CheckConstraint(condition=Q(source__in=LessonSource.values), name="lesson_source_valid"),
            models.CheckConstraint(
                condition=Q(reject_reason="") | Q(reject_reason__in=RejectReason.values),
                name="lesson_reject_reason_valid",
            ),
            models.CheckConstraint(
                condition=~Q(status=LessonStatus.REJECTED) | ~Q(reject_reason=""),
                name="lesson_rejected_has_reason",
            ),
            models.CheckConstraint(
                condition=~Q(reject_reason=RejectReason.OTHER) | ~Q(reject_note=""),
                name="lesson_other_reason_has_note",
            ),
            models.CheckConstraint(
                condition=~Q(status=LessonStatus.INJECTED) | Q(injected_at__isnull=False),
                name="lesson_injected_has_time",
            ),
            # Capture happens once per fixed criterion of a fixing submission,
            # whatever the number of deliveries or re-reviews (SPEC §6 capture).
            models.UniqueConstraint(
                fields=["source_submission", "source_rubric_id"],
                condition=Q(source=LessonSource.REVIEW),
                name="lesson_one_draft_per_fixed_criterion",
            ),
            # At most DELTA_MAX_ADDS adds per signal attempt, across requests.
            models.UniqueConstraint(
                fields=["source_attempt", "delta_slot"],
                condition=Q(source=LessonSource.DELTA),
                name="lesson_delta_slot_unique",
            ),
            models.CheckConstraint(
                condition=Q(delta_slot__isnull=True) | Q(delta_slot__gte=1, delta_slot__lte=DELTA_MAX_ADDS),
                name="lesson_delta_slot_range",
            ),
        ]

    def __str__(self) -> str:
        return self.title[:80]


class LessonRevision(models.Model):
    """One version of a draft's text (SPEC §6: staff may edit a pending
    draft; the captured text is kept). Number 1 is the text as it was
    captured or entered, written by the first edit; each staff edit adds
    the next. The lesson row holds the newest: what recall uses."""

    lesson = models.ForeignKey(Lesson, on_delete=models.CASCADE, related_name="revisions")
    number = models.PositiveSmallIntegerField()
    title = models.CharField(max_length=TITLE_MAX_CHARS)
    body = models.TextField()
    tags = models.JSONField(default=list, blank=True)
    symptoms = models.JSONField(default=list, blank=True)
    redactions = models.PositiveIntegerField(default=0)
    redaction_kinds = models.JSONField(default=dict, blank=True)
    # Null: the capture, a command, or a person since erased.
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    note = models.TextField(blank=True)  # why staff edited it (redacted)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["lesson", "number"]
        constraints = [
            # Two edits at once: the second one's number is taken, it fails whole.
            models.UniqueConstraint(fields=["lesson", "number"], name="lessonrevision_number_unique"),
            models.CheckConstraint(condition=Q(number__gte=1), name="lessonrevision_number_from_one"),
        ]

    def __str__(self) -> str:
        return f"{self.lesson_id} revision {self.number}"


class LessonKey(models.Model):
    """One normalized tag, pair of tags or symptom of a lesson: what makes
    recall one indexed query (``lessons.selectors``). Written with the
    lesson, never changed (no delta rewrites content).

    A tag pair (two of the lesson's tags, in order, joined by
    ``lessons.text.BOUNDARY``) lets recall find the lessons sharing at least
    two of a task's tags without reading every lesson that shares one: with
    three or more task tags a single tag cannot reach the floor alone."""

    class Kind(models.TextChoices):
        TAG = "tag"
        SYMPTOM = "symptom"
        TAG_PAIR = "tag_pair"

    lesson = models.ForeignKey(Lesson, on_delete=models.CASCADE, related_name="keys")
    # The lesson's course, repeated so the key lookup is scoped without a join.
    course = models.ForeignKey(Course, null=True, blank=True, on_delete=models.CASCADE, related_name="+")
    kind = models.CharField(max_length=8, choices=Kind.choices)
    # A tag pair holds two values and the separator.
    value = models.CharField(max_length=2 * SYMPTOM_MAX_CHARS + 1)
    # Symptoms: the token a text must contain for the phrase to occur in it
    # (its longest word, or its first CJK character) ...
    anchor = models.CharField(max_length=SYMPTOM_MAX_CHARS, blank=True)
    # ... and the phrase with its word edges marked (lessons.text.marked): it
    # occurs in a text exactly when it is a substring of the marked text.
    marked = models.CharField(max_length=3 * SYMPTOM_MAX_CHARS, blank=True)

    class Meta:
        indexes = [
            # recall: kind = 'tag' or 'tag_pair' (or explicit symptoms) AND value IN (…) AND course, grouped
            # by lesson -- covering, so a common tag's many rows are read from the index alone
            models.Index(fields=["kind", "value", "course", "lesson"], name="lessonkey_value_idx"),
            # recall from a text: kind = 'symptom' AND anchor IN (the text's tokens) AND course
            models.Index(fields=["kind", "anchor", "course"], name="lessonkey_anchor_idx"),
        ]
        constraints = [
            models.UniqueConstraint(fields=["lesson", "kind", "value"], name="lessonkey_unique"),
            models.CheckConstraint(
                condition=Q(kind__in=["tag", "symptom", "tag_pair"]), name="lessonkey_kind_valid"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.kind}:{self.value}"


class RecallTrace(models.Model):
    """Why each lesson was or was not recalled into one real tutor request
    (SPEC §6): staff data, never shown to students."""

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    correlation_id = models.CharField(max_length=64, db_index=True)
    course = models.ForeignKey(Course, on_delete=models.CASCADE, related_name="+")
    student = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    task = models.ForeignKey(Task, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(
        TutorSession, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    context = CompactJSONField()  # {tags, symptoms}
    params = CompactJSONField()  # the weights and brakes in force
    lines = CompactJSONField()  # at most LESSON_TRACE_MAX_LINES
    counts = CompactJSONField()  # every lesson's decision, listed or not
    omitted = CompactJSONField()  # per decision, the lessons not listed in ``lines``
    used_tokens = models.PositiveIntegerField()
    budget_tokens = models.PositiveIntegerField()
    recalled = models.ManyToManyField(Lesson, through="RecalledLesson", related_name="recall_traces")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "id"]
        indexes = [
            # admin and API: a course's traces, newest first
            models.Index(fields=["course", "-created_at"], name="recalltrace_course_idx"),
            # deltas: was this lesson recalled for this student and task?
            models.Index(fields=["student", "task"], name="recalltrace_student_task_idx"),
        ]

    def __str__(self) -> str:
        return f"recall {self.correlation_id}"


class RecalledLesson(models.Model):
    trace = models.ForeignKey(RecallTrace, on_delete=models.CASCADE, related_name="+")
    lesson = models.ForeignKey(Lesson, on_delete=models.CASCADE, related_name="+")
    rank = models.PositiveSmallIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["trace", "lesson"], name="recalledlesson_unique")]
        # deltas: the traces that recalled a lesson
        indexes = [models.Index(fields=["lesson", "trace"], name="recalledlesson_lesson_idx")]

    def __str__(self) -> str:
        return f"#{self.rank} of {self.trace_id}"


class LessonHit(models.Model):
    """A real use of a lesson, counted at most once per (lesson, session) (SPEC §6 promotion)."""

    lesson = models.ForeignKey(Lesson, on_delete=models.CASCADE, related_name="+")
    session = models.ForeignKey(TutorSession, on_delete=models.CASCADE, related_name="+")
    trace = models.ForeignKey(RecallTrace, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["lesson", "session"], name="lessonhit_once_per_session")
        ]

    def __str__(self) -> str:
        return f"{self.lesson_id} in session {self.session_id}"


class SkillCandidateStatus(models.TextChoices):
    OPEN = "open"
    ACCEPTED = "accepted"
    DISMISSED = "dismissed"


class SkillCandidate(models.Model):
    """A lesson used often enough to be reviewed as a skill (seed 003 step 3)."""

    Status = SkillCandidateStatus

    id = models.UUIDField(primary_key=True, default=uuid.uuid4, editable=False)
    # One per lesson, ever: promotion happens once.
    lesson = models.OneToOneField(Lesson, on_delete=models.CASCADE, related_name="skill_candidate")
    hit_count = models.PositiveIntegerField()  # when it was promoted
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.OPEN)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(status__in=["open", "accepted", "dismissed"]), name="skillcandidate_status_valid"
            )
        ]

    def __str__(self) -> str:
        return f"skill candidate: {self.lesson}"


class DeltaBump(models.Model):
    """A ``helpful``/``harmful`` delta applied: one per (signal attempt, lesson) (SPEC §6)."""

    class Op(models.TextChoices):
        HELPFUL = "helpful"
        HARMFUL = "harmful"

    signal_attempt = models.ForeignKey(ReviewAttempt, on_delete=models.CASCADE, related_name="+")
    lesson = models.ForeignKey(Lesson, on_delete=models.CASCADE, related_name="+")
    op = models.CharField(max_length=8, choices=Op.choices)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["signal_attempt", "lesson"], name="deltabump_once_per_signal"),
            models.CheckConstraint(condition=Q(op__in=["helpful", "harmful"]), name="deltabump_op_valid"),
        ]

    def __str__(self) -> str:
        return f"{self.op} {self.lesson_id} by {self.signal_attempt_id}"
