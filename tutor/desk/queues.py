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

from django.db.models import Count, Min, QuerySet
from django.urls import reverse

# A queue counts at most this many items (SPEC §8: no full counts on big
# tables); the desk shows "10000+" beyond it. The admin lists' cap.
QUEUE_COUNT_CAP = 10_000


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


class QuerysetQueue(WorkQueue):
    """A queue that is a queryset: ``items(course_ids)`` the waiting rows,
    ``since`` the field that says when a row started waiting, ``admin_url``
    the admin list (``"admin:app_model_changelist"``) and ``query`` its
    filter, so the card opens the list on exactly these rows."""

    since: str = "created_at"
    admin_url: str = ""
    query: str = ""

    @abstractmethod
    def items(self, *, course_ids: QuerySet | list | None) -> QuerySet:
        """The waiting rows, scoped to ``course_ids`` (None: every course)."""

    def url(self) -> str:
        return reverse(self.admin_url) + (f"?{self.query}" if self.query else "")

    def count(self, *, course_ids: QuerySet | list | None) -> QueueCount:
        count, oldest = capped_count(self.items(course_ids=course_ids), since=self.since)
        return QueueCount(
            name=self.name,
            label=str(self.label),
            count=min(count, QUEUE_COUNT_CAP),
            capped=count > QUEUE_COUNT_CAP,
            oldest=oldest,
            url=self.url(),
        )


def capped_count(qs: QuerySet, *, since: str) -> tuple[int, datetime | None]:
    """(rows, oldest ``since``) of ``qs`` in one statement that reads at most
    ``QUEUE_COUNT_CAP`` + 1 rows, oldest first: ``SELECT COUNT(*), MIN(since)
    FROM (... ORDER BY since LIMIT cap + 1)``. A full COUNT of a queue that
    grew to 100k rows would be paid on every desk view."""
    window = qs.order_by(since).values(since)[: QUEUE_COUNT_CAP + 1]
    found = window.aggregate(n=Count("*"), oldest=Min(since))
    return found["n"], found["oldest"]


_registry: dict[str, WorkQueue] = {}


def register(queue: WorkQueue) -> None:
    """Add ``queue``, or replace the one registered under its name."""
    if not queue.name:
        raise ValueError("a work queue needs a name")
    _registry[queue.name] = queue


def unregister(name: str) -> None:
    _registry.pop(name, None)


def queues() -> list[WorkQueue]:
    return sorted(_registry.values(), key=lambda q: (q.position, q.name))


def desk_counts(*, course_ids: QuerySet | list | None = None) -> list[QueueCount]:
    """Every registered queue's count, in desk order."""
    return [queue.count(course_ids=course_ids) for queue in queues()]
