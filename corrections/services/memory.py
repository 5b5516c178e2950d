"""Session and user memory: the writes (SPEC §5 table; seed 002 §3.2).

Rules: a repeat of the same statement is the same item (counts once); a
user's newer factual correction on the same topic replaces their older one
(the seed keys user memory by topic); negative feedback lives in its session
for ``CORRECTIONS_NEGATIVE_TTL_SECONDS`` and never beyond it.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import CharField, Value
from django.db.models.functions import Cast, Concat
from django.utils import timezone

from corrections.conf import setting
from corrections.models import Correction, CorrectionType, MemoryItem, MemoryTier, MemoryToken
from corrections.selectors.memory_snapshot import memory_changed
from corrections.text import jaccard, topic_key
from tutor.audit import audit_record
from tutor.models import AuditEvent


def memory_tokens(item: MemoryItem, tokens) -> list[MemoryToken]:
    """The token rows of ``item``, with the copies of its fields they carry."""
    return [
        MemoryToken(
            memory=item,
            user_id=item.user_id,
            tier=item.tier,
            kind=item.kind,
            updated_at=item.updated_at,
            token=t,
        )
        for t in dict.fromkeys(tokens)
    ]


def _set_tokens(item: MemoryItem, tokens: list[str], *, replace: bool) -> None:
    # Called after every save of an item: its tokens carry its updated_at.
    if replace:
        MemoryToken.objects.filter(memory=item).delete()
    MemoryToken.objects.bulk_create(memory_tokens(item, tokens))
    memory_changed(item.user_id)  # after the writes: outside a transaction it publishes at once


def _same_topic_fact(*, user, tokens: list[str]) -> MemoryItem | None:
    if not tokens:
        return None
    candidates = MemoryItem.objects.filter(
        user=user, tier=MemoryTier.USER, kind=CorrectionType.FACTUAL, tokens__token__in=tokens
    ).distinct()[:50]
    match = setting("CORRECTIONS_TOPIC_MATCH")
    scored = [(jaccard(tokens, item.topic_tokens), item) for item in candidates]
    scored = [pair for pair in scored if pair[0] >= match]
    return max(scored, key=lambda pair: pair[0])[1] if scored else None


def memory_remember(
    *,
    user,
    course,
    tier: str,
    kind: str,
    content: str,
    tokens: list[str],
    statement_key: str,
    session=None,
    now: datetime | None = None,
) -> MemoryItem:
    """Write one memory item, or return (and refresh) the one it repeats.
    Runs inside the correction's transaction."""
    now = now or timezone.now()
    expires_at = None
    if kind == CorrectionType.NEGATIVE:
        expires_at = now + timedelta(seconds=setting("CORRECTIONS_NEGATIVE_TTL_SECONDS"))
    scope = {"session": session} if tier == MemoryTier.SESSION else {"session__isnull": True}
    existing = MemoryItem.objects.filter(
        user=user, tier=tier, kind=kind, statement_key=statement_key, **scope
    ).first()
    if existing is None and tier == MemoryTier.USER and kind == CorrectionType.FACTUAL:
        existing = _same_topic_fact(user=user, tokens=tokens)
    fields = {
        "content": content,
        "statement_key": statement_key,
        "topic": " ".join(tokens),
        "topic_tokens": tokens,
        "topic_key": topic_key(tokens),
        "token_count": len(tokens),
        "expires_at": expires_at,
        "course": course,
    }
    if existing is not None:
        # Conditional: the owner may have forgotten it since it was read
        # (``memory_forget`` commits its DELETE first). Then no row is
        # refreshed and no token is written for it: it is remembered anew.
        stamp = timezone.now()
        if MemoryItem.objects.filter(pk=existing.pk).update(**fields, updated_at=stamp) == 1:
            for name, value in {**fields, "updated_at": stamp}.items():
                setattr(existing, name, value)
            _set_tokens(existing, tokens, replace=True)
            return existing
    item = MemoryItem.objects.create(user=user, tier=tier, kind=kind, session=session, **fields)
    _set_tokens(item, tokens, replace=False)
    return item


def _delete_own_item(*, item_id, user_id) -> int:
    """One ``DELETE ... WHERE id = … AND user_id = …``; its row count is the
    decision. Not through the ORM's collector: that reads the item first and
    deletes by the id it read, so two concurrent forgets both "succeed".
    Foreign keys (its tokens, the corrections naming it) are checked at
    commit, when both are gone."""
    meta = MemoryItem._meta
    quote = connection.ops.quote_name
    table, pk, owner = quote(meta.db_table), quote(meta.pk.column), quote(meta.get_field("user").column)
    params = [meta.pk.get_db_prep_value(item_id, connection), user_id]
    with connection.cursor() as cursor:
        # Identifiers come from model metadata; the values are parameters.
        cursor.execute(f"DELETE FROM {table} WHERE {pk} = %s AND {owner} = %s", params)  # noqa: S608
        return cursor.rowcount


def memory_forget(*, user, item_id: uuid.UUID) -> bool:
    """Delete a session or user item at its owner's request (SPEC §5:
    ``DELETE /api/memory/{id}/``); False when ``user`` has no such item.

    A conditional transition: the one DELETE of the owner's row decides, so of
    two concurrent forgets exactly one wins (the other waits for the row and
    then deletes nothing: False, the same answer as for an unknown id) and
    only the winner removes the item's tokens, releases its corrections and
    writes the ``memory_forgotten`` audit row. The corrections that wrote it
    are kept as records, but no longer block the same words from being
    remembered again (they counted once while remembered). The audit row
    keeps the item's tier and kind, not its words: forgetting forgets them."""
    with transaction.atomic(durable=True):
        known = MemoryItem.objects.filter(pk=item_id, user=user).values("tier", "kind", "course_id").first()
        if known is None or _delete_own_item(item_id=item_id, user_id=user.pk) != 1:
            return False
        memory_changed(user.pk)
        tokens, _ = MemoryToken.objects.filter(memory_id=item_id).delete()
        Correction.objects.filter(memory_id=item_id).update(
            memory=None, dedupe_key=Concat(Value("forgotten:"), Cast("id", output_field=CharField()))
        )
        audit_record(
            actor=user,
            event=AuditEvent.Event.MEMORY_FORGOTTEN,
            # The deleted row, as far as the record needs it (not its content).
            target=MemoryItem(pk=item_id, tier=known["tier"], kind=known["kind"], content=""),
            course=known["course_id"],
            from_state=known["tier"],
            extra={"kind": known["kind"], "tokens": tokens},
        )
    return True


def memory_purge_expired(*, now: datetime | None = None) -> int:
    """Delete expired items (negative feedback after its hour)."""
    _, per_model = MemoryItem.objects.filter(expires_at__lte=now or timezone.now()).delete()
    return per_model.get(MemoryItem._meta.label, 0)
