"""``/metrics`` (SPEC §10 Operations): Prometheus' text format, off unless
``METRICS_ENABLED``, for a bearer ``METRICS_TOKEN`` or an address in
``METRICS_ALLOWED_ADDRESSES``.

The processes' counters come from ``tutor.ops.metrics``; what waits in the
database is read at each scrape, a handful of indexed queries the apps
register (``register_collector``, ``register_outbox``: review attempts, the
detection and score outboxes), and each staff queue of the desk
(``tutor.desk.queues.desk_counts``: the same counts staff see).
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_safe

from tutor.desk.queues import desk_counts
from tutor.ops import metrics
from tutor.web.handlers import not_found
from tutor.web.signin import client_address

# What the apps register from their ``ready()`` (as they register desk queues):
# collectors of their own gauges, and one depth reader per outbox.
_collectors: list = []
_outboxes: dict[str, Callable[[], int]] = {}


def register_collector(collector) -> None:
    """An app's collector: an object whose ``collect()`` yields metric families."""
    if collector not in _collectors:
        _collectors.append(collector)


def register_outbox(name: str, depth: Callable[[], int]) -> None:
    """An outbox's depth, read at each scrape as ``tutor_outbox_depth{outbox=name}``."""
    _outboxes[name] = depth


class WorkCollector:
    """Gauges of the work waiting in the database, read per scrape."""

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        for collector in _collectors:
            yield from collector.collect()

        outbox = GaugeMetricFamily("tutor_outbox_depth", "Rows waiting in an outbox", labels=["outbox"])
        for name, depth in sorted(_outboxes.items()):
            outbox.add_metric([name], depth())
        yield outbox

        now = timezone.now()
        waiting = GaugeMetricFamily(
            "tutor_staff_queue_waiting",
            "Waiting staff work per desk queue (a capped count)",
            labels=["queue"],
        )
        waiting_age = GaugeMetricFamily(
            "tutor_staff_queue_oldest_seconds",
            "Age of the oldest waiting item per desk queue",
            labels=["queue"],
        )
        for queue in desk_counts(course_ids=None):
            waiting.add_metric([queue.name], queue.count)
            waiting_age.add_metric([queue.name], (now - queue.oldest).total_seconds() if queue.oldest else 0)
        yield waiting
        yield waiting_age


@require_safe
def metrics_view(request):
    """404 when metrics are off (as if the path did not exist); 403 for a
    scraper without the token or outside the allowed addresses."""
    if not metrics.enabled():
        return not_found(request)
    if not metrics.scrape_allowed(request, client_address(request)):
        return HttpResponse("forbidden\n", status=403, content_type="text/plain")
    body, content_type = metrics.exposition([WorkCollector()])
    return HttpResponse(body, content_type=content_type)


def attempt_finished_counted(sender, *, status: str, **kwargs) -> None:
    """``feedback.signals.attempt_finished``: one more finished review, by status."""
    metrics.attempt_finished(status)
