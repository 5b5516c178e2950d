"""Settings with a default in the code, read on every tutor request (SPEC §10).

``getattr(settings, NAME, default)`` raises and catches an AttributeError
inside Django's settings object each time NAME is not set, which is the
usual case for a budget or a limit: read that way, a context preview pays
for a few dozen exceptions. The value read is kept until a setting changes
(``override_settings`` and the test ``settings`` fixture announce it).
"""

from __future__ import annotations

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

_read: dict[str, object] = {}


def optional_setting(name: str, default):
    """The setting ``name``, or ``default`` when it is not set."""
    try:
        return _read[name]
    except KeyError:
        value = _read[name] = getattr(settings, name, default)
        return value


@receiver(setting_changed)
def _forget(**kwargs) -> None:
    _read.clear()
