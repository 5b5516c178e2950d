"""The student sees the memory loop (issue 36 item 5), in a real browser: a
correction is acknowledged with what was recorded and where; "what the
tutor knew" shows the texts it was given, not ids; the panel "What the
tutor remembers about me" lists the student's memory, and Forget removes an
item -- its row is gone and the next model request lacks it. At 1366×650 and
1280×800 nothing scrolls sideways; the acknowledgement speaks Chinese too."""

from __future__ import annotations

import re

import pytest

from corrections.models import Correction, MemoryItem
from tests.browser.conftest import tutor_requests
from tests.browser.factories import PASSWORD, student_with_password
from tests.browser.test_accessible_client import CONTRAST_JS
from tests.factories import make_course, make_task
from tests.worker.fakellm import Reply

pytestmark = pytest.mark.browser

PREFERENCE = "please answer in Chinese from now on"
DEADLINE_TUTOR = "The project deadline is December 10 at 18:00."
DEADLINE_CORRECTION = "Actually, the project deadline is December 12 at 18:00"
UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
DESKTOP_SIZES = [(1366, 650), (1280, 800)]


def last(page, css: str):
    return page.find_all(css)[-1]


def no_sideways_scroll(page, size) -> None:
    page.driver.set_window_size(*size)
    page.wait_until(
        lambda: page.js("return [window.outerWidth, window.outerHeight]") == list(size),
        f"the window is not {size}",
    )
    overflow = page.js("return document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"at {size} the page is {overflow}px wider than the window"


def test_a_student_corrects_the_tutor_sees_where_it_went_and_forgets_it(browser, model_server, settings):
    # No student makes a course fact verified alone (the default since issue 36 item 1).
    course = make_course("se-101")
    task = make_task(course)
    alice = student_with_password(course, "alice")
    model_server.script(
        Reply(DEADLINE_TUTOR),
        Reply("Thanks, I will pass it on to the course staff."),
        Reply("Understood: from now on I will answer in Chinese."),
        Reply("Next: write REPORT.md, then submit it for review."),
        Reply("Then run the tests again."),
    )
    page = browser
    page.open(f"/?task={task.pk}")
    page.sign_in_with_password("alice", PASSWORD)
    page.wait_for_text("#chat-log", "No messages yet")

    # --- a factual correction of what the tutor said: sent to course staff -------------------
    page.send_chat("when is the project deadline")
    page.wait_for_message_count(2)
    assert page.find_all("#chat-log .correction-ack") == []  # a question is no correction
    page.send_chat(DEADLINE_CORRECTION)
    page.wait_for_message_count(4)
    ack = last(page, "#chat-log .from-user .correction-ack")
    assert "Sent to course staff to check." in ack.text
    assert ack.get_attribute("data-status") == "sent_to_staff"
    page.wait_for_text("#chat-status", "Sent to course staff to check.")
    assert Correction.objects.get(type="factual").user_id == alice.pk

    # --- a preference: saved as hers -----------------------------------------------------------
    page.send_chat(PREFERENCE)
    page.wait_for_message_count(6)
    ack = last(page, "#chat-log .from-user .correction-ack")
    assert ack.text.endswith("Saved as your preference.")
    assert ack.get_attribute("data-status") == "saved"

    # --- what the tutor knew for the next reply: the preference's text, no ids -----------------
    page.send_chat("what should I do next")
    page.wait_for_message_count(8)
    knew = last(page, "#chat-log .from-tutor .knew")
    page.click(knew.find_element("css selector", "summary"))
    preferences = knew.find_element("css selector", ".knew-ids[data-key='preference_ids']")
    assert preferences.text == PREFERENCE
    assert not UUID.search(knew.text), knew.text
    page.shot("acknowledged")
    page.shot_element("#chat-log", "acknowledged-log")  # docs/client-correction-acknowledged.png

    # --- the memory panel: the preference with Forget -----------------------------------------
    page.click("#memory-open")
    page.wait_for("#memory-list .memory-item")
    item = MemoryItem.objects.get(user=alice, kind="preference")
    row = page.find(f"#memory-list .memory-item[data-id='{item.pk}']")
    assert PREFERENCE in row.text and "every conversation" in row.text
    assert not page.find_all("#memory-list .memory-item[data-tier='system'] .forget-button")  # staff decide
    ratios = dict(page.js(CONTRAST_JS, ["#chat-log .correction-ack", "#memory-list .meta", "#memory .hint"]))
    assert all(ratio and ratio >= 4.5 for ratio in ratios.values()), ratios
    assert page.find("#memory-open").get_attribute("aria-expanded") == "true"
    for size in DESKTOP_SIZES:
        no_sideways_scroll(page, size)
        assert page.find("#memory").is_displayed()
    page.shot("memory-panel")
    page.shot_element("#memory", "memory-panel-alone")  # docs/client-memory-panel.png

    page.click(row.find_element("css selector", ".forget-button"))
    page.wait_for_text("#memory-status", f"Forgotten: {PREFERENCE}")
    page.wait_until(
        lambda: not page.find_all(f"#memory-list .memory-item[data-id='{item.pk}']"),
        "the forgotten item is still listed",
    )
    assert not MemoryItem.objects.filter(pk=item.pk).exists()
    # What the tutor knew is read again: that reply's preference is gone.
    page.wait_until(
        lambda: page.find_all("#chat-log .knew-ids[data-key='preference_ids'] [data-gone]"),
        "the earlier reply still shows the forgotten preference",
    )

    # ...and the preference's acknowledgement says so.
    page.wait_until(
        lambda: page.find_all("#chat-log .correction-ack")[1].get_attribute("data-status") == "forgotten",
        "the preference's acknowledgement does not say it was forgotten",
    )
    assert page.find_all("#chat-log .correction-ack")[1].text.endswith("No longer remembered.")

    # --- the next request to the model lacks it -----------------------------------------------
    page.click("#memory-close")
    page.send_chat("and then")
    page.wait_for_message_count(10)
    requests = tutor_requests(model_server)
    assert PREFERENCE in requests[3][0]["content"]  # the request after it was saved
    assert PREFERENCE not in requests[4][0]["content"]

    # --- Chinese ---------------------------------------------------------------------------
    from selenium.webdriver.support.ui import Select

    Select(page.find("#lang-select")).select_by_value("zh")
    assert page.text("#memory-open") == "导师记住了我哪些内容"
    assert "已发送给课程老师核实" in page.find_all("#chat-log .correction-ack")[0].text
    page.click("#memory-open")
    page.wait_for("#memory-list .memory-item")
    assert page.text("#memory-heading") == "导师记住了我哪些内容"
    for size in DESKTOP_SIZES:
        no_sideways_scroll(page, size)
        # The chat card fits the window: Send and the panel's button stay in view.
        page.js("document.getElementById('chat').scrollIntoView({block: 'start'})")
        for button in ("#send-button", "#memory-open"):
            bottom = page.js(f"return document.querySelector({button!r}).getBoundingClientRect().bottom")
            height = page.js("return window.innerHeight")
            assert bottom <= height, f"{button} ends at {bottom}px, below the {height}px window at {size}"
    page.shot("chinese")
    assert page.script_errors() == []
