"""Values derived from rows that never change, kept per process (SPEC §10).

A terminal review attempt is immutable (SPEC §2): what the tutor derives
from it -- the contract check of its result, the result as a student may see
it, the rendered feedback block -- is the same on every request that selects
it, for the same rubric and settings. A ``Memo`` keeps such values under a
key that names everything they depend on, so a request that selects the same
attempt again takes the value instead of deriving it again. Nothing is ever
invalidated: a change makes another key. The oldest entries go first once
``max_entries`` are kept.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any

_MISSING = object()
_MEMOS: list[Memo] = []


class Memo:
    def __init__(self, name: str, max_entries: int):
        self.name = name
        self.max_entries = max_entries
        self._values: dict[Hashable, Any] = {}
        self._lock = threading.Lock()
        _MEMOS.append(self)

    def get_or_make(self, key: Hashable, make: Callable[[], Any]) -> Any:
        """The value kept under ``key``, or ``make()``'s, kept from now on.
        The value is shared by every caller: it must not be changed."""
        value = self._values.get(key, _MISSING)
        if value is not _MISSING:
            return value
        value = make()
        with self._lock:
            while len(self._values) >= self.max_entries:
                del self._values[next(iter(self._values))]
            self._values[key] = value
        return value

    def clear(self) -> None:
        with self._lock:
            self._values.clear()

    def __len__(self) -> int:
        return len(self._values)


def clear_all() -> None:
    """Empty every memo of this process (tests: the rows they name roll back)."""
    for memo in _MEMOS:
        memo.clear()
