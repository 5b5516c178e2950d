"""Work queues of course staff (SPEC §8 the desk, §10 operations).

Each app registers the queues it owns from its ``AppConfig.ready()`` (the
section providers' pattern: tutor never imports an app). The staff desk and
the ``/metrics`` gauges read the same counts through ``desk_counts``, so a
queue means one thing wherever it is shown.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from datetime import datetime

from django.db.models import QuerySet


@dataclass(frozen=True)
class QueueCount:
    """One queue's waiting work: ``count`` is capped (``capped``: at least
    that many), ``oldest`` is when its oldest item started waiting."""

    name: str
    label: str
    count: int
    capped: bool
    oldest: datetime | None
    url: str


class WorkQueue(ABC):
    """A queue of waiting work. ``name`` is its stable key (metrics label),
    ``label`` what staff read, ``position`` its place on the desk."""

    name: str = ""
    label: str = ""
    position: int = 0

    @abstractmethod
    def count(self, *, course_ids: QuerySet | list | None) -> QueueCount:
        """The waiting work in ``course_ids`` (None: every course), in one
        query that stays cheap on big tables (a capped count)."""


_registry: dict[str, WorkQueue] = {}


def register(queue: WorkQueue) -> None:
    """Add ``queue``, or replace the one registered under its name."""
    if not queue.name:
        raise ValueError("a work queue needs a name")
    _registry[queue.name] = queue


def queues() -> list[WorkQueue]:
    return sorted(_registry.values(), key=lambda q: (q.position, q.name))


def desk_counts(*, course_ids: QuerySet | list | None = None) -> list[QueueCount]:
    """Every registered queue's count, in desk order."""
    return [queue.count(course_ids=course_ids) for queue in queues()]
