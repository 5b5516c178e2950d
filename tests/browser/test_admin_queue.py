"""Course staff settle a review in Django admin, in a real browser (SPEC §8):
enrolled with ``enroll --staff``, they sign in, see at once which reviews need
them, give a verdict without leaving admin, and find it in the audit trail."""

from __future__ import annotations

import io
import sys

import pytest
from django.core.management import call_command
from selenium.webdriver.support.ui import Select

from feedback.models import AttemptKind, ReviewAttempt
from tests.factories import (
    criterion_entry,
    enroll,
    make_attempt,
    make_course,
    make_submission,
    make_task,
    review_result,
)
from tutor.models import AuditEvent

pytestmark = pytest.mark.browser
PASSWORD = "staff-browser-password-1"


def need_review():
    return review_result(
        [
            criterion_entry("A1", "PASS", basis="self_report"),
            criterion_entry("A2", "PASS"),
            criterion_entry("A3", "NEED_REVIEW", basis="none", reason="semantic review not configured"),
            criterion_entry("L1", "NEED_REVIEW", kind="learning", basis="none"),
        ],
        next_step="Ask staff to check A3: Explanation is correct",
    )


def enroll_staff_from_the_command_line(monkeypatch, course_slug: str, username: str) -> None:
    monkeypatch.setattr(sys, "stdin", io.StringIO(PASSWORD + "\n"))
    call_command(
        "enroll", course_slug, username, "--staff", "--create", "--password-stdin",
        stdout=io.StringIO(), stderr=io.StringIO(),
    )  # fmt: skip


def test_course_staff_settle_a_need_review_from_the_queue(browser, monkeypatch):
    course = make_course("se-101")
    task = make_task(course)
    alice = enroll(course, "alice")
    waiting = make_attempt(make_submission(alice, task), result=need_review())
    done = make_attempt(make_submission(enroll(course, "bob"), task))  # PASS: nothing to decide
    other_task = make_task(make_course("other-202"))
    elsewhere = make_attempt(
        make_submission(enroll(other_task.course, "carol"), other_task), result=need_review()
    )
    enroll_staff_from_the_command_line(monkeypatch, "se-101", "teacher")

    browser.open("/admin/login/?next=/admin/feedback/reviewattempt/")
    browser.find("#id_username").send_keys("teacher")
    browser.find("#id_password").send_keys(PASSWORD)
    browser.click("input[type=submit]")
    browser.wait_for("#result_list")
    rows = browser.find_all("#result_list tbody tr")
    browser.shot("queue")

    # The queue opens on what needs a decision: alice's review only.
    assert len(rows) == 1
    assert "alice" in rows[0].text and "NEED_REVIEW" in rows[0].text
    page = browser.driver.page_source
    assert "carol" not in page and "other-202" not in page
    assert str(done.attempt_seq) not in rows[0].text.split()

    browser.click("#result_list tbody tr input.action-select")
    Select(browser.find("select[name=action]")).select_by_value("give_verdict")
    browser.click("button[name=index]")
    browser.wait_for("#verdict-form")
    Select(browser.find("#id_status_A3")).select_by_value("PASS")
    browser.find("#id_reason_A3").send_keys("The explanation covers the empty array correctly.")
    # L1 waits for staff too (no automatic check): the review leaves the queue once both are settled.
    Select(browser.find("#id_status_L1")).select_by_value("PASS")
    browser.find("#id_reason_L1").send_keys("The report reflects on the empty array.")
    browser.shot("verdict-form")
    browser.click("#verdict-form input[type=submit]")

    browser.wait_for_text(".messagelist", "Staff verdict recorded")
    browser.shot("after-verdict")
    assert "overall PASS" in browser.text(".messagelist")
    assert browser.find_all("#result_list tbody tr") == []  # settled: the queue is empty
    verdict = ReviewAttempt.objects.get(submission=waiting.submission, kind=AttemptKind.STAFF_VERDICT)
    assert verdict.result["overall"] == "PASS"

    browser.open("/admin/feedback/reviewattempt/?decision=all")
    browser.wait_for("#result_list")
    assert any("PASS" in r.text and "staff" in r.text for r in browser.find_all("#result_list tbody tr"))
    browser.open(f"/admin/feedback/reviewattempt/{verdict.pk}/change/")
    browser.wait_for_text(".criteria-table", "The explanation covers the empty array correctly.")
    browser.shot("verdict-record")

    browser.open("/admin/tutor/auditevent/?event=staff_verdict")
    browser.wait_for("#result_list")
    (row,) = browser.find_all("#result_list tbody tr")
    assert "staff_verdict" in row.text and "teacher" in row.text and "NEED_REVIEW" in row.text
    browser.shot("audit-trail")
    assert AuditEvent.objects.get(event="staff_verdict").target_id == str(verdict.pk)
    assert elsewhere.submission.attempts.count() == 1  # another course's review untouched


def test_a_superuser_keeps_a_held_global_lesson_from_its_queue(browser):
    from django.contrib.auth import get_user_model

    from lessons.models import Lesson
    from tests.lessons.conftest import make_lesson

    held = make_lesson(course=None, title="Compare the escaped output", harmful=3, helpful=1)
    make_lesson(course=None, title="A quiet global lesson")  # no marks: not in the queue
    get_user_model().objects.create_superuser("root", "root@example.org", PASSWORD)

    browser.open("/admin/login/?next=/admin/lessons/lesson/%3Fqueue%3Dharmful_global")
    browser.find("#id_username").send_keys("root")
    browser.find("#id_password").send_keys(PASSWORD)
    browser.click("input[type=submit]")
    browser.wait_for("#result_list")
    (row,) = browser.find_all("#result_list tbody tr")
    assert "Compare the escaped output" in row.text
    browser.shot("held-global-lessons")

    browser.click("#result_list tbody tr input.action-select")
    Select(browser.find("select[name=action]")).select_by_value("keep_injected")
    browser.click("button[name=index]")

    browser.wait_for_text(".messagelist", "Kept injected: 1")
    browser.shot("after-keep")
    assert browser.find_all("#result_list tbody tr") == []  # decided: the queue is empty
    held.refresh_from_db()
    assert (held.status, held.harmful_kept) == ("injected", 3)
    assert Lesson.objects.filter(status="injected").count() == 2
    assert AuditEvent.objects.get(event="lesson_kept").target_id == str(held.pk)
