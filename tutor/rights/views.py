"""The data rights of the API (SPEC §7, §13): the caller's export, and the
AI notice of a course with its acknowledgement."""

from __future__ import annotations

from django.http import Http404, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response
from rest_framework.views import APIView

from tutor.models import Course, RetentionKind
from tutor.rights.export import export_serializer_class, student_export, student_export_zip
from tutor.rights.notice import notice_acknowledge, notice_for
from tutor.web.fields import StrictCharField
from tutor.web.openapi import AutoSchema
from tutor.web.throttling import FailOpenScopedRateThrottle


class ExportSchema(AutoSchema):
    """The document's shape is built from the apps' registered parts, when
    the schema is generated (``tutor.rights.export``)."""

    def get_response_serializers(self):
        return {
            (200, "application/json"): export_serializer_class(),
            (200, "application/zip"): OpenApiTypes.BINARY,
        }


class ExportView(APIView):
    throttle_classes = [FailOpenScopedRateThrottle]
    throttle_scope = "exports"
    schema = ExportSchema()

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "archive",
                str,
                enum=["zip"],
                required=False,
                description="zip: the document as export.json with the evidence files beside it",
            )
        ]
    )
    def get(self, request):
        """Everything held about the caller, as one JSON document (or a zip
        with the evidence files); nothing of anyone else. Rate-limited."""
        archive = request.query_params.get("archive")
        if archive not in (None, "", "zip"):
            raise serializers.ValidationError({"archive": ["the only archive is 'zip'"]})
        if archive == "zip":
            response = HttpResponse(student_export_zip(user=request.user), content_type="application/zip")
            response["Content-Disposition"] = 'attachment; filename="tutor-export.zip"'
            return response
        return Response(student_export(user=request.user))


class RetentionItemSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=RetentionKind.choices)
    label = serializers.CharField()
    days = serializers.IntegerField(help_text="0: kept")


class NoticeSerializer(serializers.Serializer):
    course = serializers.UUIDField()
    version = serializers.CharField(help_text="acknowledge this version")
    ai_system = serializers.BooleanField(help_text="replies and reviews come from an AI system")
    model_configured = serializers.BooleanField(
        help_text="false: the built-in offline tutor, nothing is sent out"
    )
    provider = serializers.CharField()
    model = serializers.CharField()
    sent = serializers.ListField(child=serializers.CharField(), help_text="what is sent to the model")
    redaction = serializers.CharField()
    not_sent = serializers.CharField()
    retention = RetentionItemSerializer(many=True)
    required = serializers.BooleanField(help_text="the course asks for it before the first tutor message")
    acknowledged_version = serializers.CharField(allow_null=True)
    acknowledged_at = serializers.DateTimeField(allow_null=True)


class AcknowledgeSerializer(serializers.Serializer):
    version = StrictCharField(max_length=64)


class AcknowledgedSerializer(serializers.Serializer):
    version = serializers.CharField()
    acknowledged_at = serializers.DateTimeField()


def _enrolled_course(user, course_id) -> Course:
    course = Course.objects.filter(pk=course_id, enrollments__user=user).first()
    if course is None:
        raise Http404("no such course")
    return course


class NoticeView(APIView):
    @extend_schema(responses={200: NoticeSerializer})
    def get(self, request, course_id):
        """The AI notice of one of the caller's courses, and their acknowledgement."""
        course = _enrolled_course(request.user, course_id)
        return Response(NoticeSerializer(notice_for(course=course, user=request.user)).data)

    @extend_schema(request=AcknowledgeSerializer, responses={201: AcknowledgedSerializer})
    def post(self, request, course_id):
        """Acknowledge the notice in the version read; another version is a 400."""
        course = _enrolled_course(request.user, course_id)
        body = AcknowledgeSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        ack = notice_acknowledge(user=request.user, course=course, version=body.validated_data["version"])
        return Response(AcknowledgedSerializer(ack).data, status=status.HTTP_201_CREATED)
