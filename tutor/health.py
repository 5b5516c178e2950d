"""Health of configured dependencies (SPEC §7 ``/healthz``)."""

from __future__ import annotations

import logging

from django.conf import settings
from django.db import connection

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


def _broker() -> str:
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


def health_report() -> dict:
    broker = _broker()
    checks = {"database": _database(), "broker": broker, "worker": _worker(broker)}
    status = "degraded" if "down" in checks.values() else "ok"
    return {"status": status, "checks": checks}
