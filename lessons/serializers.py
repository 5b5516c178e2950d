"""Shapes of the lessons API (SPEC §6, §7)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from lessons.models import (
    BODY_MAX_CHARS,
    MAX_SYMPTOMS,
    MAX_TAGS,
    SYMPTOM_MAX_CHARS,
    TAG_MAX_CHARS,
    TITLE_MAX_CHARS,
    Lesson,
    LessonKind,
    LessonRevision,
    RecallTrace,
    RejectReason,
    SkillCandidate,
)
from lessons.recall import Decision
from lessons.services.deltas import DELTAS_MAX_PER_REQUEST
from tutor.web.fields import StrictCharField

NOTE_MAX_CHARS = 2000


class LessonSerializer(serializers.ModelSerializer):
    course = serializers.UUIDField(source="course_id", read_only=True, allow_null=True)
    course_slug = serializers.SerializerMethodField()
    tags = serializers.ListField(child=serializers.CharField(), read_only=True)
    symptoms = serializers.ListField(child=serializers.CharField(), read_only=True)
    redaction_kinds = serializers.DictField(child=serializers.IntegerField(), read_only=True)
    source_attempt = serializers.UUIDField(source="source_attempt_id", read_only=True, allow_null=True)

    class Meta:
        model = Lesson
        fields = [
            "id",
            "title",
            "body",
            "tags",
            "symptoms",
            "status",
            "kind",
            "course",
            "course_slug",
            "hit_count",
            "last_hit",
            "review_by",
            "tokens",
            "helpful",
            "harmful",
            "redactions",
            "redaction_kinds",
            "source",
            "source_attempt",
            "source_rubric_id",
            "reject_reason",
            "reject_note",
            "created_at",
            "injected_at",
        ]
        read_only_fields = fields

    def get_course_slug(self, lesson: Lesson) -> str | None:
        return lesson.course.slug if lesson.course_id else None


class LessonCreateSerializer(serializers.Serializer):
    """Staff's manual entry; ``course`` is a slug or an id, null for a global lesson."""

    course = StrictCharField(allow_null=True, max_length=64)
    title = StrictCharField(max_length=TITLE_MAX_CHARS)
    body = StrictCharField(max_length=BODY_MAX_CHARS)
    tags = serializers.ListField(
        child=StrictCharField(max_length=TAG_MAX_CHARS),
        max_length=MAX_TAGS,
        required=False,
        default=list,
    )
    symptoms = serializers.ListField(
        child=StrictCharField(max_length=SYMPTOM_MAX_CHARS),
        max_length=MAX_SYMPTOMS,
        required=False,
        default=list,
    )
    kind = serializers.ChoiceField(choices=LessonKind.choices, default=LessonKind.NOTE)
    review_by = serializers.DateField(required=False, allow_null=True)


class LessonEditSerializer(serializers.Serializer):
    """A staff edit of a pending draft: the fields given replace the draft's
    (the others stay as they are); ``note`` says why, for the audit trail."""

    title = StrictCharField(required=False, max_length=TITLE_MAX_CHARS)
    body = StrictCharField(required=False, max_length=BODY_MAX_CHARS)
    tags = serializers.ListField(
        child=StrictCharField(max_length=TAG_MAX_CHARS), max_length=MAX_TAGS, required=False
    )
    symptoms = serializers.ListField(
        child=StrictCharField(max_length=SYMPTOM_MAX_CHARS), max_length=MAX_SYMPTOMS, required=False
    )
    note = StrictCharField(required=False, allow_blank=True, default="", max_length=NOTE_MAX_CHARS)


class LessonRevisionSerializer(serializers.ModelSerializer):
    tags = serializers.ListField(child=serializers.CharField(), read_only=True)
    symptoms = serializers.ListField(child=serializers.CharField(), read_only=True)
    redaction_kinds = serializers.DictField(child=serializers.IntegerField(), read_only=True)
    author = serializers.SerializerMethodField(
        help_text="the staff member's username; null: capture or entry"
    )

    class Meta:
        model = LessonRevision
        fields = [
            "number",
            "title",
            "body",
            "tags",
            "symptoms",
            "redactions",
            "redaction_kinds",
            "author",
            "note",
            "created_at",
        ]
        read_only_fields = fields

    def get_author(self, revision: LessonRevision) -> str | None:
        return revision.author.username if revision.author_id else None


class RejectSerializer(serializers.Serializer):
    reason = serializers.ChoiceField(choices=RejectReason.choices)
    note = StrictCharField(required=False, allow_blank=True, default="", max_length=NOTE_MAX_CHARS)


class InjectSerializer(serializers.Serializer):
    review_by = serializers.DateField(
        required=False,
        allow_null=True,
        help_text="a new review date (required when the lesson's review_by has passed)",
    )


class LessonReasonSerializer(serializers.Serializer):
    reason = StrictCharField(required=False, allow_blank=True, default="", max_length=NOTE_MAX_CHARS)


# --- recall --------------------------------------------------------------------------


class RecallQuerySerializer(serializers.Serializer):
    tags = serializers.CharField(required=False, allow_blank=True, default="", max_length=2000)
    symptoms = serializers.CharField(required=False, allow_blank=True, default="", max_length=4000)
    course = serializers.CharField(required=False, max_length=64)

    @staticmethod
    def split(value: str) -> list[str]:
        return [part.strip() for part in value.split(",") if part.strip()]


class ComponentsSerializer(serializers.Serializer):
    tag = serializers.FloatField()
    symptom = serializers.FloatField()
    decay = serializers.FloatField()


class RecalledSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    title = serializers.CharField()
    score = serializers.FloatField()
    components = ComponentsSerializer()
    tokens = serializers.IntegerField()


class TraceLineSerializer(serializers.Serializer):
    lesson = serializers.UUIDField()
    title = serializers.CharField()
    decision = serializers.ChoiceField(choices=Decision.choices)
    score = serializers.FloatField(allow_null=True)
    components = ComponentsSerializer(allow_null=True)
    tokens = serializers.IntegerField()


class RecallContextSerializer(serializers.Serializer):
    tags = serializers.ListField(child=serializers.CharField())
    symptoms = serializers.ListField(child=serializers.CharField())
    today = serializers.DateField()


class RecallResponseSerializer(serializers.Serializer):
    recalled = RecalledSerializer(many=True)
    used_tokens = serializers.IntegerField()
    budget_tokens = serializers.IntegerField()
    trace = TraceLineSerializer(many=True)
    trace_counts = serializers.DictField(
        child=serializers.IntegerField(), help_text="every lesson's decision"
    )
    trace_omitted = serializers.DictField(
        child=serializers.IntegerField(), help_text="per decision, the lessons not listed in trace"
    )
    context = RecallContextSerializer()


# --- deltas --------------------------------------------------------------------------


class DeltaSerializer(serializers.Serializer):
    """``{op: add, title, body, tags, symptoms}`` or ``{op: helpful|harmful, lesson}``."""

    op = serializers.ChoiceField(choices=["add", "helpful", "harmful"])
    title = StrictCharField(required=False, max_length=TITLE_MAX_CHARS)
    body = StrictCharField(required=False, max_length=BODY_MAX_CHARS)
    tags = serializers.ListField(child=StrictCharField(max_length=TAG_MAX_CHARS), required=False)
    symptoms = serializers.ListField(child=StrictCharField(max_length=SYMPTOM_MAX_CHARS), required=False)
    lesson = serializers.UUIDField(required=False)


class DeltaRequestSerializer(serializers.Serializer):
    signal_attempt = serializers.UUIDField()
    deltas = DeltaSerializer(many=True, allow_empty=False, max_length=DELTAS_MAX_PER_REQUEST)


class DeltaAppliedSerializer(serializers.Serializer):
    index = serializers.IntegerField()
    op = serializers.CharField()
    lesson = serializers.UUIDField(allow_null=True)
    duplicate_of = serializers.UUIDField(allow_null=True)


class DeltaResultSerializer(serializers.Serializer):
    signal_attempt = serializers.UUIDField()
    applied = DeltaAppliedSerializer(many=True)


# --- skill candidates and traces --------------------------------------------------------


class LessonRefSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    title = serializers.CharField()


class SkillCandidateSerializer(serializers.ModelSerializer):
    lesson = LessonRefSerializer(read_only=True)

    class Meta:
        model = SkillCandidate
        fields = ["id", "lesson", "hit_count", "status", "created_at"]
        read_only_fields = fields


class RecallTraceSerializer(serializers.ModelSerializer):
    course = serializers.UUIDField(source="course_id", read_only=True)
    task = serializers.UUIDField(source="task_id", read_only=True)
    session = serializers.UUIDField(source="session_id", read_only=True, allow_null=True)
    student = serializers.CharField(source="student.username", read_only=True)
    context = RecallContextSerializer(read_only=True)
    lines = TraceLineSerializer(many=True, read_only=True)
    counts = serializers.DictField(child=serializers.IntegerField(), read_only=True)
    omitted = serializers.DictField(child=serializers.IntegerField(), read_only=True)
    recalled = serializers.SerializerMethodField()

    class Meta:
        model = RecallTrace
        fields = [
            "id",
            "correlation_id",
            "course",
            "task",
            "session",
            "student",
            "context",
            "params",
            "lines",
            "counts",
            "omitted",
            "recalled",
            "used_tokens",
            "budget_tokens",
            "created_at",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.ListField(child=serializers.UUIDField()))
    def get_recalled(self, trace: RecallTrace) -> list[str]:
        return [line["lesson"] for line in trace.lines if line["decision"] == Decision.RECALLED]
