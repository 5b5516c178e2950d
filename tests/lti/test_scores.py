"""Grades back to the LMS (AGS; SPEC §12) in eager mode on the embedded
database: reviews run in-process, scores are posted over real HTTP to the
simulated platform's line item. The same rules on a real worker:
tests/worker/test_lti_passback.py."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from django.utils import timezone

from feedback.models import AttemptStatus, ReviewAttempt, Submission
from feedback.services.verdicts import staff_verdict_create
from feedback.signals import attempt_finished
from tests.factories import enroll, make_attempt, make_course, make_submission, make_task
from tests.lti.conftest import Browser
from tests.lti.platform import CLIENT_ID, INSTRUCTOR
from tutor.lti.models import ScorePost, ScoreStatus
from tutor.lti.services.scores import score_from_result, scores_queue, scores_sweep
from tutor.lti.tasks import post_score
from tutor.models import AuditEvent

pytestmark = pytest.mark.django_db(transaction=True)

AGS_SCORE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
FAIL_REPORT = "first() returns the first element."  # A2 needs "first" and "undefined"
PASS_REPORT = "first() returns undefined for an empty array."


def model_reply(status: str = "PASS") -> str:
    return json.dumps(
        {
            "verdicts": [
                {"rubric_id": "A3", "status": status, "reason": "model says so", "evidence": "first()"}
            ],
            "next_step": "Keep going.",
        }
    )


def submit(browser: Browser, task, report: str) -> dict:
    response = browser.client.post(
        "/api/submissions/",
        {"task": str(task.pk), "evidence": {"report": report, "ci": {"status": "passed", "exit_code": 0}}},
        content_type="application/json",
    )
    assert response.status_code == 201, response.content
    return response.json()


@pytest.fixture
def student_browser(registration, platform):
    browser = Browser(platform)
    assert browser.launch(sub="student-1").status_code == 302
    return browser


def sweep_later(seconds: float) -> dict:
    return scores_sweep(now=timezone.now() + timedelta(seconds=seconds))


# --- the rules of the score -----------------------------------------------------------------


def test_fail_posts_the_pass_count_and_pass_next_posts_the_maximum(fake_llm, student_browser, task, platform):
    fake_llm.reply(model_reply("PASS"), model_reply("PASS"))

    first = submit(student_browser, task, FAIL_REPORT)

    assert first["attempts"][0]["status"] == "completed"
    assert first["attempts"][0]["result"]["overall"] == "FAIL"
    [score] = platform.accepted()
    assert {k: v for k, v in score.items() if k != "timestamp"} == {
        "userId": "student-1",
        "scoreGiven": 2,  # A1 (CI) and A3 (model) pass; A2 fails
        "scoreMaximum": 3,  # A1, A2, A3: the learning criterion L1 is not scored
        "activityProgress": "Completed",
        "gradingProgress": "FullyGraded",  # L1 is NEED_REVIEW, but learning criteria never block
    }

    second = submit(student_browser, task, PASS_REPORT)

    assert second["attempts"][0]["result"]["overall"] == "PASS"
    scores = platform.accepted()
    assert [(s["scoreGiven"], s["scoreMaximum"]) for s in scores] == [(2, 3), (3, 3)]
    # The later score replaces the earlier one: a newer AGS timestamp.
    assert scores[1]["timestamp"] > scores[0]["timestamp"]
    assert list(ScorePost.objects.values_list("status", flat=True)) == ["posted", "posted"]


def test_score_request_carries_a_token_from_the_client_credentials_grant(
    fake_llm, student_browser, task, platform
):
    fake_llm.reply(model_reply("PASS"))

    submit(student_browser, task, PASS_REPORT)

    token_request, score_request = [
        r for r in platform.requests if r.path in ("/token", "/lineitems/item-1/scores")
    ]
    form = token_request.form()
    assert form["grant_type"] == "client_credentials"
    assert form["client_assertion_type"] == "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
    assert form["scope"] == AGS_SCORE
    assert score_request.headers["content-type"] == "application/vnd.ims.lis.v1.score+json"
    assert score_request.headers["authorization"].startswith("Bearer ")
    assert score_request.headers["authorization"][7:] in platform.issued_tokens
    # The assertion the platform verified was signed by the tool's published key.
    import jwt

    assert jwt.get_unverified_header(form["client_assertion"])["kid"] == platform.tool_jwks[0]["kid"]
    assert jwt.decode(form["client_assertion"], options={"verify_signature": False})["iss"] == CLIENT_ID


def test_need_review_posts_pending_manual(fake_llm, student_browser, task, platform):
    fake_llm.reply(model_reply("NEED_REVIEW"))

    submit(student_browser, task, PASS_REPORT)

    [score] = platform.accepted()
    assert (score["scoreGiven"], score["scoreMaximum"], score["gradingProgress"]) == (2, 3, "PendingManual")


def test_staff_verdict_posts_the_settled_score(fake_llm, student_browser, task, platform, course):
    fake_llm.reply(model_reply("NEED_REVIEW"))
    body = submit(student_browser, task, PASS_REPORT)
    staff = enroll(course, "teacher", "staff")

    staff_verdict_create(
        submission=Submission.objects.get(pk=body["id"]),
        staff=staff,
        criteria=[{"rubric_id": "A3", "status": "PASS", "reason": "explained well"}],
    )

    assert [(s["scoreGiven"], s["gradingProgress"]) for s in platform.accepted()] == [
        (2, "PendingManual"),
        (3, "FullyGraded"),
    ]


def test_review_cache_completion_posts_too(fake_llm, student_browser, task, platform):
    fake_llm.reply(model_reply("PASS"))
    submit(student_browser, task, PASS_REPORT)

    again = submit(student_browser, task, PASS_REPORT)  # identical evidence: reused at once

    assert again["attempts"][0]["reused_from"] is not None
    assert len(fake_llm.requests) == 1
    assert [s["scoreGiven"] for s in platform.accepted()] == [3, 3]


def test_outage_posts_nothing(fake_llm, student_browser, task, platform):
    fake_llm.default = None  # every model request answers 500

    body = submit(student_browser, task, PASS_REPORT)

    assert body["attempts"][0]["status"] == "unavailable"
    assert platform.score_requests() == []
    assert not ScorePost.objects.exists()


def test_invalid_review_posts_nothing(fake_llm, student_browser, task, platform):
    fake_llm.default = "this is not JSON"

    body = submit(student_browser, task, PASS_REPORT)

    assert body["attempts"][0]["status"] == "invalid"
    assert platform.score_requests() == []
    assert not ScorePost.objects.exists()


def test_outage_after_a_score_leaves_the_earlier_score_alone(fake_llm, student_browser, task, platform):
    fake_llm.reply(model_reply("PASS"))
    submit(student_browser, task, FAIL_REPORT)
    fake_llm.default = None

    submit(student_browser, task, PASS_REPORT)  # unavailable: not a zero, not anything

    assert [s["scoreGiven"] for s in platform.accepted()] == [2]


def test_staff_and_unlaunched_students_get_no_post(fake_llm, registration, platform, task, course):
    teacher = Browser(platform)
    teacher.launch(sub="teacher-1", roles=[INSTRUCTOR])
    fake_llm.reply(model_reply("PASS"))
    student = enroll(course, "token-student")  # enrolled by token, never launched from the LMS
    from tests.factories import client_for

    response = client_for(student).post(
        "/api/submissions/", {"task": str(task.pk), "evidence": {"report": PASS_REPORT}}, format="json"
    )

    assert response.status_code == 201
    assert platform.score_requests() == []
    assert not ScorePost.objects.exists()


def test_link_without_score_scope_gets_no_post(fake_llm, registration, platform, task):
    browser = Browser(platform)
    browser.launch(sub="student-1", lineitem=None)
    fake_llm.reply(model_reply("PASS"))

    submit(browser, task, PASS_REPORT)

    assert platform.score_requests() == []


# --- retries, duplicates, replacement -----------------------------------------------------------


def test_platform_5xx_is_retried_and_posted_once(fake_llm, student_browser, task, platform, settings):
    settings.LTI_SCORE_BACKOFF = 10
    fake_llm.reply(model_reply("PASS"))
    platform.script_scores(503)

    submit(student_browser, task, PASS_REPORT)

    row = ScorePost.objects.get()
    assert (row.status, row.tries, row.last_http_status) == (ScoreStatus.QUEUED, 1, 503)
    assert row.next_try_at > timezone.now() + timedelta(seconds=8)
    assert sweep_later(1) == {"dispatched": 0, "requeued": 0, "failed": 0}  # not due yet

    assert sweep_later(11) == {"dispatched": 1, "requeued": 0, "failed": 0}

    row.refresh_from_db()
    assert (row.status, row.tries, row.last_http_status) == (ScoreStatus.POSTED, 2, 200)
    assert len(platform.score_requests()) == 2
    assert len(platform.accepted()) == 1
    trail = AuditEvent.objects.filter(target_id=str(row.pk)).order_by("id")
    assert [(e.event, e.to_state, e.extra["http_status"]) for e in trail] == [
        ("lti_score_failed", "queued", 503),
        ("lti_score_posted", "posted", 200),
    ]
    assert "scripted 503" in trail[0].extra["answer"]
    assert "resultUrl" in trail[1].extra["answer"]
    assert sweep_later(3600) == {"dispatched": 0, "requeued": 0, "failed": 0}


def test_token_endpoint_5xx_is_retried(fake_llm, student_browser, task, platform):
    fake_llm.reply(model_reply("PASS"))
    platform.script_tokens(502)

    submit(student_browser, task, PASS_REPORT)
    assert ScorePost.objects.get().status == ScoreStatus.QUEUED
    sweep_later(3600)

    assert ScorePost.objects.get().status == ScoreStatus.POSTED
    assert len(platform.accepted()) == 1


def test_platform_4xx_fails_without_retry(fake_llm, student_browser, task, platform):
    fake_llm.reply(model_reply("PASS"))
    platform.script_scores(400)

    submit(student_browser, task, PASS_REPORT)
    sweep_later(3600)

    row = ScorePost.objects.get()
    assert (row.status, row.tries, row.last_http_status) == (ScoreStatus.FAILED, 1, 400)
    assert len(platform.score_requests()) == 1
    failed = AuditEvent.objects.get(event="lti_score_failed")
    assert failed.to_state == "failed" and failed.course_id == task.course_id


def test_out_of_tries_fails(fake_llm, student_browser, task, platform, settings):
    settings.LTI_SCORE_MAX_TRIES = 3
    fake_llm.reply(model_reply("PASS"))
    platform.script_scores(500, 500, 500, 500)

    submit(student_browser, task, PASS_REPORT)
    for hours in (1, 2, 3):
        sweep_later(3600 * hours)

    row = ScorePost.objects.get()
    assert (row.status, row.tries) == (ScoreStatus.FAILED, 3)
    assert len(platform.score_requests()) == 3
    assert platform.accepted() == []


def test_duplicate_delivery_posts_once(fake_llm, student_browser, task, platform):
    fake_llm.reply(model_reply("PASS"))
    body = submit(student_browser, task, PASS_REPORT)
    attempt_id = body["attempts"][0]["id"]
    row = ScorePost.objects.get()

    # The signal again, and the task message again.
    attempt_finished.send(sender=ReviewAttempt, attempt_id=attempt_id, status="completed")
    post_score.delay(str(row.pk))
    post_score.delay(str(row.pk))

    assert ScorePost.objects.count() == 1
    assert len(platform.score_requests()) == 1
    assert len(platform.accepted()) == 1


def test_newer_score_supersedes_a_queued_retry(fake_llm, student_browser, task, platform):
    fake_llm.reply(model_reply("PASS"), model_reply("PASS"))
    platform.script_scores(503)
    submit(student_browser, task, FAIL_REPORT)  # 2/3, first post answered 503: waits for its retry

    submit(student_browser, task, PASS_REPORT)  # 3/3 posted at once
    sweep_later(3600)

    statuses = dict(ScorePost.objects.values_list("score_given", "status"))
    assert statuses == {2: ScoreStatus.SUPERSEDED, 3: ScoreStatus.POSTED}
    assert [s["scoreGiven"] for s in platform.accepted()] == [3]


def test_older_attempt_finishing_late_posts_nothing(registration, platform, task, course):
    browser = Browser(platform)
    browser.launch(sub="student-1")
    from tutor.lti.models import Identity

    student = Identity.objects.get(subject="student-1").user
    old = make_submission(student, task)
    late = make_attempt(old, AttemptStatus.COMPLETED)
    make_attempt(make_submission(student, task), AttemptStatus.QUEUED)  # the latest is still pending

    assert scores_queue(attempt_id=late.pk) == []
    assert platform.score_requests() == []


def test_deleted_or_unfinished_attempt_queues_nothing(registration, platform, task):
    browser = Browser(platform)
    browser.launch(sub="student-1")
    from tutor.lti.models import Identity

    student = Identity.objects.get(subject="student-1").user
    queued = make_attempt(make_submission(student, task), AttemptStatus.QUEUED)

    assert scores_queue(attempt_id=queued.pk) == []
    assert scores_queue(attempt_id="00000000-0000-0000-0000-000000000000") == []


def test_dead_worker_claim_is_returned_and_posted(fake_llm, student_browser, task, platform, settings):
    fake_llm.reply(model_reply("PASS"))
    platform.script_scores(503)
    submit(student_browser, task, PASS_REPORT)
    # A worker claimed the retry and died holding it.
    ScorePost.objects.update(
        status=ScoreStatus.POSTING, claim="11111111-1111-1111-1111-111111111111", claimed_at=timezone.now()
    )

    assert sweep_later(60) == {"dispatched": 0, "requeued": 0, "failed": 0}
    counts = sweep_later(settings.LTI_SCORE_HARD_TIME_LIMIT + 60)

    assert counts["requeued"] == 1
    assert ScorePost.objects.get().status == ScoreStatus.POSTED
    assert len(platform.accepted()) == 1


def test_requeue_of_a_failed_score_posts_it(fake_llm, student_browser, task, platform, course):
    from tutor.lti.services.scores import score_requeue

    fake_llm.reply(model_reply("PASS"))
    platform.script_scores(401)
    submit(student_browser, task, PASS_REPORT)
    row = ScorePost.objects.get()
    assert row.status == ScoreStatus.FAILED
    staff = enroll(course, "teacher", "staff")

    assert score_requeue(score=row, actor=staff) is True

    row.refresh_from_db()
    assert row.status == ScoreStatus.POSTED
    assert AuditEvent.objects.get(event="lti_score_requeued").actor == staff
    assert score_requeue(score=row, actor=staff) is False


def test_without_a_tool_key_the_post_fails_with_a_clear_answer(fake_llm, student_browser, task, platform):
    from tutor.lti.models import ToolKey

    ToolKey.objects.all().delete()
    fake_llm.reply(model_reply("PASS"))

    submit(student_browser, task, PASS_REPORT)

    row = ScorePost.objects.get()
    assert row.status == ScoreStatus.FAILED
    assert "lti_keys generate" in row.last_answer
    assert platform.score_requests() == []


# --- the receiver's cost and the pure rule -----------------------------------------------------


@pytest.mark.parametrize("submissions", [1, 30])
def test_attempt_of_a_task_no_lms_links_costs_two_queries(django_assert_num_queries, submissions):
    course = make_course()
    task = make_task(course)
    student = enroll(course)
    attempts = [make_attempt(make_submission(student, task)) for _ in range(submissions)]

    # the attempt, then its student's grade targets (none)
    with django_assert_num_queries(2):
        assert scores_queue(attempt_id=attempts[-1].pk) == []


def test_score_rule_counts_acceptance_criteria_only():
    def c(kind, status):
        return {"rubric_id": f"{kind}{status}", "kind": kind, "status": status}

    result = {"criteria": [c("acceptance", "PASS"), c("acceptance", "FAIL"), c("learning", "NEED_REVIEW")]}
    expected = {"given": 1, "maximum": 2, "grading_progress": "FullyGraded", "pending": 0, "comment": ""}
    for policy in ("pending_manual", "fully_graded_provisional", "hold"):  # nothing pending: all alike
        assert score_from_result(result, policy).__dict__ == expected
    result["criteria"].append(c("acceptance", "NEED_REVIEW"))
    assert score_from_result(result).__dict__ == {
        "given": 1,
        "maximum": 3,
        "grading_progress": "PendingManual",
        "pending": 1,
        "comment": "",
    }
    assert score_from_result(result, "fully_graded_provisional").__dict__ == {
        "given": 1,
        "maximum": 3,
        "grading_progress": "FullyGraded",
        "pending": 1,
        "comment": "Provisional: staff review of 1 of 3 criteria is pending; this grade may go up.",
    }
    assert score_from_result(result, "hold") is None
    assert score_from_result({"criteria": [c("learning", "PASS")]}) is None
