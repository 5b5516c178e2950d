"""The student page's rough edges (SPEC §7, turn 3), in headless Chromium:
Send stays reachable on a short laptop screen, an empty submission asks
first and the API refuses the emptiest, a blank message says why it was
not sent, numbers count the student's own work, and a Chinese page shows
Chinese words and dates."""

from __future__ import annotations

import pytest
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.support.ui import Select

from feedback.models import Submission
from tests.browser.conftest import tutor_requests
from tests.browser.factories import PASSWORD, long_session, student_with_password
from tests.desk_data import waiting_review
from tests.factories import enroll, make_attempt, make_course, make_submission, make_task
from tests.worker.fakellm import Reply
from tutor.models import TutorMessage

pytestmark = pytest.mark.browser
SHORT_LAPTOP = (1366, 650)


def viewport(browser, width: int, height: int) -> None:
    browser.driver.set_window_size(width, height)
    inner = browser.js("return [window.innerWidth, window.innerHeight]")
    browser.driver.set_window_size(width + width - inner[0], height + height - inner[1])


def in_view(browser, css: str) -> bool:
    return browser.js(
        "const r = document.querySelector(arguments[0]).getBoundingClientRect();"
        "return r.top >= 0 && r.bottom <= window.innerHeight && r.left >= 0 && r.right <= window.innerWidth;",
        css,
    )


def test_a_student_on_a_short_laptop_screen_sends_a_message_with_the_mouse(browser, model_server):
    course = make_course("se-101")
    task = make_task(course)
    alice = student_with_password(course, "alice")
    long_session(alice, task, 30)  # a long conversation: the log is taller than the window
    viewport(browser, *SHORT_LAPTOP)
    browser.open(f"/?task={task.pk}")
    browser.sign_in_with_password("alice", PASSWORD)
    browser.wait_for_message_count(30)

    # Scrolled to the chat, or to the end of the page, the whole chat card
    # fits the window: the log scrolls inside it, the form stays in view.
    for scroll in ("document.querySelector('#chat').scrollIntoView()", "window.scrollTo(0, 1e6)"):
        browser.js(scroll)
        assert in_view(browser, "#send-button"), f"Send is out of view after {scroll}"
        assert in_view(browser, "#chat-heading")
    browser.shot("short-laptop")
    model_server.script(Reply("ANSWER: look at the rubric."))
    browser.find("#chat-input").send_keys("what is left to do?")
    ActionChains(browser.driver).move_to_element(browser.find("#send-button")).click().perform()

    browser.wait_for_text("#chat-log", "ANSWER: look at the rubric.", timeout=15)
    assert tutor_requests(model_server)[-1][-1]["content"] == "what is left to do?"
    assert browser.script_errors() == []


def test_a_blank_message_says_why_it_was_not_sent(browser):
    course = make_course("se-101")
    task = make_task(course)
    student_with_password(course, "alice")
    browser.open(f"/?task={task.pk}")
    browser.sign_in_with_password("alice", PASSWORD)
    browser.wait_for_text("#chat-log", "No messages yet")

    browser.send_chat("   \n  ")

    browser.wait_for_text("#chat-error", "Your message is empty, so it was not sent.")
    assert not TutorMessage.objects.exists()


def test_an_empty_submission_asks_first_and_the_api_refuses_it(browser):
    course = make_course("se-101")
    task = make_task(course)
    student_with_password(course, "alice")
    browser.open(f"/?task={task.pk}")
    browser.sign_in_with_password("alice", PASSWORD)
    browser.wait_for("#report")

    browser.click("#submit-button")
    alert = browser.wait_until(lambda: browser.driver.switch_to.alert, "no confirmation was asked")
    assert "no report, no file and no CI result" in alert.text
    alert.dismiss()
    assert not Submission.objects.exists()

    browser.click("#submit-button")
    browser.wait_until(lambda: browser.driver.switch_to.alert, "no confirmation was asked").accept()
    browser.wait_for_text("#evidence-error", "the evidence is empty")
    assert not Submission.objects.exists()
    browser.shot("empty-refused")


def test_numbers_count_the_students_own_work_and_a_chinese_page_says_everything_in_chinese(browser):
    course = make_course("se-101")
    task = make_task(course)
    for i in range(3):  # someone else's work comes first in the global sequence
        make_attempt(make_submission(enroll(course, f"other{i}"), task))
    alice = student_with_password(course, "alice")
    waiting = make_attempt(make_submission(alice, task), result=waiting_review())
    assert waiting.submission.submission_seq == 4
    browser.open(f"/?task={task.pk}")
    browser.sign_in_with_password("alice", PASSWORD)

    browser.wait_for_text("#review-card .meta", "Your submission 1,")
    assert "review 1" in browser.text("#review-card .meta")
    a3 = browser.find('#review-card .criterion[data-rubric-id="A3"]')
    assert a3.get_attribute("data-awaiting-staff") == "true"
    assert "Waiting for a teacher's review" in a3.text
    assert "semantic review not configured" not in browser.text("#review-card")
    a1 = browser.find('#review-card .criterion[data-rubric-id="A1"]')
    assert a1.find_element("css selector", ".basis").text == "the course's CI service"
    for word in ("self_report", "current", "none"):
        assert word not in browser.text("#review").split(), word

    Select(browser.find("#lang-select")).select_by_value("zh")
    browser.wait_for_text("#review-card .meta", "你的第 1 次提交")
    meta = browser.text("#review-card .meta")
    assert "年" in meta, meta  # the date in the page's locale (zh-CN), not the browser's
    assert "等待老师评审" in browser.text('#review-card .criterion[data-rubric-id="A3"]')
    browser.shot("chinese-review")
    assert browser.script_errors() == []
