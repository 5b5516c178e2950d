"""The AI notice in the student client (SPEC §13): shown once per course,
acknowledged, not shown again, shown on demand -- and in a course that
requires it, a message before the acknowledgement opens the notice instead."""

from __future__ import annotations

import pytest
from selenium.webdriver.support.ui import Select

from tests.browser.factories import PASSWORD, student_with_password
from tests.factories import make_course, make_task
from tests.worker.fakellm import Reply
from tutor.models import NoticeAcknowledgement, TutorMessage
from tutor.rights.notice import notice_version

pytestmark = pytest.mark.browser


def test_the_notice_is_shown_once_acknowledged_and_shown_again_on_demand(browser, model_server):
    course = make_course("se-101")
    course.ai_notice_required = True
    course.save(update_fields=["ai_notice_required"])
    task = make_task(course)
    student = student_with_password(course, "alice")
    browser.open(f"/?task={task.pk}")
    browser.sign_in_with_password("alice", PASSWORD)

    # Shown by itself on the first visit: who answers, with which model, what is sent, for how long.
    browser.wait_for_text("#ai-notice", "come from an AI system")
    notice = browser.text("#ai-notice")
    assert "fake-model" in notice and "127.0.0.1" in notice
    assert "your messages to the tutor" in notice and "tutor messages: 365 days" in notice
    browser.shot("notice-first-visit")

    # The course requires it: a message before the acknowledgement is refused and kept as a draft.
    browser.wait_for_text("#chat-log", "No messages yet")
    browser.send_chat("hello before reading")
    browser.wait_for_text("#chat-error", "asks you to read the notice")
    assert not TutorMessage.objects.exists()
    assert browser.find("#chat-input").get_attribute("value") == "hello before reading"

    browser.click("#ai-notice-ack")
    browser.wait_until(lambda: not browser.find("#ai-notice").is_displayed(), "the notice closes")
    [ack] = NoticeAcknowledgement.objects.filter(user=student)
    assert (ack.course_id, ack.version) == (course.pk, notice_version())

    model_server.script(Reply("ANSWER: hello."))
    browser.click("#send-button")
    browser.wait_for_text("#chat-log", "ANSWER: hello.", timeout=15)

    # Not shown again after a reload ...
    browser.driver.refresh()
    browser.wait_for_message_count(2)
    assert not browser.find("#ai-notice").is_displayed()

    # ... but on demand, in Chinese too, with a close button instead of the acknowledgement.
    browser.click("#ai-notice-open")
    browser.wait_for_text("#ai-notice", "come from an AI system")
    assert (
        not browser.find("#ai-notice-ack").is_displayed() and browser.find("#ai-notice-close").is_displayed()
    )
    assert browser.js("return document.activeElement.id") == "ai-notice-heading"
    browser.shot("notice-on-demand")
    browser.click("#ai-notice-close")
    browser.wait_until(lambda: not browser.find("#ai-notice").is_displayed(), "the notice closes")
    assert NoticeAcknowledgement.objects.filter(user=student).count() == 1

    Select(browser.find("#lang-select")).select_by_value("zh")
    browser.click("#ai-notice-open")
    browser.wait_for_text("#ai-notice", "来自 AI 系统")
    assert "导师对话消息：365 天" in browser.text("#ai-notice")
    assert browser.script_errors() == []
