"""Long-lived objects out of Python's cyclic collector's full passes (SPEC §10):
a course snapshot's full load (``tutor.db.snapshots.SnapshotStore(freeze=True)``)
asks for ``gc.freeze()`` once its request has finished. Details:
docs/architecture.md, Snapshots and the cyclic collector.
"""

from __future__ import annotations

import gc
import threading
import time
from dataclasses import dataclass, field

from django.core.signals import request_finished

from tutor.kernel.conf import optional_setting


def freeze_after_request() -> None:
    """A course's snapshot is tens of thousands of objects (10k lessons: about
    60k; 10k facts: about 130k) that live until it is replaced. Python's
    cyclic collector walks every live object at each full collection: at
    the bench's volumes 100–300 ms in whichever request it falls on, right
    after a change as likely as anywhere. So a full load asks for a freeze
    (``_freeze``): what is alive then is moved out of the
    collector's reach. Off with the setting ``TUTOR_GC_FREEZE`` (the suite)."""
    if optional_setting("TUTOR_GC_FREEZE", True):
        _FREEZE.pending = True


@dataclass
class _Freeze:
    pending: bool = False
    at: float | None = None  # of the last freeze (monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)


_FREEZE = _Freeze()
# At most one freeze a minute: each walks every object once.
GC_FREEZE_EVERY_SECONDS = 60.0


def _freeze(**kwargs) -> None:
    """Once a request that loaded a snapshot has finished (its objects let
    go; under gunicorn, its response sent): unfreeze, collect, freeze. A
    frozen object is still freed by reference counting, and a snapshot
    holds no reference cycle (tests/tutor/test_snapshot_memory.py), so a
    replaced one goes as before; cyclic garbage frozen with it (another
    thread's request, say) is collected at the next freeze, which starts by
    unfreezing -- nothing is kept for good. That full pass costs what the
    freeze saves, once per full load (a change does not make one: it is
    applied), not once in a while in any request."""
    state = _FREEZE
    if not state.pending:
        return
    now = time.monotonic()
    with state.lock:
        if not state.pending or (state.at is not None and now - state.at < GC_FREEZE_EVERY_SECONDS):
            return
        state.pending, state.at = False, now
    gc.unfreeze()
    gc.collect()
    gc.freeze()


request_finished.connect(_freeze, dispatch_uid="tutor.db.snapshots.freeze")
