"""The review card when a review could not judge the work (SPEC §2, §3): an
unavailable review keeps its machine checks and is never shown as a
failure; a review under older rules says so; both offer a new review, and
the page follows it to its end."""

from __future__ import annotations

import pytest

from feedback.models import AttemptStatus, ReviewAttempt
from tests.browser.factories import student_with_password, token_for
from tests.factories import (
    course_data,
    criterion_entry,
    make_attempt,
    make_course,
    make_submission,
    make_task,
)
from tutor.coursefile import course_import, validate_course

pytestmark = pytest.mark.browser


def test_unavailable_and_outdated_reviews_offer_a_new_review_that_the_page_follows(browser):
    course = make_course("se-101")
    task = make_task(course)
    alice = student_with_password(course, "alice")
    submission = make_submission(alice, task, {"report": "first() returns undefined", "files": {}})
    # The provider failed after the machine checks had run: their verdicts are kept.
    make_attempt(
        submission,
        AttemptStatus.UNAVAILABLE,
        {
            "overall": None,
            "criteria": [criterion_entry("A2", "PASS", reason="names first, undefined")],
            "next_step": "",
        },
    )
    browser.open(f"/?task={task.pk}")
    browser.sign_in_with_token(token_for(alice))

    browser.wait_for_step("unavailable")
    card = browser.text("#review-card")
    assert "not a judgement of your work" in card
    assert "names first, undefined" in card
    assert "FAIL" not in card
    browser.wait_for_tutor_view("unavailable")
    browser.shot("unavailable")

    # A new review (the offline reviewer: eager, completed in the request).
    browser.click("#review-card button.retry")
    browser.wait_for_step("completed")
    browser.wait_for_tutor_view("current")
    assert ReviewAttempt.objects.filter(submission=submission).count() == 2

    # The rubric gets a new version: the review is outdated, and says so.
    course_import(spec=validate_course(course_data("se-101", version="2026.2")))
    browser.driver.refresh()
    browser.wait_for_tutor_view("stale_rules")
    assert "review rules changed" in browser.text("#tutor-view")
    browser.shot("stale-rules")
    browser.click("#tutor-view button.retry")
    browser.wait_for_tutor_view("current")
    newest = ReviewAttempt.objects.filter(submission=submission).order_by("-attempt_seq").first()
    assert newest.rubric_version == "2026.2" and newest.status == AttemptStatus.COMPLETED
    assert browser.script_errors() == []
