"""The tool's signing keys (SPEC §12): generated and rotated by a command.

Rule: exactly one key signs (``active``). A rotation retires it and creates
the next one in the same transaction; the retired key stays in the JWKS for
``LTI_KEY_GRACE_DAYS`` so that a platform holding a token or a cached key
set from just before the rotation still verifies, and is deleted -- private
half included -- once that period is over. Private keys exist only in the
database: never in the repository, a command's output or a log line.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from jwcrypto.jwk import JWK
from pylti1p3.registration import Registration as PyltiRegistration

from tutor.audit import audit_record
from tutor.lti.models import ToolKey
from tutor.models import AuditEvent

KEY_BITS = 2048  # RS256 with 2048-bit RSA: what LTI 1.3 platforms expect


def _new_key() -> ToolKey:
    pair = JWK.generate(kty="RSA", size=KEY_BITS)
    public_pem = pair.export_to_pem().decode()
    # The kid the library puts in the client assertion's header: the same
    # computation, so the JWKS and the assertions always agree.
    kid = PyltiRegistration.get_jwk(public_pem)["kid"]
    return ToolKey.objects.create(
        kid=kid,
        public_pem=public_pem,
        private_pem=pair.export_to_pem(private_key=True, password=None).decode(),
    )


def tool_key_generate() -> tuple[ToolKey, bool]:
    """The active key, made if there is none; (key, created)."""
    with transaction.atomic(durable=True):
        current = ToolKey.objects.select_for_update().filter(status=ToolKey.Status.ACTIVE).first()
        if current is not None:
            return current, False
        key = _new_key()
        audit_record(actor=None, event=AuditEvent.Event.LTI_KEY_ROTATED, target=key, to_state=key.status)
    return key, True


def tool_key_rotate() -> tuple[ToolKey, ToolKey | None]:
    """Retire the active key and make a new one; (new, retired or None).
    Keys retired longer than the grace period ago are deleted."""
    now = timezone.now()
    with transaction.atomic(durable=True):
        old = ToolKey.objects.select_for_update().filter(status=ToolKey.Status.ACTIVE).first()
        if old is not None:
            # Conditional: a concurrent rotation that got here first wins.
            retired = ToolKey.objects.filter(pk=old.pk, status=ToolKey.Status.ACTIVE).update(
                status=ToolKey.Status.RETIRED, retired_at=now
            )
            if retired != 1:
                old = None
        key = _new_key()
        audit_record(
            actor=None,
            event=AuditEvent.Event.LTI_KEY_ROTATED,
            target=key,
            from_state=old.kid if old is not None else "",
            to_state=key.status,
            extra={"retired": old.kid if old is not None else None},
        )
        tool_keys_purge(now=now)
    return key, old


def grace_cutoff(now=None):
    return (now or timezone.now()) - timedelta(days=settings.LTI_KEY_GRACE_DAYS)


def tool_keys_purge(*, now=None) -> int:
    """Delete keys retired before the grace period; their tokens have expired."""
    deleted, _ = ToolKey.objects.filter(
        status=ToolKey.Status.RETIRED, retired_at__lt=grace_cutoff(now)
    ).delete()
    return deleted
