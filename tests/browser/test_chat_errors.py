"""What the page says when the tutor cannot answer (SPEC §4): a 409 while an
earlier reply is still being written, a 503 when the model is down -- and
that the student's words are never lost in either case."""

from __future__ import annotations

import pytest

from tests.browser.conftest import tutor_requests
from tests.browser.factories import PASSWORD, student_with_password
from tests.factories import make_course, make_task
from tests.worker.fakellm import Gate, Reply
from tutor.models import TutorMessage

pytestmark = pytest.mark.browser


def test_a_second_tab_is_told_a_reply_is_coming_and_a_model_outage_keeps_the_message(browser, model_server):
    course = make_course("se-101")
    task = make_task(course)
    student_with_password(course, "alice")
    browser.open(f"/?task={task.pk}")
    browser.sign_in_with_password("alice", PASSWORD)
    browser.wait_for_text("#chat-log", "No messages yet")
    first_tab = browser.driver.current_window_handle

    # The first tab's question is held at the model: its reply is pending.
    gate = Gate(Reply("ANSWER-1: look at the rubric first."))
    model_server.script(gate)
    browser.send_chat("first question")
    model_server.wait_for_requests(1, timeout=10)
    browser.wait_for_text("#chat-status", "The tutor is writing")

    # A second tab of the same session: the pending turn is already in the
    # server's history; a message now is refused with 409 and kept as a draft.
    browser.driver.switch_to.new_window("tab")
    browser.open(f"/?task={task.pk}")
    browser.wait_for_message_count(1)
    browser.send_chat("second question")
    browser.wait_for_text("#chat-error", "A reply is still coming")
    assert browser.find("#chat-input").get_attribute("value") == "second question"
    assert not TutorMessage.objects.filter(content="second question").exists()
    browser.shot("reply-still-coming")

    gate.open()
    browser.driver.switch_to.window(first_tab)
    browser.wait_for_text("#chat-log", "ANSWER-1")
    # The second tab reads the history again until the reply has arrived.
    browser.driver.switch_to.window(browser.driver.window_handles[-1])
    browser.wait_for_text("#chat-log", "ANSWER-1", timeout=15)
    assert browser.wait_for_message_count(2)

    # The model is down (the fake answers 500, no retries): 503, and the
    # message is kept -- shown from the server's history.
    model_server.script(then=Reply("provider exploded", status=500))
    browser.click("#send-button")
    browser.wait_for_text("#chat-error", "The tutor is unavailable, your message is kept")
    messages = browser.wait_for_message_count(3)
    assert messages[-1].get_attribute("data-role") == "user"
    assert "second question" in messages[-1].text
    assert "provider exploded" not in browser.driver.page_source
    assert TutorMessage.objects.filter(content="second question", role="user").count() == 1
    browser.shot("tutor-unavailable")

    # After the reload the kept message is still there, and the tutor can go on.
    browser.driver.refresh()
    browser.wait_for_message_count(3)
    model_server.script(Reply("ANSWER-2: back again."))
    browser.send_chat("are you back?")
    browser.wait_for_text("#chat-log", "ANSWER-2", timeout=15)
    last = tutor_requests(model_server)[-1]
    assert [m["content"] for m in last[1:]] == [
        "first question",
        "ANSWER-1: look at the rubric first.",
        "second question",
        "are you back?",
    ]
    assert browser.script_errors() == []
