"""Tutor sessions, messages and the context preview (SPEC §4, §7)."""

from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import APIView

from tutor.chat.assembler import assemble_context
from tutor.chat.loop import history_reads, sent_context_texts, sent_correction
from tutor.chat.selectors import owned_session, student_task, student_task_and_open_session
from tutor.chat.serializers import (
    ContextBodySerializer,
    ContextQuerySerializer,
    ContextSerializer,
    ExchangeSerializer,
    HistoryMessageSerializer,
    MessageCreateSerializer,
    MessageSerializer,
    SessionOpenSerializer,
    SessionSerializer,
)
from tutor.chat.services import message_send, message_text, session_open
from tutor.models import TutorMessage
from tutor.web.openapi import conflict, unavailable
from tutor.web.pagination import SeqCursorPagination
from tutor.web.throttling import WriteThrottle


class SessionOpenView(APIView):
    throttle_classes = [WriteThrottle]
    throttle_scope = "messages"

    @extend_schema(
        request=SessionOpenSerializer,
        responses={
            200: SessionSerializer,
            201: SessionSerializer,
            409: conflict("Another request is creating the session; try again."),
        },
    )
    def post(self, request):
        """The open session for the task (created if none); ``new`` archives it and starts another."""
        serializer = SessionOpenSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        task = student_task(request.user, serializer.validated_data["task"])
        session, created = session_open(student=request.user, task=task, new=serializer.validated_data["new"])
        return Response(
            SessionSerializer(session).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )


class MessagePagination(SeqCursorPagination):
    ordering = "position"


class SessionMessagesView(APIView):
    throttle_classes = [WriteThrottle]
    throttle_scope = "messages"
    # Read by the schema generator too: GET is documented as the paginated
    # {next, previous, results} with its cursor parameters.
    pagination_class = MessagePagination

    @extend_schema(responses={200: HistoryMessageSerializer(many=True)})
    def get(self, request, session_id):
        """The session's history, oldest first; a forged ``cursor`` is a 400."""
        session = owned_session(request.user, session_id).session
        paginator = self.pagination_class()
        page = paginator.paginate_queryset(TutorMessage.objects.filter(session=session), request, view=self)
        reads = history_reads(student=request.user, course_id=session.task.course_id, messages=page)
        return paginator.get_paginated_response(HistoryMessageSerializer(page, many=True, context=reads).data)

    @extend_schema(
        request=MessageCreateSerializer,
        responses={
            201: ExchangeSerializer,
            409: conflict(
                "A reply is still pending, the session is archived, or the course requires the AI "
                "notice first (code ai_notice_required)."
            ),
            503: unavailable("The model is unavailable; the message is kept."),
        },
    )
    def post(self, request, session_id):
        """Send a message: the reply is produced from the server-side history
        and the assembled context; a client's history is never read."""
        read = owned_session(request.user, session_id)
        serializer = MessageCreateSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        exchange = message_send(
            session=read.session,
            content=serializer.validated_data["content"],
            correlation_id=request.correlation_id,
            read=read,
        )
        body = {
            "user_message": MessageSerializer(exchange.user_message).data,
            "reply": MessageSerializer(exchange.reply).data,
            "context_meta": exchange.context.meta,
            "context_texts": sent_context_texts(exchange.context),
            "correction": sent_correction(student=request.user, user_message=exchange.user_message),
        }
        return Response(body, status=status.HTTP_201_CREATED)


class ContextView(APIView):
    """The context a message would be sent with, without calling the model
    and without side effects (no session is created, nothing is counted)."""

    @extend_schema(
        parameters=[
            OpenApiParameter("task", OpenApiTypes.UUID, required=True),
            OpenApiParameter("message", str, required=False),
        ],
        responses={200: ContextSerializer},
    )
    def get(self, request):
        """The preview for ``?task=&message=``."""
        query = ContextQuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        return self._preview(request, query.validated_data["task"], query.validated_data.get("message"))

    @extend_schema(request=ContextBodySerializer, responses={200: ContextSerializer})
    def post(self, request):
        """The same preview with the draft in the body (SPEC §4): a long
        draft does not fit a URL, and a URL lands in access logs. An empty
        or null ``message`` previews without one, like an empty query value."""
        body = ContextBodySerializer(data=request.data)
        body.is_valid(raise_exception=True)
        return self._preview(request, body.validated_data["task"], body.validated_data.get("message") or None)

    @staticmethod
    def _preview(request, task_id, message: str | None) -> Response:
        read = student_task_and_open_session(request.user, task_id)
        context = assemble_context(
            snapshot_versions=read.versions,
            student=request.user,
            task=read.task,
            message=None if message is None else message_text(message),
            earlier=read.history,
            correlation_id=request.correlation_id,
            session_id=read.session_id,
            preview=True,
            feedback=read.feedback,
        )
        return Response(
            {
                "feedback": context.feedback,
                "messages": context.messages,
                "lessons": {"recalled": context.data["lessons"]},
                "facts": context.data["facts"],
                "preferences": context.data["preferences"],
                "meta": context.meta,
            }
        )
