from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from corrections.selectors import OUTCOME_STATUSES
from feedback.models import AttemptStatus
from feedback.results import Basis
from feedback.selectors import FeedbackState, InvalidReason
from tutor.chat.loop import message_texts
from tutor.kernel.rubrics import Verdict
from tutor.models import TutorMessage, TutorSession
from tutor.web.fields import MESSAGE_MAX_CHARS, MessageTextField, SharedFieldsSerializer, StrictCharField


class SessionSerializer(serializers.ModelSerializer):
    task = serializers.UUIDField(source="task_id", read_only=True)

    class Meta:
        model = TutorSession
        fields = ["id", "task", "created_at", "archived"]
        read_only_fields = fields


class SessionOpenSerializer(serializers.Serializer):
    task = serializers.UUIDField()
    new = serializers.BooleanField(default=False)


# A stored message, as a tutor turn answers it. Its fields are declared rather
# than read off the model: a ModelSerializer builds them again for each
# instance, and a turn serializes two (0.23 against 0.12 ms).
class MessageSerializer(SharedFieldsSerializer):
    id = serializers.UUIDField(read_only=True)
    role = serializers.ChoiceField(choices=TutorMessage.Role.choices, read_only=True)
    content = serializers.CharField(read_only=True)
    created_at = serializers.DateTimeField(read_only=True)
    # SPEC §4: an assistant message carries the context_meta of the request
    # that produced it (what the tutor was given); null for user messages.
    context_meta = serializers.JSONField(read_only=True, allow_null=True)


class MessageCreateSerializer(SharedFieldsSerializer):
    content = MessageTextField(min_length=1, max_length=MESSAGE_MAX_CHARS)


class ContextQuerySerializer(SharedFieldsSerializer):
    task = serializers.UUIDField()
    message = serializers.CharField(
        required=False, min_length=1, max_length=MESSAGE_MAX_CHARS, trim_whitespace=False
    )


class ContextBodySerializer(SharedFieldsSerializer):
    """``POST /api/tutor/context/``: the preview with the draft in the body
    (a long draft does not fit a URL, and a URL lands in access logs)."""

    task = serializers.UUIDField()
    message = StrictCharField(
        required=False, allow_null=True, allow_blank=True, max_length=MESSAGE_MAX_CHARS, trim_whitespace=False
    )


class ChatMessageSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=["system", "user", "assistant"])
    content = serializers.CharField()


# --- output shapes of the context (SPEC §3, §4); they type the OpenAPI document ---


class ContextMetaSerializer(serializers.Serializer):
    """``context_meta``: every key always present; providers of other apps add
    their ids keys (``lesson_ids``, ``fact_ids``, …) and omitted counts."""

    correlation_id = serializers.CharField()
    feedback_state = serializers.ChoiceField(choices=FeedbackState.choices)
    feedback_rubric_ids = serializers.ListField(child=serializers.CharField())
    lesson_ids = serializers.ListField(child=serializers.JSONField())
    fact_ids = serializers.ListField(child=serializers.JSONField())
    preference_ids = serializers.ListField(child=serializers.JSONField())
    memory_ids = serializers.ListField(child=serializers.JSONField())
    process_rule_ids = serializers.ListField(child=serializers.JSONField())
    omitted = serializers.DictField(child=serializers.IntegerField())
    sections = serializers.DictField(child=serializers.DictField())
    system_chars = serializers.IntegerField()


# Keys a stored context_meta may lack: it was written before the section that
# adds them existed. The history shows them empty, as SPEC §4's "every key" wants.
META_ID_KEYS = (
    "feedback_rubric_ids",
    "lesson_ids",
    "fact_ids",
    "preference_ids",
    "memory_ids",
    "process_rule_ids",
)


class CorrectionOutcomeSerializer(serializers.Serializer):
    """What became of a user message read as a correction (issue 36 item 5;
    ``corrections.selectors.correction_outcomes``): ``status`` (``pending``
    until detection has run), the correction's ``type``, the widest ``tier``
    it reached and every tier written, and the statement recorded."""

    status = serializers.ChoiceField(choices=OUTCOME_STATUSES)
    type = serializers.ChoiceField(choices=["factual", "preference", "process", "negative"], allow_null=True)
    tier = serializers.ChoiceField(choices=["session", "user", "system"], allow_null=True)
    tiers = serializers.ListField(child=serializers.CharField())
    statement = serializers.CharField(allow_blank=True)


CONTEXT_TEXTS_HELP = (
    "The text behind each id of context_meta the student may read: their own preferences and "
    "memories, the course facts and process rules they were given. A forgotten item is absent."
)


class HistoryMessageSerializer(MessageSerializer):
    """A message of the history: an assistant message carries the
    ``context_meta`` of the request that produced it (SPEC §4) and the texts
    behind its ids, a user message null; a user message read as a correction
    carries its outcome. A meta stored by an earlier release is shown as it
    was stored, with the id lists it lacks empty -- never refused. The view
    reads the outcomes and texts of a page at once (``tutor.chat.loop``)."""

    context_meta = serializers.SerializerMethodField()
    context_texts = serializers.SerializerMethodField(help_text=CONTEXT_TEXTS_HELP)
    correction = serializers.SerializerMethodField()

    @extend_schema_field(ContextMetaSerializer(allow_null=True))
    def get_context_meta(self, message: TutorMessage):
        meta = message.context_meta
        if not isinstance(meta, dict):
            return None
        return {**{key: [] for key in META_ID_KEYS}, "omitted": {}, **meta}

    @extend_schema_field(serializers.DictField(child=serializers.CharField(), allow_null=True))
    def get_context_texts(self, message: TutorMessage):
        if message.role != TutorMessage.Role.ASSISTANT:
            return None
        return message_texts(message.context_meta, self.context.get("context_texts", {}))

    @extend_schema_field(CorrectionOutcomeSerializer(allow_null=True))
    def get_correction(self, message: TutorMessage):
        return self.context.get("corrections", {}).get(message.pk)


class ExchangeSerializer(serializers.Serializer):
    user_message = MessageSerializer()
    reply = MessageSerializer()
    context_meta = ContextMetaSerializer()
    context_texts = serializers.DictField(child=serializers.CharField(), help_text=CONTEXT_TEXTS_HELP)
    correction = CorrectionOutcomeSerializer(
        allow_null=True,
        help_text="What became of the message if it reads as a correction (pending until detection has run).",
    )


class FeedbackItemSerializer(serializers.Serializer):
    rubric_id = serializers.CharField()
    status = serializers.ChoiceField(choices=Verdict.choices)
    criterion = serializers.CharField(allow_blank=True)
    reason = serializers.CharField(allow_blank=True)
    evidence = serializers.CharField(allow_blank=True)
    basis = serializers.ChoiceField(choices=Basis.choices)


class FeedbackBlockSerializer(serializers.Serializer):
    """The feedback block of SPEC §3. Over budget it is the minimal
    ``{state, reason, submission_id, attempt_id}``, hence the optional keys;
    ``reason`` is there in the ``invalid`` state only."""

    state = serializers.ChoiceField(choices=FeedbackState.choices)
    reason = serializers.ChoiceField(choices=InvalidReason.choices, required=False)
    submission_id = serializers.UUIDField(allow_null=True)
    submission_seq = serializers.IntegerField(allow_null=True, required=False)
    attempt_id = serializers.UUIDField(allow_null=True)
    attempt_seq = serializers.IntegerField(allow_null=True, required=False)
    attempt_status = serializers.ChoiceField(choices=AttemptStatus.choices, allow_null=True, required=False)
    review_status = serializers.ChoiceField(choices=Verdict.choices, allow_null=True, required=False)
    rubric_version = serializers.CharField(allow_null=True, required=False)
    prompt_version = serializers.CharField(allow_null=True, required=False)
    engine_version = serializers.CharField(allow_null=True, required=False)
    model = serializers.CharField(allow_null=True, required=False)
    reused = serializers.BooleanField(allow_null=True, required=False)
    snapshot_hash = serializers.CharField(allow_null=True, required=False)
    items = FeedbackItemSerializer(many=True, required=False)
    next_step = serializers.CharField(allow_null=True, allow_blank=True, required=False)
    total_items = serializers.IntegerField(required=False)
    omitted_count = serializers.IntegerField(required=False)
    truncated_fields = serializers.ListField(child=serializers.CharField(), required=False)


class RecalledLessonsSerializer(serializers.Serializer):
    recalled = serializers.ListField(child=serializers.DictField())


class ContextSerializer(serializers.Serializer):
    feedback = FeedbackBlockSerializer()
    messages = ChatMessageSerializer(many=True)
    lessons = RecalledLessonsSerializer()
    facts = serializers.ListField(child=serializers.DictField())
    preferences = serializers.ListField(child=serializers.DictField())
    meta = ContextMetaSerializer()
