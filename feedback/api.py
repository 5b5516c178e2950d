"""HTTP API of the feedback app (SPEC §7): submissions, reviews, verdicts, attempts."""

from __future__ import annotations

import django_filters
from django.conf import settings
from django.db.models import Prefetch
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.response import Response
from rest_framework.views import APIView

from feedback.agreement import review_agreement
from feedback.models import CiSource, ReviewAttempt, Submission
from feedback.selectors import visible_submissions
from feedback.serializers import (
    AttemptSerializer,
    RegradeCreateSerializer,
    RegradeRequestSerializer,
    ReviewAgreementSerializer,
    ReviewRequestSerializer,
    SubmissionCreateSerializer,
    SubmissionSerializer,
    SubmissionSummarySerializer,
    VerdictSerializer,
)
from feedback.services.intake import review_request, submission_create
from feedback.services.regrades import regrade_request_create
from feedback.services.verdicts import staff_verdict_create
from tutor import access
from tutor.models import Enrollment, Task
from tutor.web.openapi import conflict, forbidden
from tutor.web.pagination import SeqCursorPagination
from tutor.web.throttling import WriteThrottle


class SubmissionFilter(django_filters.FilterSet):
    task = django_filters.UUIDFilter(field_name="task_id")
    student = django_filters.CharFilter(field_name="student__username")

    class Meta:
        model = Submission
        fields = ["task", "student"]


class SubmissionCursorPagination(SeqCursorPagination):
    ordering = "-submission_seq"


class HiddenChecksContextMixin:
    """Serializers learn which courses the caller is staff of: only there do
    hidden checks show their reasons and evidence (SPEC §9)."""

    def get_serializer_context(self):
        context = super().get_serializer_context()
        context["staff_courses"] = access.staff_courses_of(self.request.user)
        return context


class SubmissionViewSet(
    HiddenChecksContextMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    queryset = Submission.objects.none()  # the schema's model; requests use get_queryset
    serializer_class = SubmissionSerializer
    filterset_class = SubmissionFilter
    pagination_class = SubmissionCursorPagination
    throttle_classes = [WriteThrottle]
    throttle_scope = "submissions"
    lookup_value_converter = "public_id"  # tutor.web.converters

    def get_queryset(self):
        submissions = visible_submissions(self.request.user).prefetch_related(
            Prefetch(
                "attempts", queryset=ReviewAttempt.objects.select_related("rubric").order_by("attempt_seq")
            ),
            # Every listed submission carries its requests: one query for the page, not one per row.
            "regrade_requests",
        )
        if getattr(self, "action", None) == "list":
            # A list shows the stored summary; the evidence (up to 1 MiB a row) stays in the table.
            submissions = submissions.defer("evidence")
        return submissions

    def get_serializer_class(self):
        if getattr(self, "action", None) == "list":
            return SubmissionSummarySerializer
        return SubmissionSerializer

    def _fresh(self, submission_id) -> dict:
        return self.get_serializer(self.get_queryset().get(pk=submission_id)).data

    @extend_schema(request=SubmissionCreateSerializer, responses={201: SubmissionSerializer})
    def create(self, request, *args, **kwargs):
        """Store a submission and its first review attempt; evidence over a
        size limit is a 413 and nothing is stored."""
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
        submission = submission_create(
            student=student,
            task=task,
            evidence=data["evidence"],
            submitted_by=request.user,
            ci_source=ci_source,
        )
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
        responses={
            201: AttemptSerializer,
            403: forbidden("Only the student or course staff may ask; only staff may force."),
            409: conflict("A retry is not allowed now."),
        },
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
        attempt = review_request(
            submission=submission,
            user=request.user,
            is_staff=is_staff,
            force=serializer.validated_data["force"],
        )
        attempt.refresh_from_db()
        data = AttemptSerializer(attempt, context=self.get_serializer_context()).data
        return Response(data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=RegradeCreateSerializer,
        responses={
            201: RegradeRequestSerializer,
            403: forbidden("Only the student whose submission it is may ask for a regrade."),
            409: conflict(
                "Not the latest submission, no completed review yet, or a request is already open."
            ),
        },
    )
    @action(
        detail=True,
        methods=["post"],
        url_path="regrade-requests",
        throttle_classes=[WriteThrottle],
        throttle_scope="regrade_requests",
    )
    def regrade_requests(self, request, pk=None):
        """Ask staff to look at one criterion of the newest completed review of
        your latest submission (not one the course's CI decided)."""
        submission = self.get_object()
        if submission.student_id != request.user.pk:
            raise PermissionDenied("only the student whose submission it is may ask for a regrade")
        serializer = RegradeCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        created = regrade_request_create(
            submission=submission,
            student=request.user,
            rubric_id=serializer.validated_data["rubric_id"],
            reason=serializer.validated_data["reason"],
        )
        return Response(RegradeRequestSerializer(created).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=VerdictSerializer,
        responses={201: AttemptSerializer, 403: forbidden("Only course staff may give a verdict.")},
    )
    @action(detail=True, methods=["post"], throttle_classes=[WriteThrottle])
    def verdicts(self, request, pk=None):
        """A staff verdict: a new completed attempt where the given criteria
        have basis ``staff``; earlier attempts are untouched."""
        submission = self.get_object()
        if not self._is_staff_of(submission):
            raise PermissionDenied("only course staff may give a verdict")
        serializer = VerdictSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        attempt = staff_verdict_create(
            submission=submission,
            staff=request.user,
            criteria=serializer.validated_data["criteria"],
            next_step=serializer.validated_data.get("next_step"),
        )
        data = AttemptSerializer(attempt, context=self.get_serializer_context()).data
        return Response(data, status=status.HTTP_201_CREATED)


class ReviewAgreementView(APIView):
    @extend_schema(
        responses={
            200: ReviewAgreementSerializer,
            403: forbidden("Only course staff may see review agreement."),
        },
        operation_id="tasks_review_agreement",
    )
    def get(self, request, task_id):
        """Per criterion and rubric version: staff/model agreement, the
        confusion table and the disagreeing submissions (course staff only)."""
        task = access.visible_tasks(request.user).filter(pk=task_id).first()
        if task is None:
            raise NotFound("no such task")
        if not access.is_course_staff(request.user, task.course_id):
            raise PermissionDenied("only course staff may see review agreement")
        body = {
            "task": task.pk,
            "floor": settings.REVIEW_AGREEMENT_FLOOR,
            "min_verdicts": settings.REVIEW_AGREEMENT_MIN_VERDICTS,
            "rubric_versions": review_agreement(task),
        }
        return Response(ReviewAgreementSerializer(body).data)


class ReviewAttemptViewSet(HiddenChecksContextMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    queryset = ReviewAttempt.objects.none()  # the schema's model; requests use get_queryset
    serializer_class = AttemptSerializer
    lookup_value_converter = "public_id"  # tutor.web.converters

    def get_queryset(self):
        return ReviewAttempt.objects.select_related("rubric", "submission__task").filter(
            submission__in=visible_submissions(self.request.user)
        )
