"""The review queue's gauges on ``/metrics`` (SPEC §10 Operations): attempts
queued and running, and the age of the oldest queued one. Registered with
``tutor.ops.monitoring`` from ``FeedbackConfig.ready``; read at each scrape."""

from __future__ import annotations

from django.db.models import Count, Min
from django.utils import timezone

from feedback.models import AttemptStatus, ReviewAttempt


class ReviewQueueGauges:
    def collect(self):
        from prometheus_client.core import GaugeMetricFamily

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
        oldest.add_metric([], (timezone.now() - queued_since).total_seconds() if queued_since else 0)
        yield attempts
        yield oldest
