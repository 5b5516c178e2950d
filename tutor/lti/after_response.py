"""Work that waits until the response is sent (SPEC §12: posting a score
never runs inside a student's request).

In the embedded mode tasks run eagerly, in the process that queued them: a
score queued while a student's submission is reviewed would be posted
before the student gets the answer (3.4 s against a slow LMS). Inside a
request, ``defer`` keeps the work until Django's ``request_finished``
signal, which the WSGI server sends when it closes the response -- after
the client has it. Outside a request (a command, a worker) there is no
response to wait for: ``defer`` says no and the caller runs the work now.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextvars import ContextVar

log = logging.getLogger(__name__)

_waiting: ContextVar[list[Callable[[], None]] | None] = ContextVar("lti_after_response", default=None)


def defer(work: Callable[[], None]) -> bool:
    """Run ``work`` once the current response is sent; False outside a request."""
    waiting = _waiting.get()
    if waiting is None:
        return False
    waiting.append(work)
    return True


def request_started_received(sender, **kwargs) -> None:
    _waiting.set([])


def request_finished_received(sender, **kwargs) -> None:
    waiting = _waiting.get()
    _waiting.set(None)
    for work in waiting or ():
        try:
            work()
        except Exception:  # the response is gone: log, the outbox row keeps the work
            log.exception("work deferred until after the response failed")
