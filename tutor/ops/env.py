"""Reading configuration from environment variables (SPEC §1).

Every helper fails loudly with the variable's name: a bad value must stop the
process at start-up, not surface later as a confusing runtime error.
"""

from __future__ import annotations

import math
import os
import re
from urllib.parse import urlparse

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}
_RATE = re.compile(r"^\d+/(s|sec|second|m|min|minute|h|hour|d|day)$")


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    return None if value is None else value.strip()


def env_str(name: str, default: str | None = None) -> str | None:
    value = _raw(name)
    return default if value in (None, "") else value


def env_bool(name: str, default: bool = False) -> bool:
    value = _raw(name)
    if value is None:
        return default
    lowered = value.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be one of 1/0, true/false, yes/no, on/off; got {value!r}")


INTEGER_MAX = 2**63 - 1


def env_number(name: str, default: float, *, minimum: float = 0, integer: bool = False):
    value = _raw(name)
    if value in (None, ""):
        return default
    try:
        number = int(value) if integer else float(value)
    except ValueError:
        kind = "an integer" if integer else "a number"
        raise ImproperlyConfigured(f"{name} must be {kind}; got {value!r}") from None
    # float() reads "nan" and "inf", which no setting means; no setting needs
    # an integer beyond 64 bits (a timeout that large overflows the clock's float).
    if integer and abs(number) > INTEGER_MAX:
        raise ImproperlyConfigured(f"{name} must be at most {INTEGER_MAX}; got {value[:40]!r}")
    if not integer and not math.isfinite(number):
        raise ImproperlyConfigured(f"{name} must be a finite number; got {value!r}")
    if number < minimum:
        raise ImproperlyConfigured(f"{name} must be >= {minimum}; got {value!r}")
    return number


def env_int(name: str, default: int, *, minimum: int = 0) -> int:
    return env_number(name, default, minimum=minimum, integer=True)


def env_rate(name: str, default: str) -> str:
    """A DRF rate string such as ``30/min``."""
    value = env_str(name, default)
    if not _RATE.match(value):
        raise ImproperlyConfigured(f"{name} must be a rate like '30/min' or '100/hour'; got {value!r}")
    return value


def env_list(name: str, default: list[str]) -> list[str]:
    value = _raw(name)
    if value in (None, ""):
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def env_url(name: str, schemes: tuple[str, ...]) -> str | None:
    """An optional URL whose scheme must be one of ``schemes``."""
    value = env_str(name)
    if value is None:
        return None
    parsed = urlparse(value)
    if parsed.scheme not in schemes or not (parsed.netloc or parsed.path):
        allowed = ", ".join(f"{s}://" for s in schemes)
        raise ImproperlyConfigured(f"{name} must be a URL starting with {allowed}; got {value!r}")
    return value


def env_days(name: str, default: int) -> int:
    """A retention period in days (SPEC §13): set but empty, or 0, keeps the data."""
    value = _raw(name)
    if value is not None and value.strip() == "":
        return 0
    return env_int(name, default)
