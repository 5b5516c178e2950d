"""``/metrics`` (SPEC §10 Operations): Prometheus' text format, off unless
``METRICS_ENABLED``, for a bearer ``METRICS_TOKEN`` or an address in
``METRICS_ALLOWED_ADDRESSES``.

The processes' counters come from ``tutor.ops.metrics``; what waits in the
database is read at each scrape, a handful of indexed queries: review
attempts queued and running and the age of the oldest queued one, the
correction-detection and LTI score outboxes, and each staff queue of the
desk (``tutor.desk.queues.desk_counts``: the same counts staff see).
"""

from __future__ import annotations

from django.db.models import Count, Min
from django.http import HttpResponse
from django.utils import timezone
from django.views.decorators.http import require_safe

from tutor.ops import metrics
from tutor.web.handlers import not_found
from tutor.web.signin import client_address


class WorkCollector:
    """Gauges of the work waiting in the database, read per scrape."""

    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

        from corrections.models import PendingDetection
        from feedback.models import AttemptStatus, ReviewAttempt
        from tutor.desk.queues import desk_counts
        from tutor.lti.models import ScorePost, ScoreStatus

        now = timezone.now()
        attempts = GaugeMetricFamily(
            "tutor_review_attempts", "Review attempts waiting or running, by status", labels=["status"]
        )
        oldest = GaugeMetricFamily(
            "tutor_review_oldest_queued_seconds", "Age of the oldest queued review attempt (0: none)"
        )
        rows = {
            row["status"]: row
            for row in ReviewAttempt.objects.filter(status__in=[AttemptStatus.QUEUED, AttemptStatus.RUNNING])
            .values("status")
            .annotate(n=Count("pk"), oldest=Min("created_at"))
            .order_by()
        }
        for status in (AttemptStatus.QUEUED, AttemptStatus.RUNNING):
            attempts.add_metric([status.value], rows.get(status, {}).get("n", 0))
        queued_since = rows.get(AttemptStatus.QUEUED, {}).get("oldest")
        oldest.add_metric([], (now - queued_since).total_seconds() if queued_since else 0)
        yield attempts
        yield oldest

        outbox = GaugeMetricFamily("tutor_outbox_depth", "Rows waiting in an outbox", labels=["outbox"])
        outbox.add_metric(["correction_detections"], PendingDetection.objects.count())
        outbox.add_metric(
            ["lti_scores"],
            ScorePost.objects.filter(status__in=[ScoreStatus.QUEUED, ScoreStatus.POSTING]).count(),
        )
        yield outbox

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
