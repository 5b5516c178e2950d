from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from tutor.models import Course, Task


class CourseSerializer(serializers.ModelSerializer):
    class Meta:
        model = Course
        fields = ["id", "slug", "title"]


class CriterionSerializer(serializers.Serializer):
    id = serializers.CharField()
    kind = serializers.ChoiceField(choices=["acceptance", "learning"])
    text = serializers.CharField()
    check = serializers.JSONField(allow_null=True)


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
        return task.current_rubric.criteria if task.current_rubric else []
