"""HTTP API of the corrections app (SPEC §5, §7): memory, corrections, review cases."""

from __future__ import annotations

import django_filters
from django.http import Http404
from django.utils import timezone
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.permissions import BasePermission, IsAuthenticated
from rest_framework.response import Response

from corrections.models import CaseKind, CaseStatus, Correction, CorrectionCase, CorrectionType, MemoryItem
from corrections.selectors import (
    memory_list,
    supports_fact,
    visible_cases,
    visible_corrections,
)
from corrections.serializers import (
    AcceptSerializer,
    CaseSerializer,
    ClaimSerializer,
    CorrectionCreateSerializer,
    CorrectionSerializer,
    DetectionResultSerializer,
    DisputeSerializer,
    MemoryItemSerializer,
    ReasonSerializer,
)
from corrections.services.cases import case_accept, case_claim, case_dispute, case_reject
from corrections.services.intake import correction_submit
from corrections.services.memory import memory_forget
from tutor import access
from tutor.kernel.errors import PermissionRefused
from tutor.models import Course, Enrollment, TutorSession
from tutor.rights.notice import notice_check_for
from tutor.web.openapi import conflict
from tutor.web.pagination import SeqCursorPagination


class MemoryViewSet(mixins.ListModelMixin, viewsets.GenericViewSet):
    """The caller's own memory: session, user and (read-only) system items."""

    queryset = MemoryItem.objects.none()  # the schema's model; requests use get_queryset
    serializer_class = MemoryItemSerializer
    lookup_value_converter = "public_id"  # tutor.web.converters
    filter_backends: list = []

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):  # schema generation has no real user
            return MemoryItem.objects.none()
        return memory_list(self.request.user, now=timezone.now())

    @extend_schema(
        responses={
            204: OpenApiResponse(description="Forgotten."),
            403: OpenApiResponse(description="A system item (a course fact you stated) is read-only."),
        }
    )
    def destroy(self, request, pk=None):
        """Forget one of your session or user memory items; another user's id is a 404."""
        # The delete itself decides: of two concurrent forgets the loser gets the unknown id's 404.
        if memory_forget(user=request.user, item_id=pk):
            return Response(status=status.HTTP_204_NO_CONTENT)
        if supports_fact(request.user, pk):
            raise PermissionRefused("system items are course facts: read-only (course staff decide them)")
        raise Http404("no such memory item")


class CorrectionFilter(django_filters.FilterSet):
    course = django_filters.UUIDFilter(field_name="course_id")
    session = django_filters.UUIDFilter(field_name="session_id")
    type = django_filters.ChoiceFilter(choices=CorrectionType.choices)

    class Meta:
        model = Correction
        fields = ["course", "session", "type"]


class CorrectionPagination(SeqCursorPagination):
    ordering = ("-created_at", "-id")


class CorrectionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Detected corrections and where they went: your own, and those of the
    courses you are staff of."""

    queryset = Correction.objects.none()  # the schema's model; requests use get_queryset
    serializer_class = CorrectionSerializer
    filterset_class = CorrectionFilter
    pagination_class = CorrectionPagination
    lookup_value_converter = "public_id"  # tutor.web.converters

    def get_queryset(self):
        return visible_corrections(self.request.user)

    @extend_schema(
        request=CorrectionCreateSerializer,
        responses={
            201: DetectionResultSerializer,
            200: DetectionResultSerializer,
            409: conflict("The course requires the AI notice first (code ai_notice_required)."),
            429: OpenApiResponse(description="Too many corrections (CORRECTIONS_RATE_LIMIT)."),
        },
    )
    def create(self, request, *args, **kwargs):
        """Run correction detection on a text: 201 with the correction and
        where it went; 200 when it is no correction (nothing is written) or
        repeats one you made before (it counts once)."""
        body = CorrectionCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        data = body.validated_data
        session, course = self._session_and_course(request.user, data.get("session"), data.get("course"))
        notice_check_for(user=request.user, course=course)  # SPEC §13: a 409 before the model sees it
        correction, created = correction_submit(
            user=request.user,
            course=course,
            content=data["content"],
            session=session,
            correlation_id=request.correlation_id,
        )
        result = {
            "detected": correction is not None,
            "created": created,
            "correction": CorrectionSerializer(correction).data if correction else None,
        }
        return Response(result, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

    @staticmethod
    def _session_and_course(user, session_id, course_id):
        if session_id is not None:
            session = (
                TutorSession.objects.select_related("task__course")
                .filter(pk=session_id, student=user, task__course__enrollments__user=user)
                .first()
            )
            if session is None:
                raise ValidationError({"session": ["not one of your tutor sessions"]})
            if course_id is not None and course_id != session.task.course_id:
                raise ValidationError({"course": ["the session belongs to another course"]})
            return session, session.task.course
        # A service account submits for others; its own words are no correction.
        courses = Course.objects.filter(
            enrollments__user=user, enrollments__role__in=[Enrollment.Role.STUDENT, Enrollment.Role.STAFF]
        )
        if course_id is not None:
            course = courses.filter(pk=course_id).first()
            if course is None:
                raise ValidationError({"course": ["not a course you are enrolled in"]})
            return None, course
        found = list(courses[:2])
        if len(found) != 1:
            raise ValidationError({"course": ["name the course (or a session): you are in several or none"]})
        return None, found[0]


HELD_OR_DECIDED = OpenApiResponse(description="Held by someone else under a live lease, or already decided.")


class IsCourseStaff(BasePermission):
    message = "only course staff work on correction cases"

    def has_permission(self, request, view):
        user = request.user
        return bool(user.is_superuser or access.staff_course_ids(user).exists())


class CaseFilter(django_filters.FilterSet):
    course = django_filters.UUIDFilter(field_name="course_id")
    status = django_filters.ChoiceFilter(choices=CaseStatus.choices)
    kind = django_filters.ChoiceFilter(choices=CaseKind.choices)

    class Meta:
        model = CorrectionCase
        fields = ["course", "status", "kind"]


class CorrectionCaseViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """The review queue of SPEC §8 (the same as in admin), for course staff."""

    queryset = CorrectionCase.objects.none()
    serializer_class = CaseSerializer
    filterset_class = CaseFilter
    permission_classes = [IsAuthenticated, IsCourseStaff]
    lookup_value_converter = "public_id"  # tutor.web.converters

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return CorrectionCase.objects.none()
        return visible_cases(self.request.user).order_by("created_at", "id")

    def _answer(self, case) -> Response:
        return Response(CaseSerializer(self.get_queryset().get(pk=case.pk)).data)

    @extend_schema(
        request=ClaimSerializer,
        responses={200: CaseSerializer, 409: HELD_OR_DECIDED},
    )
    @action(detail=True, methods=["post"])
    def claim(self, request, pk=None):
        """Hold the case for CORRECTIONS_CASE_LEASE_SECONDS (8 h) so nobody decides it twice."""
        # The body carries nothing, but it is read: a POST is JSON like any other (SPEC §7).
        ClaimSerializer(data=request.data).is_valid(raise_exception=True)
        return self._answer(case_claim(case=self.get_object(), staff=request.user))

    @extend_schema(
        request=AcceptSerializer,
        responses={200: CaseSerializer, 409: HELD_OR_DECIDED},
    )
    @action(detail=True, methods=["post"])
    def accept(self, request, pk=None):
        """Accept a proposal (by default the one with most supporters), as written or in staff's
        own ``statement``: it becomes the verified fact and the active one is superseded (a
        proposed one accepted as written is verified); a process case becomes a course rule."""
        body = AcceptSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        case = case_accept(
            case=self.get_object(),
            staff=request.user,
            reason=body.validated_data["reason"],
            proposal_id=body.validated_data.get("proposal"),
            statement=body.validated_data.get("statement"),
        )
        return self._answer(case)

    @extend_schema(
        request=ReasonSerializer,
        responses={200: CaseSerializer, 409: HELD_OR_DECIDED},
    )
    @action(detail=True, methods=["post"])
    def reject(self, request, pk=None):
        """Reject the proposals: the active fact stays."""
        body = ReasonSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return self._answer(
            case_reject(case=self.get_object(), staff=request.user, reason=body.validated_data["reason"])
        )

    @extend_schema(
        request=DisputeSerializer,
        responses={200: CaseSerializer, 409: HELD_OR_DECIDED},
    )
    @action(detail=True, methods=["post"])
    def dispute(self, request, pk=None):
        """Mark the topic disputed: the tutor is told the statements, that they are disputed,
        and the staff note."""
        body = DisputeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        case = case_dispute(
            case=self.get_object(),
            staff=request.user,
            reason=body.validated_data["reason"],
            note=body.validated_data.get("note"),
        )
        return self._answer(case)
