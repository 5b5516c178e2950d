"""Serializers of the course domain: courses, tasks, who am I (SPEC §7). The
tutor turn's are in ``tutor.chat.serializers``."""

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from tutor.kernel.rubrics import CriterionKind, Visibility, public_criteria
from tutor.models import Course, Enrollment, Task


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


# --- who am I (GET /api/me/) ----------------------------------------------------


class MeEnrollmentSerializer(serializers.Serializer):
    course = serializers.UUIDField(source="course_id")
    course_slug = serializers.CharField(source="course.slug")
    course_title = serializers.CharField(source="course.title")
    role = serializers.ChoiceField(choices=Enrollment.Role.choices)
    ai_notice_required = serializers.BooleanField(
        source="course.ai_notice_required",
        help_text="the AI notice must be acknowledged before tutor messages",
    )
    ai_notice_acknowledged = serializers.CharField(
        allow_null=True, help_text="the notice version acknowledged in this course, or null"
    )


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    display_name = serializers.CharField()
    # Admin access (course staff, superusers): the client shows a link to /admin/.
    is_staff = serializers.BooleanField()
    ai_notice_version = serializers.CharField(help_text="the current version of the AI notice (SPEC §13)")
    enrollments = MeEnrollmentSerializer(many=True)
