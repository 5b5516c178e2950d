"""Prometheus counters of the processes (SPEC §10 Operations), off unless
``METRICS_ENABLED``. Details: docs/architecture.md, Metrics, error reports and
traces.
"""

from __future__ import annotations

import hmac
import ipaddress
import os
import time
from functools import cache

from django.conf import settings

# Seconds: a request or a model call, from a cached read to a tutor turn at its budget.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120)


@cache
def _metrics():
    from prometheus_client import Counter, Histogram

    class Metrics:
        requests = Counter(
            "tutor_http_requests_total",
            "HTTP requests by route, method and status",
            ["route", "method", "status"],
        )
        request_seconds = Histogram(
            "tutor_http_request_duration_seconds", "HTTP request latency by route", ["route"],
            buckets=LATENCY_BUCKETS,
        )  # fmt: skip
        model_calls = Counter(
            "tutor_model_calls_total", "Model calls by purpose and outcome", ["purpose", "outcome"]
        )
        model_seconds = Histogram(
            "tutor_model_call_duration_seconds", "Model call latency by purpose", ["purpose"],
            buckets=LATENCY_BUCKETS,
        )  # fmt: skip
        attempts_finished = Counter(
            "tutor_review_attempts_finished_total",
            "Review attempts that reached a terminal status",
            ["status"],
        )
        throttled = Counter("tutor_throttled_requests_total", "Requests refused by a rate limit", ["scope"])
        locked_out = Counter("tutor_signin_locked_out_total", "Sign-in tries refused by a lock-out")

    return Metrics


def enabled() -> bool:
    return settings.METRICS_ENABLED


def model_call(purpose: str, outcome: str, seconds: float) -> None:
    if not settings.METRICS_ENABLED:
        return
    metrics = _metrics()
    metrics.model_calls.labels(purpose, outcome).inc()
    metrics.model_seconds.labels(purpose).observe(seconds)


def attempt_finished(status: str) -> None:
    if settings.METRICS_ENABLED:
        _metrics().attempts_finished.labels(status).inc()


def throttled(scope: str) -> None:
    if settings.METRICS_ENABLED:
        _metrics().throttled.labels(scope or "").inc()


def signin_refused() -> None:
    if settings.METRICS_ENABLED:
        _metrics().locked_out.inc()


class RequestMetricsMiddleware:
    """Counts every request by route (the URL pattern, never the path with
    its ids), method and status, and its latency. Installed only when
    ``METRICS_ENABLED`` (``tutor.settings``)."""

    def __init__(self, get_response):
        self.get_response = get_response
        self.metrics = _metrics()

    def __call__(self, request):
        began = time.perf_counter()
        response = self.get_response(request)
        match = getattr(request, "resolver_match", None)
        route = match.route if match is not None and match.route else "unmatched"
        self.metrics.requests.labels(route, request.method, str(response.status_code)).inc()
        self.metrics.request_seconds.labels(route).observe(time.perf_counter() - began)
        return response


def scrape_allowed(request, address: str) -> bool:
    """``METRICS_TOKEN`` as a bearer token, or an address in ``METRICS_ALLOWED_ADDRESSES``."""
    token = settings.METRICS_TOKEN
    if token:
        given = request.headers.get("Authorization", "")
        if hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
            return True
    try:
        client = ipaddress.ip_address(address)
    except ValueError:
        return False
    return any(client in network for network in allowed_networks())


def allowed_networks() -> tuple:
    return tuple(ipaddress.ip_network(item, strict=False) for item in settings.METRICS_ALLOWED_ADDRESSES)


def exposition(collectors=()) -> tuple[bytes, str]:
    """The text format of every process's counters (summed over the
    multiprocess directory) and of ``collectors``."""
    from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
    from prometheus_client.multiprocess import MultiProcessCollector

    _metrics()  # a scrape before any count still lists every metric
    registry = CollectorRegistry(auto_describe=True)
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        MultiProcessCollector(registry)
    else:  # one process (a test, the development server): its own counters
        registry.register(_ProcessCounters(REGISTRY))
    for collector in collectors:
        registry.register(collector)
    return generate_latest(registry), CONTENT_TYPE_LATEST


class _ProcessCounters:
    def __init__(self, source):
        self.source = source

    def collect(self):
        return [m for m in self.source.collect() if m.name.startswith("tutor_")]


def worker_exited(pid: int) -> None:
    """gunicorn's ``child_exit``: a dead worker's live gauges leave the sums."""
    if settings.METRICS_ENABLED and os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        from prometheus_client import multiprocess

        multiprocess.mark_process_dead(pid)
