"""Detecting and recording corrections (SPEC §5): from a stored tutor message
(the Celery task) or from an explicit ``POST /api/corrections/``. Details:
docs/architecture.md, Correction detection.
"""

from __future__ import annotations

import hashlib
import logging
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.utils import timezone
from rest_framework import status

from corrections import classifier
from corrections.conf import rate_limit
from corrections.detection import Detection
from corrections.models import Classifier, Correction, Source
from corrections.selectors import recent_assistant_message, user_message_text
from corrections.services.routing import route, session_scoped
from corrections.text import topic_key
from tutor.kernel.errors import DomainError
from tutor.kernel.redaction import markers_in, redact, unmarked
from tutor.models import TutorMessage

log = logging.getLogger(__name__)


class RateLimited(DomainError):
    status_code = status.HTTP_429_TOO_MANY_REQUESTS
    code = "throttled"
    default_message = "Too many corrections; try again later."


def dedupe_key(detection: Detection, session_id) -> str:
    scope = str(session_id) if session_scoped(detection) else ""
    raw = "|".join([detection.type, topic_key(detection.topic), detection.statement_key, scope])
    return hashlib.sha256(raw.encode()).hexdigest()[:64]


def correction_detect_message(*, message_id, correlation_id: str = "") -> Correction | None:
    """Detection for one stored user message (the task's service). Safe to
    run twice: the second run finds the first's correction."""
    # The cheap path reads the text alone; the message's session, task and
    # student are loaded only for a candidate.
    content = user_message_text(message_id)
    if content is None or not classifier.gate(content):
        return None
    message = (
        TutorMessage.objects.select_related("session__task__course", "session__student")
        .filter(pk=message_id, role=TutorMessage.Role.USER)
        .first()
    )
    if message is None:
        return None
    session = message.session
    assistant = recent_assistant_message(session_id=session.pk, before_position=message.position)
    correction, _ = _record(
        user=session.student,
        course=session.task.course,
        session=session,
        message=message,
        content=message.content,
        assistant=assistant,
        source=Source.CHAT,
        correlation_id=correlation_id or message.correlation_id,
        refuse_over_limit=False,
    )
    return correction


def correction_submit(*, user, course, content: str, session=None, correlation_id: str = ""):
    """Explicit detection on ``content`` (SPEC §5); ``session`` (the caller's
    own) gives the assistant statement it refers to. Returns (correction or
    None, created)."""
    if not classifier.gate(content):
        return None, False
    assistant = None
    if session is not None:
        assistant = recent_assistant_message(session_id=session.pk, before_position=session.message_count + 1)
    return _record(
        user=user,
        course=course,
        session=session,
        message=None,
        # A chat message was stored so; here the student's markers are made plain text too.
        content=unmarked(content),
        assistant=assistant,
        source=Source.EXPLICIT,
        correlation_id=correlation_id,
        refuse_over_limit=True,
    )


def _record(
    *, user, course, session, message, content, assistant, source, correlation_id, refuse_over_limit
) -> tuple[Correction | None, bool]:
    redacted = redact(content)
    reference = redact(assistant).text if assistant else None
    # Outside any transaction: a slow model never holds a lock.
    detection = classifier.classify(
        message=redacted.text,
        assistant=reference,
        course_id=course.pk,
        correlation_id=correlation_id or None,
        student_id=user.pk,
    )
    if detection is None:
        return None, False
    key = dedupe_key(detection, session.pk if session else None)
    earlier = _earlier(user=user, course=course, key=key, message=message)
    if earlier is not None:
        return earlier, False
    limit, seconds = rate_limit()
    try:
        with transaction.atomic(durable=True):
            if _recent_count(user=user, seconds=seconds) >= limit:
                if refuse_over_limit:
                    raise RateLimited(f"at most {limit} corrections per {seconds} seconds; try again later")
                log.warning(
                    "correction rate limit reached for user %s; message %s not recorded", user.pk, message.pk
                )
                return None, False
            correction = correction_insert(
                user=user,
                course=course,
                session=session,
                message=message,
                source=source,
                detection=detection,
                content=redacted,
                key=key,
                correlation_id=correlation_id,
            )
            routed = route(correction=correction, detection=detection)
            correction.tiers = [str(t) for t in routed.tiers]
            correction.fact, correction.case = routed.fact, routed.case
            correction.proposal, correction.memory = routed.proposal, routed.memory
            correction.save(update_fields=["tiers", "fact", "case", "proposal", "memory"])
    except IntegrityError:
        # The same message or the same words recorded meanwhile (a duplicate
        # delivery, a double click): that one is the record.
        earlier = _earlier(user=user, course=course, key=key, message=message)
        if earlier is None:
            raise
        return earlier, False
    return correction, True


# The advisory lock's first key: the corrections rate limit (its second is the user's).
RATE_LOCK_CLASS = 0x636F7272  # "corr"


def _recent_count(*, user, seconds: int) -> int:
    """The user's corrections of the last ``seconds``, counted under a lock
    of the user's own, so that two recordings of one user count one after
    the other and never pass the limit together (SPEC §5 abuse limits).
    On PostgreSQL a transaction-level advisory lock: no row is locked, so no
    other writer of the user's row (an enrolment changing ``is_staff``) can
    deadlock with the course lock the routing takes next. SQLite's
    IMMEDIATE transactions hold its one write lock already."""
    connection = transaction.get_connection()
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", [RATE_LOCK_CLASS, str(user.pk)])
    since = timezone.now() - timedelta(seconds=seconds)
    return Correction.objects.filter(user=user, created_at__gte=since).count()


def _earlier(*, user, course, key: str, message) -> Correction | None:
    if message is not None:
        found = Correction.objects.filter(message=message).first()
        if found is not None:
            return found
    return Correction.objects.filter(user=user, course=course, dedupe_key=key).first()


def correction_insert(
    *, user, course, session, message, source, detection: Detection, content, key, correlation_id
):
    tokens = list(detection.topic)
    return Correction.objects.create(
        course=course,
        user=user,
        session=session,
        message=message,
        source=source,
        type=detection.type,
        confidence=detection.confidence,
        classifier=Classifier(detection.classifier),
        topic=" ".join(tokens),
        topic_tokens=tokens,
        topic_key=topic_key(tokens),
        token_count=len(tokens),
        original_statement=detection.original_statement,
        corrected_statement=detection.corrected_statement,
        content=content.text,
        redactions=markers_in(content.text),
        statement_key=detection.statement_key,
        dedupe_key=key,
        correlation_id=correlation_id[:64],
    )
