"""Settings with a default in the code, read on every tutor request (SPEC §10).

``getattr(settings, NAME, default)`` raises and catches an AttributeError
inside Django's settings object each time NAME is not set, which is the
usual case for a budget or a limit: read that way, a context preview pays
for a few dozen exceptions. The value read is kept until a setting changes
(``override_settings`` and the test ``settings`` fixture announce it) or the
settings object is replaced (``override_settings`` swaps it, also to delete
a setting). One name has one default wherever it is read. A value built
from several settings (``from_settings``) is kept the same way.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from django.conf import settings
from django.core.signals import setting_changed
from django.dispatch import receiver

T = TypeVar("T")
_MISSING = object()
_read: dict[object, object] = {}
_state = {"holder": None, "generation": 0}
_lock = threading.Lock()
# Where the settings object keeps what it wraps (``LazyObject`` stores it in
# its instance dict): read there, the check below is a dict lookup instead of
# a call of ``LazyObject.__getattribute__`` (about 0.6 µs, some fifty times per request).
_SETTINGS_DICT = object.__getattribute__(settings, "__dict__")


def optional_setting(name: str, default):
    """The setting ``name``, or ``default`` when it is not set."""
    if _SETTINGS_DICT["_wrapped"] is _state["holder"]:
        value = _read.get(name, _MISSING)
        if value is not _MISSING:
            return value
    return _kept(name, lambda: getattr(settings, name, default))


def from_settings(make: Callable[[], T]) -> T:
    """``make()``, a value built from settings only (a dataclass of limits),
    kept as the settings read here are: until a setting changes."""
    return _kept(make, make)


def _kept(key, read: Callable[[], T]) -> T:
    holder = _SETTINGS_DICT["_wrapped"]
    if holder is _state["holder"]:
        try:
            return _read[key]
        except KeyError:
            pass
    generation = _state["generation"]
    value = read()
    with _lock:
        if _state["generation"] == generation:
            if holder is not _state["holder"]:
                _read.clear()
                _state["holder"] = holder
            _read[key] = value
    return value


@receiver(setting_changed)
def _forget(**kwargs) -> None:
    with _lock:
        _read.clear()
        _state["generation"] += 1
