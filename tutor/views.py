"""Course content endpoints and the health check (SPEC §7)."""

from __future__ import annotations

import django_filters
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, serializers, viewsets
from rest_framework.decorators import api_view, authentication_classes, permission_classes
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from tutor import access
from tutor.health import health_report, health_status_code
from tutor.models import Course, Task
from tutor.rights.notice import notice_version
from tutor.selectors import user_enrollments
from tutor.serializers import CourseSerializer, MeSerializer, TaskSerializer


class CourseViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = CourseSerializer
    lookup_value_converter = "public_id"  # tutor.web.converters

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation has no real user
            return Course.objects.none()
        return access.visible_courses(self.request.user).order_by("slug")


class TaskFilter(django_filters.FilterSet):
    course = django_filters.UUIDFilter(field_name="course_id")
    course_slug = django_filters.CharFilter(field_name="course__slug")

    class Meta:
        model = Task
        fields = ["course", "course_slug"]


class TaskViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = TaskSerializer
    filterset_class = TaskFilter
    lookup_value_converter = "public_id"  # tutor.web.converters

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation has no real user
            return Task.objects.none()
        return access.visible_tasks(self.request.user).order_by("course_id", "position", "slug")

    def get_serializer_context(self):
        context = super().get_serializer_context()
        if not getattr(self, "swagger_fake_view", False):
            context["staff_courses"] = access.staff_courses_of(self.request.user)
        return context


class MeView(APIView):
    @extend_schema(responses={200: MeSerializer})
    def get(self, request):
        """Who the caller is and the courses they are enrolled in, with their
        role in each: what a client needs to show the right tasks."""
        user = request.user
        profile = {
            "username": user.get_username(),
            "display_name": user.get_full_name() or user.get_username(),
            "is_staff": user.is_staff,
            "ai_notice_version": notice_version(),
            "enrollments": user_enrollments(user),
        }
        return Response(MeSerializer(profile).data)


def _check():
    # One field instance per key: a shared one is bound to the last key only,
    # and the schema would document that key alone.
    return serializers.ChoiceField(choices=["ok", "down", "not_configured"])


_health = inline_serializer(
    "Health",
    {
        "status": serializers.ChoiceField(choices=["ok", "degraded"]),
        "checks": inline_serializer(
            "HealthChecks", {"database": _check(), "broker": _check(), "worker": _check(), "model": _check()}
        ),
    },
)


# A degraded answer has the same shape as a healthy one: 200 when only the
# model is down, 503 when the database, the broker or the worker is.
@extend_schema(
    responses={(200, "application/json"): _health, (503, "application/json"): _health},
    auth=[],
)
@api_view(["GET"])
@authentication_classes([])
@permission_classes([AllowAny])
def healthz(request):
    """Reachability of the database, the broker and a worker, and the model's
    state from its recent calls; 503 when a configured database, broker or
    worker is down (not configured is not down; the model alone never is)."""
    report = health_report()
    return Response(report, status=health_status_code(report))
