"""Health of configured dependencies (SPEC §7 ``/healthz``).

The database, the broker and a worker are probed; the model is not (a probe
per health check would be a paid request): its state comes from the newest
recent ``ModelCall`` row. A model that is down degrades the report, but
alone never makes it a 503 -- the service still stores submissions and
reviews their machine checks.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from django.conf import settings
from django.db import connection
from django.utils import timezone

log = logging.getLogger(__name__)
HEALTH_TIMEOUT_SECONDS = 1.0


def _database() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
        return "ok"
    except Exception:
        log.warning("health: database unreachable", exc_info=True)
        return "down"


def broker_state() -> str:
    if not settings.REDIS_URL:
        return "not_configured"
    import redis

    try:
        client = redis.Redis.from_url(
            settings.REDIS_URL,
            socket_connect_timeout=HEALTH_TIMEOUT_SECONDS,
            socket_timeout=HEALTH_TIMEOUT_SECONDS,
        )
        try:
            client.ping()
        finally:
            client.close()
        return "ok"
    except Exception:
        log.warning("health: broker unreachable", exc_info=True)
        return "down"


def _worker(broker: str) -> str:
    if not settings.REDIS_URL:
        return "not_configured"  # eager mode: tasks run in the web process
    if broker != "ok":
        return "down"
    from tutor.celery import app

    try:
        replies = app.control.ping(timeout=HEALTH_TIMEOUT_SECONDS)
    except Exception:
        log.warning("health: worker ping failed", exc_info=True)
        return "down"
    return "ok" if replies else "down"


# Model calls older than this say nothing about the model now.
MODEL_HEALTH_WINDOW_SECONDS = 600
# The checks whose "down" makes /healthz a 503 (SPEC §7): not the model's.
CRITICAL_CHECKS = ("database", "broker", "worker")


def _model(database: str) -> str:
    """ok / down from the newest model call of the last
    ``MODEL_HEALTH_WINDOW_SECONDS``: down when it failed (after its retries:
    each try is a row, so a try that succeeded is the newest); ok when it
    succeeded or when nothing was asked lately."""
    from tutor import llm
    from tutor.models import ModelCall

    if not llm.is_configured():
        return "not_configured"
    if database != "ok":
        return "ok"  # unknown: no row can be read, and the model is not the one at fault
    since = timezone.now() - timedelta(seconds=MODEL_HEALTH_WINDOW_SECONDS)
    try:
        newest = (
            ModelCall.objects.filter(created_at__gte=since)
            .exclude(status=ModelCall.Status.OFFLINE)
            .order_by("-created_at")
            .values_list("status", flat=True)
            .first()
        )
    except Exception:
        log.warning("health: model calls unreadable", exc_info=True)
        return "ok"
    return "down" if newest is not None and newest != ModelCall.Status.OK else "ok"


def health_report() -> dict:
    broker = broker_state()
    database = _database()
    checks = {"database": database, "broker": broker, "worker": _worker(broker), "model": _model(database)}
    status = "degraded" if "down" in checks.values() else "ok"
    return {"status": status, "checks": checks}


def health_status_code(report: dict) -> int:
    return 503 if any(report["checks"][name] == "down" for name in CRITICAL_CHECKS) else 200
