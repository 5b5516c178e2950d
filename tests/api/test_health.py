"""``/healthz`` (SPEC §7): reachability of what is configured; not configured
is not down."""

import pytest
from django.db import OperationalError, connection
from rest_framework.test import APIClient

from tutor import health


@pytest.fixture
def embedded(settings):
    # The embedded default even when the suite itself runs against a real Redis.
    settings.REDIS_URL = None
    return settings


@pytest.fixture
def dead_broker(settings):
    # Port 1 on the loopback: nothing listens, so the connection is refused at once.
    settings.REDIS_URL = "redis://127.0.0.1:1/0"
    return settings


def test_embedded_default_is_ok_with_broker_and_worker_not_configured(db, embedded):
    response = APIClient().get("/healthz")

    assert response.status_code == 200
    assert response.json() == {
        "status": "ok",
        "checks": {
            "database": "ok",
            "broker": "not_configured",
            "worker": "not_configured",
            "model": "not_configured",
        },
    }


def test_unreachable_broker_is_503_degraded_with_broker_and_worker_down(db, dead_broker):
    response = APIClient().get("/healthz")

    assert response.status_code == 503
    assert response.json() == {
        "status": "degraded",
        "checks": {"database": "ok", "broker": "down", "worker": "down", "model": "not_configured"},
    }


def test_health_needs_no_credentials_and_ignores_a_bad_token(db, embedded):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")

    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json()["status"] == "ok"


def test_unreachable_database_is_503_with_database_down(db, embedded, monkeypatch):
    def refuse(*args, **kwargs):
        raise OperationalError("connection refused")

    with monkeypatch.context() as patch:
        patch.setattr(connection, "cursor", refuse)
        response = APIClient().get("/healthz")

    assert response.status_code == 503
    assert response.json() == {
        "status": "degraded",
        "checks": {
            "database": "down",
            "broker": "not_configured",
            "worker": "not_configured",
            "model": "not_configured",
        },
    }


def test_broker_up_without_a_worker_reports_worker_down(db, settings, monkeypatch):
    # A reachable broker with nobody answering the ping: the worker is down.
    settings.REDIS_URL = "redis://broker.invalid:6379/0"
    monkeypatch.setattr(health, "broker_state", lambda: "ok")
    monkeypatch.setattr("tutor.celery.app.control.ping", lambda timeout: [])

    report = health.health_report()

    assert report["checks"] == {"database": "ok", "broker": "ok", "worker": "down", "model": "not_configured"}
    assert report["status"] == "degraded"


def test_health_only_answers_get(db, embedded):
    response = APIClient().post("/healthz")

    assert response.status_code == 405
