"""Who an erasure is about: the person, their stand-in and the strings that
name them (SPEC §13).

A record the course keeps (an attempt's verdicts, an audit event) points at
a stand-in user instead of the person: ``erased-<hash>``, inactive, without
a password, the hash a keyed digest of the person's id and join time -- the
same person always gets the same stand-in (a course erased now, the rest
later), and nobody can compute it from a name.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model

from tutor.rights.registry import Subject, parts

PSEUDONYM_PREFIX = "erased-"
PSEUDONYM_HASH_CHARS = 12
# A name shorter than this is not replaced in kept text ("Al" in "Always").
MIN_IDENTIFIER_CHARS = 4
# JSON keys whose integer values are user ids (an audit event's "students").
PERSON_KEYS = re.compile(r"^(user|users|student|students|actor|actors)(_ids?)?$")


def json_number_forms(number: int) -> tuple[str, ...]:
    """How an integer stands as a JSON value in stored text (spaced or
    compact): a LIKE for these finds it without matching every "7" in a text."""
    n = int(number)
    return (
        f"[{n},", f"[{n}]", f", {n},", f", {n}]", f",{n},", f",{n}]",
        f": {n},", f": {n}}}", f":{n},", f":{n}}}",
    )  # fmt: skip


def pseudonym_name(user) -> str:
    message = f"erasure\n{user.pk}\n{user.date_joined.isoformat()}".encode()
    digest = hmac.new(settings.SECRET_KEY.encode(), message, hashlib.sha256).hexdigest()
    return f"{PSEUDONYM_PREFIX}{digest[:PSEUDONYM_HASH_CHARS]}"


def pseudonym_user(user):
    """The person's stand-in user, made on first use."""
    User = get_user_model()
    stand_in, created = User.objects.get_or_create(
        username=pseudonym_name(user), defaults={"is_active": False}
    )
    if created:
        stand_in.set_unusable_password()
        stand_in.save(update_fields=["password"])
    return stand_in


def is_pseudonym(user) -> bool:
    return user.get_username().startswith(PSEUDONYM_PREFIX) and not user.has_usable_password()


def identifiers_of(user) -> tuple[str, ...]:
    """Strings naming ``user``: username, e-mail, full name and the apps' own
    (LTI subjects and the names the LMS sent), longest first."""
    found = {user.get_username(), user.email, user.get_full_name()}
    for part in parts():
        found.update(part.identifiers(user))
    return tuple(
        sorted({s for s in found if s and len(s) >= MIN_IDENTIFIER_CHARS}, key=lambda s: (-len(s), s))
    )


def scan_needles(user) -> tuple[str, ...]:
    """What the residue scan looks for (SPEC §13): username, e-mail, LTI ``sub``."""
    found = {user.get_username(), user.email}
    for part in parts():
        found.update(part.scan_identifiers(user))
    return tuple(sorted(s for s in found if s))


def subject_for(user, *, course_ids=None, pseudonym=None) -> Subject:
    return Subject(
        user=user,
        course_ids=tuple(course_ids) if course_ids is not None else None,
        pseudonym=pseudonym,
        identifiers=identifiers_of(user),
    )


def scrub_text(text: str, subject: Subject) -> str:
    """``text`` with every identifier of the subject replaced by its stand-in's name."""
    if not text:
        return text
    name = subject.pseudonym.get_username()
    for identifier in subject.identifiers:
        text = re.sub(re.escape(identifier), name, text, flags=re.IGNORECASE)
    return text


def scrub_json(value: Any, subject: Subject, key: str = "") -> Any:
    """``value`` with identifiers replaced in its strings and the person's id,
    under a key naming users (``PERSON_KEYS``), replaced by the stand-in's."""
    if isinstance(value, dict):
        return {k: scrub_json(v, subject, str(k)) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_json(v, subject, key) for v in value]
    if isinstance(value, str):
        return scrub_text(value, subject)
    if isinstance(value, int) and not isinstance(value, bool) and PERSON_KEYS.match(key):
        return subject.pseudonym.pk if value == subject.user_id else value
    return value
