"""HTTP API of the feedback app (SPEC §7): submissions, reviews, verdicts, attempts."""

from __future__ import annotations

import django_filters
from django.conf import settings
from django.db.models import Prefetch, Q
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied, ValidationError
from rest_framework.response import Response

from feedback.evidence import EvidenceTooLarge
from feedback.models import CiSource, ReviewAttempt, Submission
from feedback.serializers import (
    AttemptSerializer,
    ReviewRequestSerializer,
    SubmissionCreateSerializer,
    SubmissionSerializer,
    VerdictSerializer,
)
from feedback.services import (
    ReviewNotAllowed,
    VerdictError,
    review_request,
    staff_verdict_create,
    submission_create,
)
from tutor import access
from tutor.errors import Conflict, PayloadTooLarge
from tutor.models import Enrollment, Task
from tutor.pagination import SeqCursorPagination
from tutor.throttling import WriteThrottle


def visible_submissions(user):
    """Own submissions, those a service account sent, and staff's courses' (SPEC §7)."""
    qs = Submission.objects.select_related("student", "task")
    if user.is_superuser:
        return qs
    return qs.filter(
        Q(student=user) | Q(submitted_by=user) | Q(task__course_id__in=access.staff_course_ids(user))
    )


class SubmissionFilter(django_filters.FilterSet):
    task = django_filters.UUIDFilter(field_name="task_id")
    student = django_filters.CharFilter(field_name="student__username")

    class Meta:
        model = Submission
        fields = ["task", "student"]


class SubmissionCursorPagination(SeqCursorPagination):
    ordering = "-submission_seq"


class SubmissionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    queryset = Submission.objects.none()  # the schema's model; requests use get_queryset
    serializer_class = SubmissionSerializer
    filterset_class = SubmissionFilter
    pagination_class = SubmissionCursorPagination
    throttle_classes = [WriteThrottle]
    throttle_scope = "submissions"
    lookup_value_converter = "uuid"

    def get_queryset(self):
        return visible_submissions(self.request.user).prefetch_related(
            Prefetch("attempts", queryset=ReviewAttempt.objects.order_by("attempt_seq"))
        )

    def _fresh(self, submission_id) -> dict:
        return SubmissionSerializer(self.get_queryset().get(pk=submission_id)).data

    @extend_schema(
        request=SubmissionCreateSerializer,
        responses={
            201: SubmissionSerializer,
            413: OpenApiResponse(description="Evidence over a size limit; nothing stored."),
        },
    )
    def create(self, request, *args, **kwargs):
        length = request.META.get("CONTENT_LENGTH") or "0"
        if length.isdigit() and int(length) > settings.DATA_UPLOAD_MAX_MEMORY_SIZE:
            raise PayloadTooLarge(f"the request body is over {settings.DATA_UPLOAD_MAX_MEMORY_SIZE} bytes")
        serializer = SubmissionCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        task = access.visible_tasks(request.user).filter(pk=data["task"]).first()
        role = access.role_in(request.user, task.course_id) if task else None
        if role not in (Enrollment.Role.STUDENT, Enrollment.Role.SERVICE):
            raise ValidationError({"task": ["not a task of a course you are enrolled in as a student"]})
        if task.current_rubric_id is None:
            raise ValidationError({"task": ["this task has no rubric yet, so it cannot be reviewed"]})
        student, ci_source = self._student_for(request.user, role, task, data.get("student"))
        try:
            submission = submission_create(
                student=student,
                task=task,
                evidence=data["evidence"],
                submitted_by=request.user,
                ci_source=ci_source,
            )
        except EvidenceTooLarge as exc:
            raise PayloadTooLarge(str(exc)) from None
        # Serialized after the commit, so the first attempt shows its state
        # after dispatch (completed at once in the eager mode).
        return Response(self._fresh(submission.pk), status=status.HTTP_201_CREATED)

    @staticmethod
    def _student_for(user, role: str, task: Task, username: str | None):
        if role == Enrollment.Role.STUDENT:
            if username is not None and username != user.get_username():
                raise ValidationError({"student": ["only a course service account may submit for a student"]})
            return user, CiSource.STUDENT
        if not username:
            raise ValidationError({"student": ["a service account must name the student"]})
        enrollment = (
            Enrollment.objects.select_related("user")
            .filter(course_id=task.course_id, user__username=username, role=Enrollment.Role.STUDENT)
            .first()
        )
        if enrollment is None:
            raise ValidationError({"student": [f"{username!r} is not a student of this task's course"]})
        return enrollment.user, CiSource.SERVICE

    def _is_staff_of(self, submission: Submission) -> bool:
        return access.is_course_staff(self.request.user, submission.task.course_id)

    @extend_schema(
        request=ReviewRequestSerializer,
        responses={201: AttemptSerializer, 409: OpenApiResponse(description="A retry is not allowed now.")},
    )
    @action(detail=True, methods=["post"], throttle_classes=[WriteThrottle])
    def reviews(self, request, pk=None):
        """Ask for a new review attempt: staff any time (``force`` skips the
        cache); the owner only to retry an unavailable, invalid or outdated
        review of the latest submission."""
        submission = self.get_object()
        serializer = ReviewRequestSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        is_staff = self._is_staff_of(submission)
        if not is_staff and submission.student_id != request.user.pk:
            raise PermissionDenied("only the student or course staff may ask for a review")
        if serializer.validated_data["force"] and not is_staff:
            raise PermissionDenied("only course staff may force a fresh review")
        try:
            attempt = review_request(
                submission=submission,
                user=request.user,
                is_staff=is_staff,
                force=serializer.validated_data["force"],
            )
        except ReviewNotAllowed as exc:
            raise Conflict(str(exc)) from None
        attempt.refresh_from_db()
        return Response(AttemptSerializer(attempt).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=VerdictSerializer, responses={201: AttemptSerializer})
    @action(detail=True, methods=["post"], throttle_classes=[WriteThrottle])
    def verdicts(self, request, pk=None):
        """A staff verdict: a new completed attempt where the given criteria
        have basis ``staff``; earlier attempts are untouched."""
        submission = self.get_object()
        if not self._is_staff_of(submission):
            raise PermissionDenied("only course staff may give a verdict")
        serializer = VerdictSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        try:
            attempt = staff_verdict_create(
                submission=submission, staff=request.user, criteria=serializer.validated_data["criteria"]
            )
        except VerdictError as exc:
            # Nested like DRF's own list errors, so the field path reads
            # ``criteria.<index>.rubric_id`` in the error shape, as for a bad status.
            items: list[dict] = [{} for _ in range(exc.index)]
            raise ValidationError({"criteria": [*items, {"rubric_id": [str(exc)]}]}) from None
        return Response(AttemptSerializer(attempt).data, status=status.HTTP_201_CREATED)


class ReviewAttemptViewSet(mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    queryset = ReviewAttempt.objects.none()  # the schema's model; requests use get_queryset
    serializer_class = AttemptSerializer
    lookup_value_converter = "uuid"

    def get_queryset(self):
        return ReviewAttempt.objects.filter(submission__in=visible_submissions(self.request.user))
