"""Settings with a default in the code, read on every tutor request (SPEC §10).

``getattr(settings, NAME, default)`` raises and catches an AttributeError
inside Django's settings object each time NAME is not set, which is the
usual case for a budget or a limit: read that way, a context preview pays
for a few dozen exceptions. The value read is kept until a setting changes
(``override_settings`` and the test ``settings`` fixture announce it) or the
settings object is replaced (``override_settings`` swaps it, also to delete
a setting). One name has one default wherever it is read.
"""

from __future__ import annotations

import threading

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

_read: dict[str, object] = {}
_state = {"holder": None, "generation": 0}
_lock = threading.Lock()


def optional_setting(name: str, default):
    """The setting ``name``, or ``default`` when it is not set."""
    holder = settings._wrapped
    if holder is _state["holder"]:
        try:
            return _read[name]
        except KeyError:
            pass
    generation = _state["generation"]
    value = getattr(settings, name, default)
    with _lock:
        if _state["generation"] == generation:
            if holder is not _state["holder"]:
                _read.clear()
                _state["holder"] = holder
            _read[name] = value
    return value


@receiver(setting_changed)
def _forget(**kwargs) -> None:
    with _lock:
        _read.clear()
        _state["generation"] += 1
