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


class MeSerializer(serializers.Serializer):
    username = serializers.CharField()
    display_name = serializers.CharField()
    # Admin access (course staff, superusers): the client shows a link to /admin/.
    is_staff = serializers.BooleanField()
    enrollments = MeEnrollmentSerializer(many=True)
