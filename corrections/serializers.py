"""Shapes of the corrections API (SPEC §5, §7)."""

from __future__ import annotations

from django.utils import timezone
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from corrections.models import CaseStatus, Correction, CorrectionCase, CorrectionType, Tier
from tutor.web.fields import MESSAGE_MAX_CHARS, MessageTextField, StrictCharField

REASON_MAX_CHARS = 2000


class CorrectionSerializer(serializers.ModelSerializer):
    message = serializers.UUIDField(source="message_id", read_only=True, allow_null=True)
    session = serializers.UUIDField(source="session_id", read_only=True, allow_null=True)
    course = serializers.UUIDField(source="course_id", read_only=True)
    case = serializers.UUIDField(source="case_id", read_only=True, allow_null=True)
    fact = serializers.UUIDField(source="fact_id", read_only=True, allow_null=True)
    user = serializers.CharField(source="user.username", read_only=True)
    tiers = serializers.ListField(child=serializers.ChoiceField(choices=Tier.choices), read_only=True)

    class Meta:
        model = Correction
        fields = [
            "id",
            "message",
            "session",
            "course",
            "user",
            "source",
            "type",
            "confidence",
            "classifier",
            "topic",
            "original_statement",
            "corrected_statement",
            "content",
            "tiers",
            "case",
            "fact",
            "created_at",
        ]
        read_only_fields = fields


class CorrectionCreateSerializer(serializers.Serializer):
    content = MessageTextField(min_length=1, max_length=MESSAGE_MAX_CHARS)
    session = serializers.UUIDField(required=False, help_text="One of your own tutor sessions.")
    course = serializers.UUIDField(
        required=False,
        help_text="Without a session: the course the correction is about (needed when you are in several).",
    )


class DetectionResultSerializer(serializers.Serializer):
    detected = serializers.BooleanField(help_text="Whether the text is a correction.")
    created = serializers.BooleanField(
        help_text="False when nothing was written, or when it repeats an earlier correction."
    )
    correction = CorrectionSerializer(allow_null=True)


class CorrectionFilterSerializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=CorrectionType.choices, required=False)


class MemoryItemSerializer(serializers.Serializer):
    """One row of ``corrections.selectors.memory_list``."""

    id = serializers.UUIDField(source="item_id")
    tier = serializers.ChoiceField(choices=["session", "user", "system"], source="item_tier")
    kind = serializers.ChoiceField(choices=["fact", "preference", "process", "negative"], source="item_kind")
    content = serializers.CharField(source="item_content")
    created_at = serializers.DateTimeField(source="item_created_at")
    expires_at = serializers.DateTimeField(source="item_expires_at", allow_null=True)

    def to_representation(self, instance):
        data = super().to_representation(instance)
        if data["kind"] == CorrectionType.FACTUAL:
            data["kind"] = "fact"  # SPEC §5 names the kind of a factual item "fact"
        return data


class CaseFactSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    statement = serializers.CharField()
    status = serializers.CharField()
    supporters = serializers.IntegerField(source="supporter_count")
    valid_from = serializers.DateTimeField()
    staff_note = serializers.CharField()


class CaseCorrectionSerializer(serializers.Serializer):
    """A supporter's own words."""

    id = serializers.UUIDField(source="correction_id", allow_null=True)
    user = serializers.CharField(source="user.username")
    content = serializers.SerializerMethodField()
    created_at = serializers.DateTimeField()

    def get_content(self, supporter) -> str:
        return supporter.correction.content if supporter.correction else ""


class ProposalSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    statement = serializers.CharField()
    supporter_count = serializers.IntegerField()
    supporters = serializers.SerializerMethodField()
    corrections = serializers.SerializerMethodField()

    def get_supporters(self, proposal) -> list[str]:
        return [s.user.username for s in proposal.supporters.all()]

    @extend_schema_field(CaseCorrectionSerializer(many=True))
    def get_corrections(self, proposal):
        return CaseCorrectionSerializer(proposal.supporters.all(), many=True).data


class CaseSerializer(serializers.ModelSerializer):
    course = serializers.UUIDField(source="course_id", read_only=True)
    status = serializers.SerializerMethodField()
    active_fact = CaseFactSerializer(allow_null=True, read_only=True)
    proposals = ProposalSerializer(many=True, read_only=True)
    claimed_by = serializers.SerializerMethodField()
    claimed_until = serializers.SerializerMethodField()
    decided_by = serializers.CharField(source="decided_by.username", allow_null=True, read_only=True)
    result_fact = serializers.UUIDField(source="result_fact_id", allow_null=True, read_only=True)

    class Meta:
        model = CorrectionCase
        fields = [
            "id",
            "course",
            "kind",
            "topic",
            "status",
            "active_fact",
            "proposals",
            "claimed_by",
            "claimed_until",
            "decided_by",
            "decided_at",
            "reason",
            "result_fact",
            "created_at",
        ]
        read_only_fields = fields

    def _live_claim(self, case) -> bool:
        return case.status == CaseStatus.CLAIMED and not case.lease_expired(timezone.now())

    @extend_schema_field(serializers.ChoiceField(choices=CaseStatus.choices))
    def get_status(self, case) -> str:
        return case.effective_status(timezone.now())

    def get_claimed_by(self, case) -> str | None:
        return case.claimed_by.username if self._live_claim(case) and case.claimed_by else None

    @extend_schema_field(serializers.DateTimeField(allow_null=True))
    def get_claimed_until(self, case):
        if not self._live_claim(case):
            return None
        return serializers.DateTimeField().to_representation(case.claimed_until)


class ReasonSerializer(serializers.Serializer):
    reason = StrictCharField(min_length=1, max_length=REASON_MAX_CHARS)


class ClaimSerializer(serializers.Serializer):
    """A claim carries nothing: the body is an empty JSON object."""


STAFF_TEXT_MAX_CHARS = 1000  # corrections.services.cases.STAFF_TEXT_MAX_CHARS


class AcceptSerializer(ReasonSerializer):
    proposal = serializers.UUIDField(
        required=False, help_text="The proposal to accept; by default the one with most supporters."
    )
    statement = StrictCharField(
        required=False,
        min_length=1,
        max_length=STAFF_TEXT_MAX_CHARS,
        help_text="Staff's own wording (an edited proposal or the true value): stored as the verified "
        "fact, or the course rule, with the staff member as its author.",
    )


class DisputeSerializer(ReasonSerializer):
    note = StrictCharField(
        required=False,
        min_length=1,
        max_length=STAFF_TEXT_MAX_CHARS,
        help_text="What the tutor is told about the disputed topic, with the statements.",
    )
