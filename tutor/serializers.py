from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from tutor.models import Course, Enrollment, Task, TutorMessage, TutorSession
from tutor.rubrics import CriterionKind, Visibility, public_criteria


class CourseSerializer(serializers.ModelSerializer):
    class Meta:
        model = Course
        fields = ["id", "slug", "title"]


class CriterionSerializer(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.ChoiceField(choices=CriterionKind.choices)
    text = serializers.CharField()
    check = serializers.JSONField(allow_null=True, help_text="null for a hidden criterion, except for staff")
    visibility = serializers.ChoiceField(choices=Visibility.choices, default=Visibility.VISIBLE)


class TaskSerializer(serializers.ModelSerializer):
    course = serializers.PrimaryKeyRelatedField(read_only=True)
    steps = serializers.ListField(child=serializers.CharField())
    tags = serializers.ListField(child=serializers.CharField())
    rubric_version = serializers.SerializerMethodField()
    criteria = serializers.SerializerMethodField()

    class Meta:
        model = Task
        fields = [
            "id",
            "slug",
            "title",
            "course",
            "goal",
            "steps",
            "materials",
            "tags",
            "rubric_version",
            "criteria",
        ]

    def get_rubric_version(self, task: Task) -> str | None:
        return task.current_rubric.version if task.current_rubric else None

    @extend_schema_field(CriterionSerializer(many=True))
    def get_criteria(self, task: Task):
        criteria = task.current_rubric.criteria if task.current_rubric else []
        public = public_criteria(criteria)
        if public != criteria and task.course_id not in self.context.get("staff_courses", ()):
            criteria = public
        return [{"visibility": Visibility.VISIBLE.value, **c} for c in criteria]


MESSAGE_MAX_CHARS = 8000  # SPEC §4: content 1-8000 characters


class SessionSerializer(serializers.ModelSerializer):
    task = serializers.UUIDField(source="task_id", read_only=True)

    class Meta:
        model = TutorSession
        fields = ["id", "task", "created_at", "archived"]
        read_only_fields = fields


class SessionOpenSerializer(serializers.Serializer):
    task = serializers.UUIDField()
    new = serializers.BooleanField(default=False)


class MessageSerializer(serializers.ModelSerializer):
    # SPEC §4: an assistant message carries the context_meta of the request
    # that produced it (what the tutor was given); null for user messages.
    context_meta = serializers.JSONField(read_only=True, allow_null=True)

    class Meta:
        model = TutorMessage
        fields = ["id", "role", "content", "created_at", "context_meta"]
        read_only_fields = fields


class MessageCreateSerializer(serializers.Serializer):
    content = serializers.CharField(min_length=1, max_length=MESSAGE_MAX_CHARS, trim_whitespace=False)


class ContextQuerySerializer(serializers.Serializer):
    task = serializers.UUIDField()
    message = serializers.CharField(
        required=False, min_length=1, max_length=MESSAGE_MAX_CHARS, trim_whitespace=False
    )


class ChatMessageSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=["system", "user", "assistant"])
    content = serializers.CharField()


class ExchangeSerializer(serializers.Serializer):
    user_message = MessageSerializer()
    reply = MessageSerializer()
    context_meta = serializers.JSONField()


class ContextSerializer(serializers.Serializer):
    feedback = serializers.JSONField()
    messages = ChatMessageSerializer(many=True)
    lessons = serializers.JSONField()
    facts = serializers.JSONField()
    preferences = serializers.JSONField()
    meta = serializers.JSONField()


# --- who am I (GET /api/me/) ----------------------------------------------------


class MeEnrollmentSerializer(serializers.Serializer):
    course = serializers.UUIDField(source="course_id")
    course_slug = serializers.CharField(source="course.slug")
    course_title = serializers.CharField(source="course.title")
    role = serializers.ChoiceField(choices=Enrollment.Role.choices)


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    display_name = serializers.CharField()
    # Admin access (course staff, superusers): the client shows a link to /admin/.
    is_staff = serializers.BooleanField()
    enrollments = MeEnrollmentSerializer(many=True)
