"""``/metrics`` (SPEC §10 Operations): off unless METRICS_ENABLED, a bearer
token or an address allow-list, Prometheus' text format with the request,
model-call, review, outbox, staff-queue, throttle and lock-out figures; the
counters summed over gunicorn's worker processes."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone
from prometheus_client.parser import text_string_to_metric_families

from tests.factories import client_for, enroll, make_course, make_submission, make_task
from tutor.desk import queues

TOKEN = "scrape-token-1"


def samples(text: str) -> dict[tuple[str, tuple], float]:
    """Every sample of an exposition: (name, sorted labels) -> value."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(text: str, name: str, **labels) -> float:
    return samples(text).get((name, tuple(sorted(labels.items()))), 0.0)


def scrape(client: Client | None = None, **headers) -> str:
    response = (client or Client()).get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"].startswith("text/plain")
    return response.content.decode()


@pytest.fixture
def enabled(settings):
    settings.METRICS_ENABLED = True
    settings.METRICS_TOKEN = TOKEN
    settings.METRICS_ALLOWED_ADDRESSES = []


def test_metrics_are_off_unless_enabled(db):
    response = Client().get("/metrics", HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    assert response.status_code == 404 and response.json()["errors"][0]["code"] == "not_found"


@pytest.mark.parametrize("authorization", [None, "Bearer wrong", f"Token {TOKEN}", TOKEN])
def test_a_scrape_needs_the_token(db, enabled, authorization):
    headers = {"HTTP_AUTHORIZATION": authorization} if authorization else {}

    assert Client().get("/metrics", **headers).status_code == 403


def test_an_address_in_the_allow_list_scrapes_without_a_token(db, settings, enabled):
    settings.METRICS_TOKEN = ""
    settings.METRICS_ALLOWED_ADDRESSES = ["10.1.0.0/16", "192.0.2.7"]

    assert Client().get("/metrics", REMOTE_ADDR="10.1.2.3").status_code == 200
    assert Client().get("/metrics", REMOTE_ADDR="192.0.2.7").status_code == 200
    assert Client().get("/metrics", REMOTE_ADDR="10.2.0.1").status_code == 403
    settings.TRUST_X_FORWARDED_FOR = True
    assert (
        Client().get("/metrics", REMOTE_ADDR="127.0.0.1", HTTP_X_FORWARDED_FOR="10.1.0.9").status_code == 200
    )
    assert Client().get("/metrics", REMOTE_ADDR="10.1.0.9", HTTP_X_FORWARDED_FOR="8.8.8.8").status_code == 403


class _TestQueue(queues.WorkQueue):
    name = "metrics_test_queue"
    label = "Test queue"

    def count(self, *, course_ids):
        return queues.QueueCount(
            name=self.name,
            label=self.label,
            count=7,
            capped=False,
            oldest=timezone.now() - timedelta(seconds=90),
            url="/admin/",
        )


@pytest.fixture
def test_queue():
    queues.register(_TestQueue())
    yield
    queues.unregister(_TestQueue.name)


def test_the_work_waiting_in_the_database_is_read_at_each_scrape(db, enabled, test_queue):
    from feedback.models import AttemptStatus, ReviewAttempt
    from tests.factories import make_attempt

    course = make_course("metrics-101")
    task = make_task(course)
    student = enroll(course, "mira")
    make_attempt(make_submission(student, task), status=AttemptStatus.QUEUED)
    running = make_attempt(make_submission(student, task), status=AttemptStatus.QUEUED)
    ReviewAttempt.objects.filter(pk=running.pk).update(
        status=AttemptStatus.RUNNING, claimed_at=timezone.now()
    )
    ReviewAttempt.objects.filter(status=AttemptStatus.QUEUED).update(
        created_at=timezone.now() - timedelta(seconds=300)
    )

    text = scrape()

    assert value(text, "tutor_review_attempts", status="queued") == 1
    assert value(text, "tutor_review_attempts", status="running") == 1
    assert 299 <= value(text, "tutor_review_oldest_queued_seconds") < 400
    assert value(text, "tutor_outbox_depth", outbox="correction_detections") == 0
    assert ("tutor_outbox_depth", (("outbox", "lti_scores"),)) in samples(text)
    assert value(text, "tutor_staff_queue_waiting", queue="metrics_test_queue") == 7
    assert 89 <= value(text, "tutor_staff_queue_oldest_seconds", queue="metrics_test_queue") < 200


def test_model_calls_are_counted_by_purpose_outcome_and_latency(db, enabled, fake_llm):
    import httpx

    from tutor import llm

    before = scrape()
    fake_llm.script = ["fine", httpx.Response(502), "again"]
    llm.chat([{"role": "user", "content": "hi"}], purpose="tutor")
    llm.chat([{"role": "user", "content": "hi"}], purpose="tutor")

    after = scrape()
    ok = "tutor_model_calls_total"
    assert (
        value(after, ok, purpose="tutor", outcome="ok") - value(before, ok, purpose="tutor", outcome="ok")
        == 2
    )
    errors = value(after, ok, purpose="tutor", outcome="http_error")
    assert errors - value(before, ok, purpose="tutor", outcome="http_error") == 1
    count = "tutor_model_call_duration_seconds_count"
    assert value(after, count, purpose="tutor") - value(before, count, purpose="tutor") == 3


def test_requests_throttles_and_lock_outs_are_counted(db, settings, enabled):
    settings.MIDDLEWARE = ["tutor.ops.metrics.RequestMetricsMiddleware", *settings.MIDDLEWARE]
    settings.SIGNIN_FAILURE_LIMIT = 2
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {
            **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
            "submissions": "1/min",
        },
    }
    course = make_course("metrics-102")
    student = client_for(enroll(course, "nina"))
    before = scrape()

    student.get("/api/courses/")
    student.get("/api/courses/")
    statuses = [student.post("/api/submissions/", {}, format="json").status_code for _ in range(2)]
    for _ in range(3):
        Client().post("/login/", {"username": "nina", "password": "wrong"})

    after = scrape()
    assert statuses == [400, 429]

    def grew(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("tutor_http_requests_total", route="api/courses/", method="GET", status="200") == 2
    assert grew("tutor_http_requests_total", route="api/submissions/", method="POST", status="429") == 1
    assert grew("tutor_http_request_duration_seconds_count", route="api/courses/") == 2
    assert grew("tutor_throttled_requests_total", scope="submissions") == 1
    assert grew("tutor_signin_locked_out_total") == 2  # the try that locked and the one after


def test_a_finished_review_is_counted(db, enabled, django_capture_on_commit_callbacks):
    course = make_course("metrics-103")
    task = make_task(course)
    student = client_for(enroll(course, "omar"))
    before = value(scrape(), "tutor_review_attempts_finished_total", status="completed")

    with django_capture_on_commit_callbacks(execute=True):
        response = student.post(
            "/api/submissions/", {"task": str(task.pk), "evidence": {"report": "x"}}, format="json"
        )

    assert response.status_code == 201
    after = value(scrape(), "tutor_review_attempts_finished_total", status="completed")
    assert after - before == 1


def test_metrics_enabled_needs_a_token_or_an_allow_list():
    from tests.tutor.test_settings import start

    refused = start(METRICS_ENABLED="1")
    allowed = start(METRICS_ENABLED="1", METRICS_ALLOWED_ADDRESSES="not-an-address")

    assert refused.returncode != 0 and "METRICS_TOKEN or METRICS_ALLOWED_ADDRESSES" in refused.stderr
    assert allowed.returncode != 0 and "METRICS_ALLOWED_ADDRESSES must list" in allowed.stderr


# --- several gunicorn workers -----------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_the_counts_of_two_gunicorn_workers_add_up(tmp_path):
    """The shipped server with two workers and METRICS_DIR: requests served by
    each worker are summed by a scrape that either worker answers."""
    from tests.tutor.gunicorn_workers import two_workers
    from tutor.bench.drivers import gunicorn_server

    env = {
        "DJANGO_SETTINGS_MODULE": "tutor.settings",
        "WEB_CONCURRENCY": "2",
        "ALLOWED_HOSTS": "127.0.0.1",
        "REDIS_URL": "",
        "CACHE_DIR": str(tmp_path / "cache"),
        "METRICS_ENABLED": "1",
        "METRICS_TOKEN": TOKEN,
        "METRICS_DIR": str(tmp_path / "metrics"),
        "GUNICORN_CMD_ARGS": "--keep-alive 120",
    }
    with gunicorn_server(env) as base:
        first, second = two_workers(base)  # one /healthz each
        for _ in range(3):
            assert first.get("/lti/jwks/").status == 200
        assert second.get("/lti/jwks/").status == 200
        scrapes = [c.get("/metrics", {"Authorization": f"Bearer {TOKEN}"}).text for c in (first, second)]
        files = sorted(os.listdir(tmp_path / "metrics"))

    for text in scrapes:
        assert value(text, "tutor_http_requests_total", route="lti/jwks/", method="GET", status="200") == 4
    assert value(scrapes[1], "tutor_http_requests_total", route="metrics", method="GET", status="200") == 1
    assert len({name.rsplit("_", 1)[-1] for name in files}) == 2, files  # one file set per worker


def test_the_middleware_is_not_installed_when_metrics_are_off():
    from django.conf import settings

    assert "tutor.ops.metrics.RequestMetricsMiddleware" not in settings.MIDDLEWARE
    assert not settings.METRICS_ENABLED
