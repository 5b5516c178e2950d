"""The AI notice (SPEC §13; EU AI Act Art. 50: a person is told they are
talking to an AI system).

What it says comes from settings, never a key: that replies and reviews come
from an AI system, the provider (``AI_NOTICE_PROVIDER``, by default the host
of ``TUTOR_LLM_BASE_URL``) and model, what is sent to it and how long each
kind of data is kept. Its version is ``AI_NOTICE_VERSION`` and a digest of
those facts: a new provider, model or retention asks every student again.
A course with ``ai_notice_required`` refuses tutor messages (409
``ai_notice_required``) until the student acknowledged the current version;
the check reads what the turn's one statement already read
(``tutor.chat.selectors.owned_session``), so it adds no query.
"""

from __future__ import annotations

import functools
import hashlib
import json
from urllib.parse import urlsplit

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from tutor.kernel.errors import Conflict, InvalidInput
from tutor.models import Enrollment, NoticeAcknowledgement, RetentionKind, RetentionOverride

SENT_TO_THE_MODEL = (
    "your messages to the tutor, with the earlier messages of the conversation",
    "the task, its rubric and the feedback of your latest review",
    "the evidence you submit for review (report, files, CI result)",
    "course facts, your own preferences and memory items, and lessons staff approved",
)
REDACTED_FIRST = (
    "Secrets (keys, tokens, passwords) and e-mail addresses are replaced before anything is sent."
)
NOT_SENT = "The tutor does not add your name, username or e-mail address to what it sends."


class NoticeRequired(Conflict):
    code = "ai_notice_required"
    default_message = (
        "This course asks you to read the AI notice before you message the tutor: "
        "GET /api/courses/{course}/ai-notice/, then acknowledge it with a POST of its version."
    )


def provider() -> str:
    named = getattr(settings, "AI_NOTICE_PROVIDER", "") or ""
    if named:
        return named
    base = settings.TUTOR_LLM_BASE_URL
    # The host only: a URL may carry credentials (user:password@host).
    return urlsplit(base).hostname or "" if base else ""


def model_configured() -> bool:
    return bool(settings.TUTOR_LLM_BASE_URL)


def retention_days(kind: str) -> int:
    return int(getattr(settings, f"RETENTION_{kind.upper()}_DAYS", 0) or 0)


@functools.cache
def _version_for(facts: str) -> str:
    digest = hashlib.sha256(facts.encode()).hexdigest()[:8]
    return f"{settings.AI_NOTICE_VERSION}-{digest}"


def notice_version() -> str:
    """The current version: the configured text version and a digest of the facts it states."""
    facts = json.dumps(
        [provider(), settings.TUTOR_LLM_MODEL or "", [(k, retention_days(k)) for k in RetentionKind.values]]
    )
    return _version_for(facts)


def notice_for(*, course, user) -> dict:
    """The notice as the course's students read it, with their acknowledgement."""
    overrides = dict(RetentionOverride.objects.filter(course=course).values_list("kind", "days"))
    latest = NoticeAcknowledgement.objects.filter(user=user, course=course).first()
    return {
        "course": course.pk,
        "version": notice_version(),
        "ai_system": True,
        "model_configured": model_configured(),
        "provider": provider() if model_configured() else "",
        "model": settings.TUTOR_LLM_MODEL if model_configured() else "",
        "sent": list(SENT_TO_THE_MODEL) if model_configured() else [],
        "redaction": REDACTED_FIRST,
        "not_sent": NOT_SENT,
        "retention": [
            {"kind": kind, "label": str(label), "days": overrides.get(kind, retention_days(kind))}
            for kind, label in RetentionKind.choices
        ],
        "required": course.ai_notice_required,
        "acknowledged_version": latest.version if latest else None,
        "acknowledged_at": latest.acknowledged_at if latest else None,
    }


def notice_acknowledge(*, user, course, version: str) -> NoticeAcknowledgement:
    """Record that ``user`` read ``version`` of the notice in ``course``; a
    version other than the current one is refused (the notice changed)."""
    if version != notice_version():
        raise InvalidInput(
            "the notice has changed: read it again and acknowledge its new version", field="version"
        )
    try:
        with transaction.atomic():
            return NoticeAcknowledgement.objects.create(
                user=user, course=course, version=version, acknowledged_at=timezone.now()
            )
    except IntegrityError:  # acknowledged before: the first time counts...
        ack = NoticeAcknowledgement.objects.get(user=user, course=course, version=version)
    # ...unless another version was acknowledged since (a model set back): the
    # turn's check and /api/me/ read the newest acknowledgement, so this one is.
    if (
        NoticeAcknowledgement.objects.filter(user=user, course=course).values_list("pk", flat=True)[0]
        != ack.pk
    ):
        ack.acknowledged_at = timezone.now()
        ack.save(update_fields=["acknowledged_at"])
    return ack


def notice_check(*, course, acknowledged_version: str | None) -> None:
    """A required notice must be acknowledged in its current version."""
    if course.ai_notice_required and acknowledged_version != notice_version():
        raise NoticeRequired(NoticeRequired.default_message.replace("{course}", str(course.pk)))


def notice_check_for(*, user, course) -> None:
    """``notice_check`` for a path outside the tutor turn that sends a
    student's words to the model (an explicit correction): its own reads,
    only for a course that requires the notice; course staff are not asked."""
    if not course.ai_notice_required:
        return
    if not Enrollment.objects.filter(user=user, course=course, role=Enrollment.Role.STUDENT).exists():
        return
    latest = NoticeAcknowledgement.objects.filter(user=user, course=course).values_list("version", flat=True)
    notice_check(course=course, acknowledged_version=latest.first())
