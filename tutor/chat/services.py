"""Tutor sessions and messages: the writes (SPEC §4).

Server-side history is the only truth; a client's copy of it is never read.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import DatabaseError, DataError, IntegrityError, router, transaction
from django.db.models import F, Q
from django.utils import timezone

from tutor import llm
from tutor.chat.assembler import AssembledContext, assemble_context, context_send_effects
from tutor.chat.offline import offline_reply
from tutor.chat.selectors import SessionRead, earlier_messages
from tutor.context.providers import SendEffects
from tutor.db.guarded_writes import Row, counts_run, guarded_write, insert_in_order
from tutor.db.inserts import prepared_insert
from tutor.db.prepared import PreparedUpdate
from tutor.kernel.errors import Conflict, ServiceUnavailable
from tutor.kernel.redaction import redact, unmarked
from tutor.models import NoticeAcknowledgement, Task, TutorMessage, TutorSession
from tutor.rights.notice import notice_check
from tutor.signals import user_message_handled, user_message_records

log = logging.getLogger(__name__)

TUTOR_UNAVAILABLE_MESSAGE = (
    "The tutor is unavailable right now. Your message was saved; please try again in a moment."
)


class SessionBusy(Conflict):
    """A reply to an earlier message of this session is still being produced."""


class SessionArchived(Conflict):
    pass


class TutorUnavailable(ServiceUnavailable):
    code = "model_unavailable"
    default_message = TUTOR_UNAVAILABLE_MESSAGE


def session_open(*, student, task: Task, new: bool = False) -> tuple[TutorSession, bool]:
    """The student's open session for ``task`` (created when there is none);
    with ``new`` the open one is archived and a fresh one started."""
    for _ in range(3):  # two first requests at once: one insert wins, the other reads it
        try:
            with transaction.atomic():
                current = TutorSession.objects.filter(student=student, task=task, archived=False).first()
                if current is not None and not new:
                    return current, False
                if current is not None:
                    TutorSession.objects.filter(pk=current.pk, archived=False).update(
                        archived=True, archived_at=timezone.now()
                    )
                return TutorSession.objects.create(student=student, task=task), True
        except IntegrityError:
            continue
    raise SessionBusy("the session is being created by another request; try again")


@dataclass
class Exchange:
    user_message: TutorMessage
    reply: TutorMessage
    context: AssembledContext


def reply_claim_expiry():
    """Claims older than this belong to no running request (SPEC §4): the
    request that took one ends within ``TUTOR_REQUEST_BUDGET`` -- its model
    call cannot take longer, and the web server's worker timeout, which is
    longer still, kills it otherwise. A web worker killed meanwhile leaves
    its claim behind; after the budget the session takes messages again."""
    return timezone.now() - timedelta(seconds=settings.TUTOR_REQUEST_BUDGET)


def claim_update(*, session_id, now, expired_before):
    """Take the reply slot of an open session whose slot is free or whose
    claim is older than ``expired_before`` (``reply_claim_expiry``), and
    count the user message the claim is taken for: the count it leaves is
    that message's position."""
    claimable = TutorSession.objects.filter(pk=session_id, archived=False).filter(
        Q(reply_pending_since__isnull=True) | Q(reply_pending_since__lt=expired_before)
    )
    return claimable, {"reply_pending_since": now, "message_count": F("message_count") + 1}


# The turn's two writes to its session run on every message (SPEC §10):
# compiled once per process; each returns the message count it left.
CLAIM = PreparedUpdate(
    claim_update, returning="message_count", session_id="uuid", now="datetime", expired_before="datetime"
)


def reply_update(*, session_id, claim, count):
    """The count a stored reply leaves, and the claim released -- only while
    the request that took the claim at ``claim`` still holds it."""
    held = TutorSession.objects.filter(pk=session_id, reply_pending_since=claim)
    return held, {"message_count": count, "reply_pending_since": None}


REPLY = PreparedUpdate(
    reply_update, returning="message_count", session_id="uuid", claim="datetime", count="int"
)
# And its two messages (each with its signals: the detection outbox row is a receiver's).
MESSAGE = prepared_insert(TutorMessage)


def _claim(session: TutorSession, content: str, correlation_id: str) -> tuple:
    """Take the session's reply slot and store the user message it is taken
    for -- with the records other apps store with it (``user_message_records``) --
    in one atomic write (``tutor.db.guarded_writes``): nothing is written for a
    session that is busy or archived. Returns the claim's time, which is
    also its token (only the request holding it may store the reply or
    release it), and the stored message, at the position the claim's count
    gave it (the session's message count as the claim left it)."""
    now = timezone.now()
    using = router.db_for_write(TutorSession)
    message = TutorMessage(
        session=session, role=TutorMessage.Role.USER, content=content, correlation_id=correlation_id
    )
    rows = [Row(MESSAGE, message, from_guard=("position",))]
    for _, records in user_message_records.send(sender=TutorMessage, message=message):
        rows.extend(Row.of(record) for record in records or ())
    values = {"session_id": session.pk, "now": now, "expired_before": reply_claim_expiry()}
    claimed = guarded_write(
        CLAIM,
        values,
        rows,
        using=using,
        reread=lambda: (
            TutorSession.objects.using(using).values_list("message_count", flat=True).get(pk=session.pk)
        ),
    )
    if not claimed.count:
        # Read again: the session may have been archived since this request read it.
        archived = TutorSession.objects.using(using).filter(pk=session.pk, archived=True)
        if session.archived or archived.exists():
            raise SessionArchived("this session is archived; open a new one")
        raise SessionBusy("a reply to your previous message is still being written")
    return now, message


def sessions_release_stale(*, now=None) -> int:
    """Release every reply claim older than the tutor request budget (the
    periodic sweep's part of SPEC §4; the next message to such a session
    would take the claim over anyway). Returns how many were released."""
    cutoff = (now or timezone.now()) - timedelta(seconds=settings.TUTOR_REQUEST_BUDGET)
    return TutorSession.objects.filter(reply_pending_since__lt=cutoff).update(reply_pending_since=None)


def message_text(content: str) -> str:
    """A student's message as it is stored and sent: secrets a student pastes
    (a key, a password in a URL) are redacted first -- nothing a model or a
    ModelCall row receives holds them -- and markers the student typed are
    not taken for redactions (``unmarked``). The preview shows the same text."""
    return redact(unmarked(content)).text


def message_send(
    *, session: TutorSession, content: str, correlation_id: str, read: SessionRead | None = None
) -> Exchange:
    """Store the message, build the request, ask the model, store the reply
    with the effects of the send (``_store_reply``). The content is redacted
    first (``message_text``). ``read`` is what the caller read with the
    session (``owned_session``); without it, what the turn needs is read here.

    Raises SessionBusy/SessionArchived before storing anything, and
    TutorUnavailable after storing the user message (which is kept) -- also
    when the reply cannot be stored, or when this request outlived its
    budget and another one took the session over. The session's ``task``
    must come with ``course`` and ``current_rubric``.
    """
    _notice_check(session, read)
    content = message_text(content)
    try:
        # The claim and the message it is taken for, in one write: a session
        # that is busy, or whose next position was taken meanwhile (a request
        # that outlived its claim stored an exchange after all), is left as it was.
        claim, user_message = _claim(session, content, correlation_id)
    except IntegrityError:
        raise SessionBusy("a reply to your previous message is still being written") from None
    position = user_message.position
    reply = None
    try:
        context = assemble_context(
            snapshot_versions=read.versions if read is not None else None,
            student=session.student,
            task=session.task,
            message=content,
            earlier=_earlier(session, position, read),
            correlation_id=correlation_id,
            session_id=session.pk,
            preview=False,
            feedback=read.feedback if read is not None else None,
        )
        # No transaction is open here: a slow model never holds a lock.
        try:
            text, offline = _reply_text(session, context, content, correlation_id)
        except llm.ModelError as exc:
            log.warning("tutor model unavailable for session %s: %s", session.pk, exc)
            raise TutorUnavailable() from None
        # A reply is stored and re-sent as history redacted (SPEC §2): a model
        # that echoes a key puts it in neither the message table nor the next turn.
        text = message_text(text)
        reply = _store_reply(session, claim, user_message, text, context, offline=offline)
        return Exchange(user_message=user_message, reply=reply, context=context)
    finally:
        if reply is None:  # only the claim this request took
            TutorSession.objects.filter(pk=session.pk, reply_pending_since=claim).update(
                reply_pending_since=None
            )
            message_after_send(session=session, user_message=user_message, reply=None)


def _notice_check(session: TutorSession, read: SessionRead | None) -> None:
    """SPEC §13: a course may require the AI notice before the first tutor
    message -- a 409 ``ai_notice_required`` until the current version is
    acknowledged. What the student acknowledged was read with the session
    (``read``); without it, it is read here."""
    course = session.task.course
    if not course.ai_notice_required:
        return
    if read is not None:
        acknowledged = read.notice_acknowledged
    else:
        latest = NoticeAcknowledgement.objects.filter(user_id=session.student_id, course=course).first()
        acknowledged = latest.version if latest else None
    notice_check(course=course, acknowledged_version=acknowledged)


def _earlier(session: TutorSession, position: int, read: SessionRead | None) -> list[dict]:
    """The history before the message at ``position``: the newest messages
    read with the session (``read``) when the claim took the position after
    all of them -- nothing was written in between -- else read again."""
    if read is not None and position == session.message_count + 1:
        return read.history
    return earlier_messages(session.pk, before_position=position)


class _ClaimLost(Exception):
    pass


def _store_reply(session, claim, user_message, text: str, context, *, offline: bool) -> TutorMessage:
    """Store the reply, release the claim and write the send's effects
    (``context_send_effects``) atomically -- only while this request still
    holds the claim. The offline tutor's ModelCall row is written with them,
    and on its own when the reply is not stored. A reply that cannot be
    stored (the claim was taken over, or the database refuses it) is a 503
    like a model outage: the student's message is kept and they can send
    again.

    When no section's effects have a follow-up, the reply, its model call
    and the effects' records and counts are one write (``tutor.db.guarded_writes``).
    Else -- or should the database refuse that write (``REFUSED``): the
    effects may be what it refused -- the reply is stored in a transaction
    and the effects written after it in a savepoint of it (``_effects_write``),
    where a failing one is rolled back alone."""
    position = user_message.position + 1
    reply = TutorMessage(
        session=session, position=position, role=TutorMessage.Role.ASSISTANT,
        content=text, correlation_id=user_message.correlation_id, context_meta=context.meta,
    )  # fmt: skip
    call = _offline_call(session, context, text, user_message.correlation_id) if offline else None
    rows = [Row(MESSAGE, reply)] + ([Row(llm.MODEL_CALL, call)] if call is not None else [])
    using = router.db_for_write(TutorSession)
    release = {"session_id": session.pk, "claim": claim, "count": position}
    effects = _send_effects(context, user_message)
    try:
        stored = None
        if not any(found.follow_up is not None for found in effects):
            records = [Row.of(record) for found in effects for record in found.records]
            counts = [count for found in effects for count in found.counts]
            try:
                stored = guarded_write(REPLY, release, rows + records, using=using, counts=counts)
            except REFUSED:
                log.exception("session %s: the reply and its effects were refused as one write", session.pk)
        if stored is not None:
            if stored.count != 1:
                raise _ClaimLost
            _effects_written(effects, user_message)
            message_after_send(session=session, user_message=user_message, reply=reply)
            return reply
        with transaction.atomic(using=using):
            released = REPLY.run(using, **release)
            if released.count != 1:
                raise _ClaimLost
            MESSAGE.create_many([reply], using=using)
            if call is not None:
                llm.MODEL_CALL.create_many([call], using=using)
            _effects_write(effects, user_message, using)
            if transaction.get_rollback(using=using):
                # A savepoint could not be rolled back (the connection failed
                # meanwhile): leaving the block would roll everything back, silently.
                raise DatabaseError("the reply's transaction can only be rolled back")
            message_after_send(session=session, user_message=user_message, reply=reply)
            return reply
    except _ClaimLost:
        log.warning("session %s: the reply outlived its claim and was dropped", session.pk)
    except DatabaseError:
        log.exception("session %s: the reply could not be stored", session.pk)
    if offline:  # the call was made (and its row rolled back with the reply, if written)
        try:
            _record_offline_call(session, context, text, user_message.correlation_id)
        except DatabaseError:
            log.exception("session %s: the offline call of a dropped reply could not be recorded", session.pk)
    raise TutorUnavailable()


# A write the database refused for what it holds (a constraint, a value): the
# reply is written again with the effects apart. A failed connection or
# commit is not retried: whether it was written is not known.
REFUSED = (IntegrityError, DataError)


def _send_effects(context: AssembledContext, user_message: TutorMessage) -> list[SendEffects]:
    """The sections' effects of this send; none when working them out fails
    (logged: the exchange is stored anyway)."""
    try:
        return context_send_effects(context)
    except Exception:
        log.exception("after-send effects failed for message %s", user_message.pk)
        return []


def _effects_write(effects: list[SendEffects], user_message: TutorMessage, using: str) -> None:
    """The effects apart from the reply's write: their records, counts and
    follow-ups, in a savepoint of the reply's transaction, so that a failing
    effect is rolled back alone (logged: the exchange is stored anyway)."""
    if not effects:
        return
    try:
        with transaction.atomic(using=using):
            insert_in_order([record for found in effects for record in found.records], using=using)
            counts_run([count for found in effects for count in found.counts], using=using)
            for found in effects:
                if found.follow_up is not None:
                    found.follow_up()
            _effects_written(effects, user_message)
    except Exception:
        log.exception("after-send effects failed for message %s", user_message.pk)


def _effects_written(effects: list[SendEffects], user_message: TutorMessage) -> None:
    """Each section's step for its effects once written (logged when it
    fails: what was written stays)."""
    for found in effects:
        if found.written is None:
            continue
        try:
            found.written()
        except Exception:
            log.exception("a step after the effects of message %s failed", user_message.pk)


def _reply_text(session: TutorSession, context: AssembledContext, content: str, correlation_id: str):
    """The reply's text, and whether the offline tutor wrote it (its
    ModelCall row is then written with the reply: ``_store_reply``)."""
    if llm.is_configured():
        text = llm.chat(
            context.messages,
            purpose="tutor",
            correlation_id=correlation_id,
            temperature=0.3,
            course_id=session.task.course_id,
            student_id=session.student_id,
        )
        return text, False
    return offline_reply(task=session.task, feedback=context.feedback, message=content), True


def _offline_call(session: TutorSession, context: AssembledContext, text: str, correlation_id: str):
    return llm.offline_call(
        context.messages,
        purpose="tutor",
        reply=text,
        correlation_id=correlation_id,
        course_id=session.task.course_id,
        student_id=session.student_id,
    )


def _record_offline_call(session: TutorSession, context: AssembledContext, text: str, correlation_id: str):
    llm.MODEL_CALL.create_many([_offline_call(session, context, text, correlation_id)])


def message_after_send(
    *, session: TutorSession, user_message: TutorMessage, reply: TutorMessage | None
) -> None:
    """The one step that runs after a tutor turn (SPEC §4): the
    ``user_message_handled`` hook (correction detection), once the reply's
    transaction commits -- at once after a 503, and never when the reply's
    commit fails (the 503 that follows sends it). A failing listener is
    logged: the exchange is stored anyway."""
    transaction.on_commit(lambda: _message_handled(session, user_message, reply), robust=True)


def _message_handled(session: TutorSession, user_message: TutorMessage, reply: TutorMessage | None) -> None:
    for receiver, result in user_message_handled.send_robust(
        sender=TutorMessage, message=user_message, session=session, reply=reply
    ):
        if isinstance(result, Exception):
            log.error("user_message_handled receiver %r failed", receiver, exc_info=result)
