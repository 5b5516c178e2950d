"""HTTP API of the lessons app (SPEC §6, §7): staff only -- a student's token
gets 403 everywhere here; course deltas also accept the course's service account."""

from __future__ import annotations

import uuid

import django_filters
from django.utils import timezone
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import BasePermission
from rest_framework.response import Response

from lessons import access
from lessons.models import (
    Lesson,
    LessonKind,
    LessonRevision,
    LessonSource,
    LessonStatus,
    RecallTrace,
    SkillCandidate,
)
from lessons.recall import recalled_item
from lessons.selectors import lessons_recall, visible_lessons, visible_skill_candidates, visible_traces
from lessons.serializers import (
    DeltaRequestSerializer,
    DeltaResultSerializer,
    InjectSerializer,
    LessonCreateSerializer,
    LessonEditSerializer,
    LessonReasonSerializer,
    LessonRevisionSerializer,
    LessonSerializer,
    RecallQuerySerializer,
    RecallResponseSerializer,
    RecallTraceSerializer,
    RejectSerializer,
    SkillCandidateSerializer,
)
from lessons.services.deltas import deltas_apply
from lessons.services.lifecycle import (
    lesson_approve,
    lesson_create,
    lesson_inject,
    lesson_quarantine,
    lesson_reject,
    lesson_retire,
)
from lessons.services.revisions import lesson_edit
from lessons.validation import clean_body, clean_symptoms, clean_tags, clean_title
from tutor.kernel.errors import InvalidInput
from tutor.models import Course
from tutor.web.pagination import SeqCursorPagination

CONFLICT = OpenApiResponse(description="The lesson's status does not allow this transition.")
NOT_PENDING = OpenApiResponse(description="The lesson is no longer pending.")


class IsLessonsStaff(BasePermission):
    message = "only course staff may use the lessons API"

    def has_permission(self, request, view):
        return access.is_lessons_staff(request.user)


class MaySendDeltas(BasePermission):
    message = "only course staff or a course service account may send playbook deltas"

    def has_permission(self, request, view):
        return access.may_send_deltas(request.user)


def course_by_slug_or_id(value: str, field: str = "course") -> Course:
    """SPEC §6: ``course`` as a slug or an id."""
    try:
        course = Course.objects.filter(pk=uuid.UUID(value)).first()
    except ValueError:
        course = Course.objects.filter(slug=value).first()
    if course is None:
        raise InvalidInput(f"no course {value!r}", field=field)
    return course


class CreatedCursorPagination(SeqCursorPagination):
    ordering = ("-created_at", "id")


class LessonFilter(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(choices=LessonStatus.choices)
    kind = django_filters.ChoiceFilter(choices=LessonKind.choices)
    source = django_filters.ChoiceFilter(choices=LessonSource.choices)
    course = django_filters.CharFilter(method="filter_course", help_text="a course slug or id")
    review_due = django_filters.BooleanFilter(method="filter_review_due", help_text="past review_by")

    class Meta:
        model = Lesson
        fields = ["status", "kind", "source", "course", "review_due"]

    def filter_course(self, queryset, name, value):
        return queryset.filter(course=course_by_slug_or_id(value))

    def filter_review_due(self, queryset, name, value):
        today = timezone.localdate()
        return queryset.filter(review_by__lt=today) if value else queryset.filter(review_by__gte=today)


class LessonViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    queryset = Lesson.objects.none()  # the schema's model; requests use get_queryset
    serializer_class = LessonSerializer
    filterset_class = LessonFilter
    pagination_class = CreatedCursorPagination
    lookup_value_converter = "public_id"  # tutor.web.converters

    def get_permissions(self):
        if self.action == "deltas":
            return [*super().get_permissions(), MaySendDeltas()]
        return [*super().get_permissions(), IsLessonsStaff()]

    def get_queryset(self):
        return visible_lessons(self.request.user).defer("shingles")

    def _answer(self, lesson: Lesson, code: int = status.HTTP_200_OK) -> Response:
        lesson = Lesson.objects.select_related("course").get(pk=lesson.pk)
        return Response(LessonSerializer(lesson).data, status=code)

    @extend_schema(request=LessonCreateSerializer, responses={201: LessonSerializer})
    def create(self, request, *args, **kwargs):
        """A pending lesson entered by staff (redacted; it still needs an approval)."""
        serializer = LessonCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        course = course_by_slug_or_id(data["course"]) if data["course"] else None
        lesson = lesson_create(
            actor=request.user,
            course=course,
            title=clean_title(data["title"]),
            body=clean_body(data["body"]),
            tags=clean_tags(data["tags"]),
            symptoms=clean_symptoms(data["symptoms"]),
            kind=data["kind"],
            review_by=data.get("review_by"),
        )
        return self._answer(lesson, status.HTTP_201_CREATED)

    @extend_schema(
        request=LessonEditSerializer,
        responses={
            200: LessonSerializer,
            409: OpenApiResponse(description="The lesson is no longer pending."),
        },
    )
    def partial_update(self, request, pk=None):
        """Edit a pending draft (SPEC §6): a new revision, audited; the captured
        text stays in ``…/revisions/``. Fields not given stay as they are."""
        lesson = self.get_object()
        serializer = LessonEditSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        lesson_edit(
            lesson=lesson,
            actor=request.user,
            title=data.get("title", lesson.title),
            body=data.get("body", lesson.body),
            tags=data.get("tags", lesson.tags),
            symptoms=data.get("symptoms", lesson.symptoms),
            note=data["note"],
        )
        return self._answer(lesson)

    @extend_schema(responses={200: LessonRevisionSerializer(many=True)})
    @action(detail=True, methods=["get"])
    def revisions(self, request, pk=None):
        """The draft's text as captured (1) and as each staff edit left it."""
        lesson = self.get_object()
        found = LessonRevision.objects.filter(lesson=lesson).select_related("author").order_by("number")
        return Response(LessonRevisionSerializer(found, many=True).data)

    @extend_schema(request=LessonReasonSerializer, responses={200: LessonSerializer, 409: CONFLICT})
    @action(detail=True, methods=["post"])
    def approve(self, request, pk=None):
        """pending → approved (an optional ``reason`` goes to the audit trail)."""
        lesson = self.get_object()
        serializer = LessonReasonSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return self._answer(
            lesson_approve(lesson=lesson, actor=request.user, reason=serializer.validated_data["reason"])
        )

    @extend_schema(request=RejectSerializer, responses={200: LessonSerializer, 409: CONFLICT})
    @action(detail=True, methods=["post"])
    def reject(self, request, pk=None):
        """pending → rejected, with a reason code (``other`` needs a note)."""
        lesson = self.get_object()
        serializer = RejectSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        return self._answer(
            lesson_reject(lesson=lesson, actor=request.user, reason=data["reason"], note=data["note"])
        )

    @extend_schema(request=InjectSerializer, responses={200: LessonSerializer, 409: CONFLICT})
    @action(detail=True, methods=["post"])
    def inject(self, request, pk=None):
        """approved | quarantined → injected (a lesson past review_by needs a new ``review_by``)."""
        lesson = self.get_object()
        serializer = InjectSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return self._answer(
            lesson_inject(
                lesson=lesson, actor=request.user, review_by=serializer.validated_data.get("review_by")
            )
        )

    @extend_schema(request=LessonReasonSerializer, responses={200: LessonSerializer, 409: CONFLICT})
    @action(detail=True, methods=["post"])
    def quarantine(self, request, pk=None):
        """injected → quarantined."""
        lesson = self.get_object()
        serializer = LessonReasonSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return self._answer(
            lesson_quarantine(lesson=lesson, actor=request.user, reason=serializer.validated_data["reason"])
        )

    @extend_schema(request=LessonReasonSerializer, responses={200: LessonSerializer, 409: CONFLICT})
    @action(detail=True, methods=["post"])
    def retire(self, request, pk=None):
        """injected | quarantined → retired."""
        lesson = self.get_object()
        serializer = LessonReasonSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return self._answer(
            lesson_retire(lesson=lesson, actor=request.user, reason=serializer.validated_data["reason"])
        )

    @extend_schema(
        parameters=[
            OpenApiParameter("tags", OpenApiTypes.STR, description="comma-separated"),
            OpenApiParameter("symptoms", OpenApiTypes.STR, description="comma-separated"),
            OpenApiParameter("course", OpenApiTypes.STR, description="slug or id; default: your courses"),
        ],
        responses={200: RecallResponseSerializer},
        filters=False,
    )
    @action(detail=False, methods=["get"], pagination_class=None, filterset_class=None)
    def recall(self, request):
        """Recall preview: the lessons a context would get, and the full trace. No side effects."""
        query = RecallQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        data = query.validated_data
        if data.get("course"):
            course = course_by_slug_or_id(data["course"])
            if not access.can_manage(request.user, course.pk):
                raise InvalidInput("not a course you are staff of", field="course")
            course_ids = [course.pk]
        else:
            staff_of = access.staff_course_ids(request.user).values_list("course_id", flat=True)
            course_ids = None if request.user.is_superuser else list(staff_of)
        result = lessons_recall(
            course_ids=course_ids,
            tags=RecallQuerySerializer.split(data["tags"]),
            symptoms=RecallQuerySerializer.split(data["symptoms"]),
        )
        return Response(
            {
                "recalled": [recalled_item(s) for s in result.recalled],
                "used_tokens": result.used_tokens,
                "budget_tokens": result.params.budget_tokens,
                "trace": result.lines,
                "trace_counts": result.counts,
                "trace_omitted": result.omitted,
                "context": result.context.as_dict(),
            }
        )

    @extend_schema(request=DeltaRequestSerializer, responses={200: DeltaResultSerializer}, filters=False)
    @action(detail=False, methods=["post"], pagination_class=None, filterset_class=None)
    def deltas(self, request):
        """Playbook deltas backed by an external signal; all or nothing."""
        serializer = DeltaRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        # The rules run on the deltas as sent: the serializer above checks
        # their shape, the service every rule, naming the delta.
        result = deltas_apply(
            actor=request.user,
            signal_attempt_id=serializer.validated_data["signal_attempt"],
            deltas=request.data["deltas"],
        )
        return Response(
            DeltaResultSerializer({"signal_attempt": result.signal_attempt, "applied": result.applied}).data
        )


class SkillCandidateFilter(django_filters.FilterSet):
    status = django_filters.ChoiceFilter(choices=SkillCandidate.Status.choices)

    class Meta:
        model = SkillCandidate
        fields = ["status"]


class SkillCandidateViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """Lessons promoted by use, awaiting a staff review."""

    queryset = SkillCandidate.objects.none()
    serializer_class = SkillCandidateSerializer
    filterset_class = SkillCandidateFilter
    pagination_class = CreatedCursorPagination
    permission_classes = [*viewsets.GenericViewSet.permission_classes, IsLessonsStaff]

    def get_queryset(self):
        return visible_skill_candidates(self.request.user)


class RecallTraceFilter(django_filters.FilterSet):
    correlation_id = django_filters.CharFilter()
    student = django_filters.CharFilter(field_name="student__username")
    task = django_filters.UUIDFilter(field_name="task_id")
    session = django_filters.UUIDFilter(field_name="session_id")

    class Meta:
        model = RecallTrace
        fields = ["correlation_id", "student", "task", "session"]


class RecallTraceViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Why each lesson was or was not recalled into a real tutor request."""

    queryset = RecallTrace.objects.none()
    serializer_class = RecallTraceSerializer
    filterset_class = RecallTraceFilter
    pagination_class = CreatedCursorPagination
    permission_classes = [*viewsets.GenericViewSet.permission_classes, IsLessonsStaff]
    lookup_value_converter = "public_id"  # tutor.web.converters

    def get_queryset(self):
        return visible_traces(self.request.user)
