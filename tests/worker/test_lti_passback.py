"""Grade passback (AGS; SPEC §12) on a real Celery worker and a real Redis.

A student launches from the simulated LMS (tests/lti/platform.py, a real
HTTP server of this process), submits through the API; the worker reviews
against the fake model server, its ``attempt_finished`` queues the score,
and the worker posts it over HTTP to the platform's line item. The harness
(``conftest.py``) says when these run. The same rules in eager mode:
tests/lti/test_scores.py.
"""

from __future__ import annotations

import pytest

from feedback.models import ReviewAttempt
from feedback.signals import attempt_finished
from tests.lti.conftest import Browser, register
from tests.lti.platform import FakePlatform
from tests.worker.conftest import wait_for
from tests.worker.fakellm import Reply, review_answer
from tests.worker.test_review_worker import queue_drained, wait_terminal
from tutor.lti.models import ScorePost, ScoreStatus
from tutor.lti.selectors import published_jwks
from tutor.lti.services.keys import tool_key_generate

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

POST_TIMEOUT = 30  # seconds for a score to reach the platform
FAIL_REPORT = "first() returns the first element."  # A2 needs "first" and "undefined"
PASS_REPORT = "first() returns undefined for an empty array."
PASS_ANSWER = review_answer({"A3": "PASS"})


@pytest.fixture
def platform():
    server = FakePlatform().start()
    yield server
    server.stop()


@pytest.fixture
def lti_env(monkeypatch):
    # Read by the worker process at start: a retry after half a second.
    monkeypatch.setenv("LTI_SCORE_BACKOFF", "0.5")


@pytest.fixture
def worker(lti_env, celery_worker):
    return celery_worker


@pytest.fixture
def student(platform, course, task, worker):
    tool_key_generate()
    register(platform, course)
    platform.trust_tool(published_jwks())
    browser = Browser(platform)
    assert browser.launch(sub="student-1").status_code == 302
    return browser


def submit(browser: Browser, task, report: str) -> dict:
    response = browser.client.post(
        "/api/submissions/",
        {"task": str(task.pk), "evidence": {"report": report, "ci": {"status": "passed", "exit_code": 0}}},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    return response.json()


def wait_scores(platform: FakePlatform, count: int, worker) -> list[dict]:
    return wait_for(
        lambda: platform.accepted() if len(platform.accepted()) >= count else None,
        timeout=POST_TIMEOUT,
        message=lambda: f"{len(platform.accepted())} of {count} scores arrived\n{worker.log_tail()}",
    )


def test_fail_then_pass_posts_the_rule_score_then_the_maximum(student, task, platform, fake_llm, worker):
    fake_llm.script(Reply(PASS_ANSWER), Reply(PASS_ANSWER))

    first = submit(student, task, FAIL_REPORT)
    assert wait_terminal(student.client, first["attempts"][0]["id"], worker)["result"]["overall"] == "FAIL"
    [score] = wait_scores(platform, 1, worker)
    assert (score["userId"], score["scoreGiven"], score["scoreMaximum"]) == ("student-1", 2, 3)
    assert (score["activityProgress"], score["gradingProgress"]) == ("Completed", "FullyGraded")

    second = submit(student, task, PASS_REPORT)
    assert wait_terminal(student.client, second["attempts"][0]["id"], worker)["result"]["overall"] == "PASS"
    scores = wait_scores(platform, 2, worker)

    assert [(s["scoreGiven"], s["scoreMaximum"]) for s in scores] == [(2, 3), (3, 3)]
    assert scores[1]["timestamp"] > scores[0]["timestamp"]
    queue_drained()
    assert sorted(ScorePost.objects.values_list("status", flat=True)) == ["posted", "posted"]


def test_review_outage_posts_nothing(student, task, platform, fake_llm, worker):
    fake_llm.script(Reply('{"error": "down"}', status=503), Reply('{"error": "down"}', status=503))

    body = submit(student, task, PASS_REPORT)

    assert wait_terminal(student.client, body["attempts"][0]["id"], worker)["status"] == "unavailable"
    queue_drained()
    assert platform.score_requests() == []
    assert not ScorePost.objects.exists()


def test_platform_5xx_is_retried_and_posted_once(student, task, platform, fake_llm, worker):
    fake_llm.script(Reply(PASS_ANSWER))
    platform.script_scores(503)

    submit(student, task, PASS_REPORT)
    [score] = wait_scores(platform, 1, worker)

    assert score["scoreGiven"] == 3
    queue_drained()
    row = ScorePost.objects.get()
    assert (row.status, row.tries, row.last_http_status) == (ScoreStatus.POSTED, 2, 200)
    assert len(platform.score_requests()) == 2
    assert len(platform.accepted()) == 1


def test_duplicate_delivery_posts_once(student, task, platform, fake_llm, worker):
    from feedback.tasks import review_attempt
    from tutor.lti.tasks import post_score

    fake_llm.script(Reply(PASS_ANSWER))
    body = submit(student, task, PASS_REPORT)
    attempt_id = body["attempts"][0]["id"]
    wait_scores(platform, 1, worker)
    queue_drained()
    row = ScorePost.objects.get()

    # Every message again: the review, the score post (twice), and the signal.
    review_attempt.delay(attempt_id)
    post_score.delay(str(row.pk))
    post_score.delay(str(row.pk))
    attempt_finished.send(sender=ReviewAttempt, attempt_id=attempt_id, status="completed")
    queue_drained()

    assert ScorePost.objects.count() == 1
    assert len(platform.score_requests()) == 1
    assert len(platform.accepted()) == 1
