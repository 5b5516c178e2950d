"""The tutor's own rows under the data rights (SPEC §13): sessions and
messages, model calls, enrolments, notice acknowledgements and the audit
trail. Registered from ``TutorConfig.ready()``, last in order: the audit
trail forgets what it showed of rows the other parts removed.
"""

from __future__ import annotations

import json

from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.db.models import ExpressionWrapper, Q
from django.db.models.functions import Cast
from rest_framework import serializers

from tutor.models import (
    AuditEvent,
    Enrollment,
    ModelCall,
    NoticeAcknowledgement,
    RetentionKind,
    ScopeChange,
    ScopeVersion,
    TutorMessage,
    TutorSession,
)
from tutor.rights.registry import Ledger, RightsPart, Subject, delete_batch
from tutor.rights.subjects import json_number_forms, scrub_json, scrub_text
from tutor.services import sync_staff_flag

ERASED_REPR = "(erased)"


class MessageExportSerializer(serializers.Serializer):
    role = serializers.CharField()
    content = serializers.CharField()
    created_at = serializers.DateTimeField()


class SessionExportSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    task = serializers.UUIDField(source="task_id")
    course = serializers.CharField(source="task.course.slug")
    created_at = serializers.DateTimeField()
    archived = serializers.BooleanField()
    messages = MessageExportSerializer(many=True)


class EnrollmentExportSerializer(serializers.Serializer):
    course = serializers.CharField(source="course.slug")
    role = serializers.CharField()
    created_at = serializers.DateTimeField()


class NoticeExportSerializer(serializers.Serializer):
    course = serializers.CharField(source="course.slug")
    version = serializers.CharField()
    acknowledged_at = serializers.DateTimeField()


class AuditExportSerializer(serializers.Serializer):
    event = serializers.CharField()
    course = serializers.CharField(source="course.slug", allow_null=True, default=None)
    by_you = serializers.BooleanField()
    from_state = serializers.CharField()
    to_state = serializers.CharField()
    reason = serializers.CharField()
    created_at = serializers.DateTimeField()


class TutorExportSerializer(serializers.Serializer):
    enrollments = EnrollmentExportSerializer(many=True)
    sessions = SessionExportSerializer(many=True)
    ai_notice_acknowledgements = NoticeExportSerializer(many=True)
    audit_events = AuditExportSerializer(many=True, help_text="decisions and events about you or made by you")


class TutorRights(RightsPart):
    name = "tutor"
    position = 90
    export_key = "tutor"
    rules = {
        "tutor.TutorSession": "deleted",
        "tutor.TutorMessage": "deleted with its session",
        "tutor.ModelCall": "deleted (the request and response bodies carried the person's messages and work)",
        "tutor.Enrollment": "deleted",
        "tutor.NoticeAcknowledgement": "deleted",
        "tutor.AuditEvent": "kept for the course: the person becomes the pseudonym, their free text is "
        "removed, and what the row showed of erased rows is forgotten",
        "tutor.Course": "holds no person",
        "tutor.Task": "holds no person",
        "tutor.Rubric": "holds no person",
        "tutor.RetentionOverride": "holds no person",
        "tutor.ScopeVersion": "the person's snapshot versions are deleted with the whole person",
        "tutor.ScopeChange": "the change log of the person's snapshots is deleted with the whole person "
        "(a course's rows name lesson and fact ids, no person)",
    }

    def retention(self):
        return {
            RetentionKind.MESSAGES: lambda *, scope, before, limit, dry_run: delete_batch(
                scope.of(TutorMessage.objects.filter(created_at__lt=before), "session__task__course_id"),
                limit=limit,
                dry_run=dry_run,
            ),
            RetentionKind.MODEL_CALLS: lambda *, scope, before, limit, dry_run: delete_batch(
                scope.of(ModelCall.objects.filter(created_at__lt=before), "course_id"),
                limit=limit,
                dry_run=dry_run,
            ),
            RetentionKind.AUDIT: audit_expire,
        }

    def erase(self, subject: Subject, ledger: Ledger, *, dry_run: bool) -> None:
        user = subject.user
        sessions = subject.in_scope(TutorSession.objects.filter(student=user), "task__course_id")
        calls = subject.in_scope(ModelCall.objects.filter(student=user), "course_id")
        # Calls recorded before ModelCall.student: found by their turns' correlation ids.
        turns = set(
            sessions.values_list("messages__correlation_id", flat=True).exclude(messages__correlation_id="")
        )
        legacy = subject.in_scope(
            ModelCall.objects.filter(
                student__isnull=True, purpose=ModelCall.Purpose.TUTOR, correlation_id__in=turns
            ),
            "course_id",
        )
        ledger.delete(calls, dry_run=dry_run)
        ledger.delete(legacy, dry_run=dry_run)
        ledger.delete(sessions, dry_run=dry_run)
        ledger.delete(subject.in_scope(Enrollment.objects.filter(user=user), "course_id"), dry_run=dry_run)
        ledger.delete(
            subject.in_scope(NoticeAcknowledgement.objects.filter(user=user), "course_id"), dry_run=dry_run
        )
        if subject.whole:
            ledger.delete(ScopeVersion.objects.filter(key__endswith=f":user:{user.pk}"), dry_run=dry_run)
            ledger.delete(ScopeChange.objects.filter(key__endswith=f":user:{user.pk}"), dry_run=dry_run)
        elif not dry_run:
            # As when an enrolment ends: admin access follows staff enrolments.
            sync_staff_flag(user)
        audit_forget(subject, ledger, dry_run=dry_run)

    def export(self, subject: Subject):
        user = subject.user
        sessions = (
            TutorSession.objects.filter(student=user)
            .select_related("task__course")
            .prefetch_related("messages")
            .order_by("created_at")
        )
        events = (
            AuditEvent.objects.filter(_about(user))
            .select_related("course")
            .annotate(by_you=ExpressionWrapper(Q(actor_id=user.pk), output_field=models.BooleanField()))
            .order_by("created_at", "id")
        )
        return TutorExportSerializer(
            {
                "enrollments": Enrollment.objects.filter(user=user).select_related("course"),
                "sessions": sessions,
                "ai_notice_acknowledgements": NoticeAcknowledgement.objects.filter(user=user).select_related(
                    "course"
                ),
                "audit_events": events,
            }
        ).data

    def export_serializer(self):
        return TutorExportSerializer()


def _about(user) -> Q:
    """Audit events made by ``user`` or naming them in their data."""
    user_type = ContentType.objects.get_for_model(user)
    return (
        Q(actor_id=user.pk)
        | Q(target_type=user_type, target_id=str(user.pk))
        | Q(extra__username=user.get_username())
    )


def audit_forget(subject: Subject, ledger: Ledger, *, dry_run: bool) -> None:
    """The audit trail keeps its events (SPEC §8, §13) but not the person:
    their own events lose their name and their reason (free text they
    wrote); events about rows the erasure removed forget how those rows read
    (``target_repr``); every other mention of them becomes the pseudonym."""
    user_type = ContentType.objects.get_for_model(subject.user)
    forgotten = {(user_type.pk, str(subject.user_id))}
    for label, pks in ledger.targets.items():
        model_type = ContentType.objects.get_by_natural_key(*label.lower().split("."))
        forgotten |= {(model_type.pk, pk) for pk in pks}
    mentions = Q(actor_id=subject.user_id)
    for form in json_number_forms(subject.user_id):
        mentions |= Q(_extra__contains=form)
    for identifier in subject.identifiers:
        mentions |= Q(actor_label__iexact=identifier) | Q(target_repr__icontains=identifier)
        mentions |= Q(reason__icontains=identifier) | Q(_extra__icontains=identifier)
        # Django's JSON column on SQLite stores "é" as "\u00e9".
        mentions |= Q(_extra__icontains=json.dumps(identifier)[1:-1])
    for type_id, pk in forgotten:
        mentions |= Q(target_type_id=type_id, target_id=pk)
    rows = (
        subject.in_scope(AuditEvent.objects.all(), "course_id")
        .annotate(_extra=Cast("extra", models.TextField()))
        .filter(mentions)
    )
    pseudonym = subject.pseudonym.get_username()
    changed = 0
    for event in rows.iterator(chunk_size=200):
        own = event.actor_id == subject.user_id
        erased_target = (event.target_type_id, event.target_id) in forgotten
        updates = {
            "actor_id": None if own else event.actor_id,
            "actor_label": pseudonym if own else scrub_text(event.actor_label, subject),
            "reason": "" if own else scrub_text(event.reason, subject),
            "target_repr": ERASED_REPR if erased_target else scrub_text(event.target_repr, subject),
            # An erased row's event keeps its counts, not what the row said.
            "extra": _counts_only(event.extra) if erased_target else scrub_json(event.extra, subject),
        }
        if erased_target and event.target_type_id == user_type.pk:
            updates["target_id"] = str(subject.pseudonym.pk or "")
        if all(getattr(event, name) == value for name, value in updates.items()):
            continue
        changed += 1
        if not dry_run:
            AuditEvent.objects.filter(pk=event.pk).update(**updates)
    ledger.pseudonymise(AuditEvent, changed)


FORGOTTEN_TEXT = "(erased)"


def _forget_in(value, texts: tuple[str, ...]):
    if isinstance(value, dict):
        return {k: _forget_in(v, texts) for k, v in value.items()}
    if isinstance(value, list):
        return [_forget_in(v, texts) for v in value]
    if isinstance(value, str):
        for text in texts:
            value = value.replace(text, FORGOTTEN_TEXT)
    return value


def texts_forget(*, texts, course_ids, dry_run: bool) -> int:
    """Replace ``texts`` (something an erased person wrote that reached
    others' tutor requests, such as a course fact only they stated) in the
    model calls and tutor replies of ``course_ids``. Returns the rows changed."""
    texts = tuple(sorted({t for t in texts if t}, key=len, reverse=True))
    if not texts:
        return 0
    changed = 0
    found = Q()
    for text in texts:
        # In the stored JSON a line break or a quote stands escaped.
        found |= Q(_request__contains=json.dumps(text, ensure_ascii=False)[1:-1])
        found |= Q(_request__contains=text) | Q(response_text__contains=text)
    calls = ModelCall.objects.filter(course_id__in=list(course_ids)).annotate(
        _request=Cast("request_messages", models.TextField())
    )
    for call in calls.filter(found).iterator(chunk_size=200):
        request, response = _forget_in(call.request_messages, texts), _forget_in(call.response_text, texts)
        if (request, response) == (call.request_messages, call.response_text):
            continue  # matched by a case-insensitive LIKE only
        changed += 1
        if not dry_run:
            ModelCall.objects.filter(pk=call.pk).update(request_messages=request, response_text=response)
    said = Q()
    for text in texts:
        said |= Q(content__contains=text)
    replies = TutorMessage.objects.filter(session__task__course_id__in=list(course_ids), role="assistant")
    for message in replies.filter(said).iterator(chunk_size=200):
        content = _forget_in(message.content, texts)
        if content == message.content:
            continue
        changed += 1
        if not dry_run:
            TutorMessage.objects.filter(pk=message.pk).update(content=content)
    return changed


def _counts_only(value):
    """``value`` without its strings: numbers, flags and structure stay."""
    if isinstance(value, dict):
        return {k: _counts_only(v) for k, v in value.items() if not isinstance(v, str)}
    if isinstance(value, list):
        return [_counts_only(v) for v in value if not isinstance(v, str)]
    return value


EXPIRED_LABEL = "(expired)"


def audit_expire(*, scope, before, limit, dry_run) -> int:
    """Audit events past their retention keep what happened -- event, course,
    target, states, time and counts -- but no longer who or why (SPEC §13):
    the actor, the reason, how the target read and the texts of ``extra``."""
    from django.db import transaction

    rows = scope.of(
        AuditEvent.objects.filter(created_at__lt=before).exclude(actor_label=EXPIRED_LABEL), "course_id"
    )
    if dry_run:
        return rows.count()
    with transaction.atomic():
        events = list(rows.order_by("pk").only("pk", "extra")[:limit])
        for event in events:
            AuditEvent.objects.filter(pk=event.pk).update(
                actor=None,
                actor_label=EXPIRED_LABEL,
                reason="",
                target_repr="",
                extra=_counts_only(event.extra),
            )
    return len(events)
