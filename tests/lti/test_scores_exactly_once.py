"""Grades delivered exactly once (AGS; SPEC §12): one timestamp per score
document, strictly increasing per (line item, user); a retry of a score the
platform stored but answered late ends ``posted``; a staff re-send is a new
document; tokens are reused; the pending-scores policies; and posting never
runs inside a student's request."""

from __future__ import annotations

import io
import json
from datetime import timedelta

import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.test import RequestFactory
from django.utils import timezone
from rest_framework.authtoken.models import Token

from feedback.models import Submission
from feedback.services.verdicts import staff_verdict_create
from tests.factories import enroll
from tests.lti.test_scores import PASS_REPORT, model_reply, submit, sweep_later
from tutor.lti.models import Identity, ScorePost, ScoreStatus
from tutor.lti.services.scores import next_timestamp, score_requeue
from tutor.models import AuditEvent

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def student_browser(registration, platform):
    from tests.lti.conftest import Browser

    browser = Browser(platform)
    assert browser.launch(sub="student-1").status_code == 302
    return browser


# --- stored, answered late ------------------------------------------------------------------------


def test_a_score_stored_but_answered_late_ends_posted_with_one_score_in_the_platform(
    fake_llm, student_browser, task, platform, settings
):
    settings.LTI_HTTP_TIMEOUT = 2  # the late answer must miss it, the retry must not (a busy CI machine)
    fake_llm.reply(model_reply("PASS"))
    platform.script_score_delays(4)  # the LMS stores it, then answers after the tool gave up

    submit(student_browser, task, PASS_REPORT)
    row = ScorePost.objects.get()
    assert (row.status, row.last_answer) == (ScoreStatus.QUEUED, "score endpoint: ReadTimeout")

    sweep_later(3600)  # the retry: the same document, the same timestamp

    row.refresh_from_db()
    assert (row.status, row.confirmed_by_refusal, row.last_http_status) == (ScoreStatus.POSTED, True, 400)
    [score] = platform.accepted()
    assert score["timestamp"] == row.scored_at.isoformat()
    sent = [r.json() for r in platform.score_requests()]
    assert len(sent) == 2 and sent[0] == sent[1]  # AGS: a retry may only repeat the same document
    posted = AuditEvent.objects.get(event="lti_score_posted")
    assert posted.extra["confirmed_by"] == "the platform's refusal of a retry"
    assert "already exists" in posted.extra["answer"]


def test_an_earlier_timestamp_refusal_of_the_newest_score_confirms_it_too(
    fake_llm, student_browser, task, platform, settings
):
    """Moodle answers 409 "earlier timestamp" when it holds a score as new as ours."""
    settings.LTI_HTTP_TIMEOUT = 2  # the late answer must miss it, the retry must not (a busy CI machine)
    fake_llm.reply(model_reply("PASS"))
    platform.script_score_delays(4)
    submit(student_browser, task, PASS_REPORT)
    row = ScorePost.objects.get()
    # The platform's copy carries a later timestamp than ours (its clock, its rounding).
    with platform.lock:
        platform.scores["item-1"][0]["timestamp"] = (row.scored_at + timedelta(seconds=1)).isoformat()

    sweep_later(3600)

    row.refresh_from_db()
    assert (row.status, row.confirmed_by_refusal, row.last_http_status) == (ScoreStatus.POSTED, True, 409)
    assert len(platform.accepted()) == 1


def test_already_exists_on_a_first_try_is_a_failure_not_a_confirmation(
    fake_llm, student_browser, task, platform
):
    fake_llm.reply(model_reply("PASS"))
    platform.script_scores(400)  # the platform's own 400 on the very first try

    submit(student_browser, task, PASS_REPORT)

    row = ScorePost.objects.get()
    assert (row.status, row.confirmed_by_refusal) == (ScoreStatus.FAILED, False)


# --- timestamps -------------------------------------------------------------------------------------


def test_timestamps_strictly_increase_per_line_item_and_user(fake_llm, student_browser, task, platform):
    fake_llm.reply(model_reply("PASS"), model_reply("PASS"), model_reply("PASS"))
    for _ in range(3):
        submit(student_browser, task, PASS_REPORT + f" {_}")

    stamps = list(ScorePost.objects.order_by("attempt_seq").values_list("scored_at", flat=True))
    assert stamps == sorted(stamps) and len(set(stamps)) == 3
    assert [s["timestamp"] for s in platform.accepted()] == [t.isoformat() for t in stamps]


def test_a_timestamp_never_repeats_even_when_the_clock_does(student_browser, task, platform):
    row_kwargs = _row_kwargs()
    now = timezone.now()
    later = now + timedelta(seconds=5)  # a row stamped ahead (the clock stepped back since)
    ScorePost.objects.create(**row_kwargs, scored_at=later)

    assert next_timestamp(link_id=row_kwargs["link"].pk, identity_id=row_kwargs["identity"].pk, now=now) == (
        later + timedelta(milliseconds=1)
    )


def _row_kwargs() -> dict:
    from tutor.lti.models import ResourceLink

    return {
        "link": ResourceLink.objects.get(),
        "identity": Identity.objects.get(subject="student-1"),
        "attempt_seq": 0,
        "score_given": 1,
        "score_maximum": 3,
        "activity_progress": "Completed",
        "grading_progress": "FullyGraded",
        "status": ScoreStatus.POSTED,
        "next_try_at": timezone.now(),
    }


# --- staff re-send ----------------------------------------------------------------------------------


def test_a_staff_resend_is_a_new_document_with_a_fresh_timestamp(
    fake_llm, student_browser, task, platform, course
):
    fake_llm.reply(model_reply("PASS"))
    platform.script_scores(401)
    submit(student_browser, task, PASS_REPORT)
    row = ScorePost.objects.get()
    old_stamp = row.scored_at
    staff = enroll(course, "teacher", "staff")

    assert score_requeue(score=row, actor=staff) is True

    row.refresh_from_db()
    assert row.status == ScoreStatus.POSTED
    assert row.scored_at > old_stamp
    [score] = platform.accepted()
    assert score["timestamp"] == row.scored_at.isoformat()
    requeued = AuditEvent.objects.get(event="lti_score_requeued")
    assert requeued.extra["previous_timestamp"] == old_stamp.isoformat()


def test_a_staff_resend_never_overwrites_a_newer_score(fake_llm, student_browser, task, platform, course):
    fake_llm.reply(model_reply("PASS"), model_reply("PASS"))
    platform.script_scores(401)
    submit(student_browser, task, PASS_REPORT)  # fails
    submit(student_browser, task, PASS_REPORT + " again")  # a newer score, posted
    old = ScorePost.objects.get(status=ScoreStatus.FAILED)
    staff = enroll(course, "teacher", "staff")

    assert score_requeue(score=old, actor=staff) is False

    old.refresh_from_db()
    assert old.status == ScoreStatus.FAILED
    assert len(platform.accepted()) == 1


# --- access tokens ------------------------------------------------------------------------------------


def test_score_posts_reuse_one_access_token(fake_llm, student_browser, task, platform):
    fake_llm.reply(model_reply("PASS"), model_reply("PASS"), model_reply("PASS"))
    for n in range(3):
        submit(student_browser, task, PASS_REPORT + f" {n}")

    assert len(platform.accepted()) == 3
    assert sum(r.path == "/token" for r in platform.requests) == 1


def test_a_token_the_platform_forgot_is_replaced_and_the_score_posted_once(
    fake_llm, student_browser, task, platform
):
    fake_llm.reply(model_reply("PASS"), model_reply("PASS"))
    submit(student_browser, task, PASS_REPORT)
    platform.issued_tokens.clear()  # the platform restarted

    submit(student_browser, task, PASS_REPORT + " again")

    assert len(platform.accepted()) == 2
    assert sum(r.path == "/token" for r in platform.requests) == 2
    assert list(ScorePost.objects.values_list("status", flat=True)) == ["posted", "posted"]


# --- pending-scores policies -----------------------------------------------------------------------------


def test_fully_graded_provisional_posts_a_gradebook_grade_and_again_after_review(
    fake_llm, student_browser, task, platform, course, registration, settings
):
    settings.LTI_PENDING_SCORES = "fully_graded_provisional"
    fake_llm.reply(model_reply("NEED_REVIEW"))
    body = submit(student_browser, task, PASS_REPORT)

    staff_verdict_create(
        submission=Submission.objects.get(pk=body["id"]),
        staff=enroll(course, "teacher", "staff"),
        criteria=[{"rubric_id": "A3", "status": "PASS", "reason": "explained well"}],
    )

    first, second = platform.accepted()
    assert (first["scoreGiven"], first["scoreMaximum"], first["gradingProgress"]) == (2, 3, "FullyGraded")
    assert (
        first["comment"] == "Provisional: staff review of 1 of 3 criteria is pending; this grade may go up."
    )
    assert (second["scoreGiven"], second["gradingProgress"], "comment" in second) == (3, "FullyGraded", False)


def test_hold_posts_nothing_until_every_criterion_is_decided(
    fake_llm, student_browser, task, platform, course, registration
):
    registration.pending_scores = "hold"  # the registration's own policy wins over the setting
    registration.save(update_fields=["pending_scores"])
    fake_llm.reply(model_reply("NEED_REVIEW"))
    body = submit(student_browser, task, PASS_REPORT)
    assert platform.score_requests() == []
    assert not ScorePost.objects.exists()

    staff_verdict_create(
        submission=Submission.objects.get(pk=body["id"]),
        staff=enroll(course, "teacher", "staff"),
        criteria=[{"rubric_id": "A3", "status": "PASS", "reason": "explained well"}],
    )

    [score] = platform.accepted()
    assert (score["scoreGiven"], score["gradingProgress"]) == (3, "FullyGraded")


# --- never inside a student's request ----------------------------------------------------------------------


def test_in_the_embedded_mode_the_score_is_posted_after_the_response_is_sent(
    fake_llm, student_browser, task, platform
):
    fake_llm.reply(model_reply("PASS"))
    student = Identity.objects.get(subject="student-1").user
    token, _ = Token.objects.get_or_create(user=student)
    body = json.dumps({"task": str(task.pk), "evidence": {"report": PASS_REPORT}}).encode()
    environ = (
        RequestFactory()
        .post(
            "/api/submissions/",
            data=body,
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Token {token.key}",
        )
        .environ
    )
    environ["wsgi.input"] = io.BytesIO(body)
    started = []

    # As a WSGI server does: the response is complete (and sent) before close().
    response = WSGIHandler()(environ, lambda status, headers: started.append(status))
    content = b"".join(response)

    assert started == ["201 Created"] and json.loads(content)["attempts"][0]["status"] == "completed"
    assert platform.score_requests() == []  # the student's answer did not wait for the LMS
    assert ScorePost.objects.get().status == ScoreStatus.QUEUED

    response.close()  # the server is done with the response: now the post

    assert len(platform.accepted()) == 1
    assert ScorePost.objects.get().status == ScoreStatus.POSTED


def test_outside_a_request_the_post_is_sent_at_once(fake_llm, student_browser, task, platform, course):
    """A management command or a worker has no response to wait for."""
    fake_llm.reply(model_reply("NEED_REVIEW"))
    body = submit(student_browser, task, PASS_REPORT)
    assert len(platform.accepted()) == 1

    staff_verdict_create(  # as `manage.py` or the worker would: no request around it
        submission=Submission.objects.get(pk=body["id"]),
        staff=enroll(course, "teacher", "staff"),
        criteria=[{"rubric_id": "A3", "status": "PASS", "reason": "explained well"}],
    )

    assert len(platform.accepted()) == 2
