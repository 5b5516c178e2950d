"""The page as people with other devices, languages and needs meet it: phone
width, keyboard only, a screen reader's labels and live regions, contrast,
Chinese text -- and untrusted text that must stay text."""

from __future__ import annotations

import pytest

from tests.browser.conftest import PHONE_SIZE
from tests.browser.factories import context_meta, long_session, student_with_password, token_for
from tests.factories import (
    criterion_entry,
    make_attempt,
    make_course,
    make_submission,
    make_task,
    review_result,
)
from tutor.models import TutorMessage

pytestmark = pytest.mark.browser

HOSTILE = '<img src=x onerror="window.__injected = 1"> **not markup**'
CHINESE_QUESTION = "接下来我该怎么做？请用中文回答。"
# Ids as other apps put them into context_meta; "skill_ids" stands for a key
# no one has written yet -- the page must show it all the same.
KNEW = context_meta(
    "current",
    feedback_rubric_ids=["A1"],
    fact_ids=["6c1b3f0e-0f5e-4d5e-9a51-0d1c2b3a4f50"],
    preference_ids=[11],
    memory_ids=[21, 22],
    process_rule_ids=[31],
    lesson_ids=[41, 42, 43],
    skill_ids=["s-1"],
    omitted={"history": 3, "lessons": 2, "facts": 0},
)

# Luminance contrast of each element's text against the first opaque
# background behind it (WCAG 2.x).
CONTRAST_JS = """
function rgb(s) {
  const m = s.match(/[\\d.]+/g).map(Number);
  return {r: m[0], g: m[1], b: m[2], a: m.length > 3 ? m[3] : 1};
}
function lum(c) {
  const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
}
function background(el) {
  for (let node = el; node; node = node.parentElement) {
    const c = rgb(getComputedStyle(node).backgroundColor);
    if (c.a > 0.99) return c;
  }
  return {r: 255, g: 255, b: 255, a: 1};
}
return arguments[0].map((sel) => {
  const el = document.querySelector(sel);
  if (!el) return [sel, null];
  const a = lum(rgb(getComputedStyle(el).color)), b = lum(background(el));
  return [sel, (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05)];
});
"""

UNLABELLED_JS = """
return [...document.querySelectorAll('input:not([type=hidden]), select, textarea, button')]
  .filter((el) => el.offsetParent !== null)
  .filter((el) => {
    const named = (el.labels && el.labels.length) || el.getAttribute('aria-label') || el.textContent.trim();
    return !named;
  })
  .map((el) => el.outerHTML.slice(0, 120));
"""


def test_phone_width_keyboard_labels_contrast_chinese_and_untrusted_text(browser_factory):
    from selenium.webdriver.common.keys import Keys

    course = make_course("se-101")
    task = make_task(course)
    bob = student_with_password(course, "bob")
    session = long_session(bob, task, 2, last_meta=KNEW)
    TutorMessage.objects.create(session=session, position=3, role="user", content=HOSTILE)
    session.message_count = 3
    session.save(update_fields=["message_count"])
    submission = make_submission(bob, task)
    make_attempt(
        submission,
        result=review_result(
            [
                criterion_entry("A1", "FAIL", basis="self_report", reason="CI 失败：退出码 1"),
                criterion_entry("A2", "PASS"),
                criterion_entry("A3", "NEED_REVIEW", basis="model", reason=HOSTILE),
                criterion_entry("L1", "NEED_REVIEW", kind="learning", basis="none"),
            ],
            next_step="先修复 A1。",
        ),
    )
    page = browser_factory("bob", phone=True)
    page.open(f"/?task={task.pk}")
    page.sign_in_with_token(token_for(bob))
    page.wait_for_message_count(3)
    page.wait_for_text("#review-card", "CI 失败：退出码 1")

    # Phone width: nothing is wider than the screen.
    assert page.js("return window.innerWidth") == PHONE_SIZE[0]
    overflow = page.js("return document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"the page is {overflow}px wider than a {PHONE_SIZE[0]}px screen"
    # Every control has an accessible name; progress and replies are announced.
    assert page.js(UNLABELLED_JS) == []
    assert page.find("#review-status").get_attribute("aria-live") == "polite"
    assert page.find("#chat-status").get_attribute("role") == "status"
    assert page.find("#chat-log").get_attribute("role") == "log"
    # Text meets WCAG AA (4.5:1), status badges included.
    selectors = [
        "body",
        ".hint",
        "#review-card .verdict-FAIL",
        "#review-card .verdict-PASS",
        "#review-card .verdict-NEED_REVIEW",
        "#send-button",
        "#review-card .meta",
        ".message .who",
        ".knew summary",
        ".skip-link",
    ]
    ratios = dict(page.js(CONTRAST_JS, selectors))
    low = {sel: ratio for sel, ratio in ratios.items() if ratio is None or ratio < 4.5}
    assert low == {}, f"contrast below 4.5:1: {low}"

    # Untrusted text (a message, a review reason) is shown as text, never run.
    assert page.js("return window.__injected") is None
    assert page.messages()[-1].find_element("css selector", ".content").text == HOSTILE
    assert HOSTILE in page.text("#review-card .criterion[data-rubric-id='A3'] .reason")

    # What the tutor knew: every list of ids, known keys or not, with counts.
    knew = page.messages()[1].find_element("css selector", ".knew")
    page.click(knew.find_element("css selector", "summary"))
    counts = {
        node.get_attribute("data-key"): int(node.get_attribute("data-count"))
        for node in knew.find_elements("css selector", ".knew-ids")
    }
    assert counts == {
        "fact_ids": 1,
        "preference_ids": 1,
        "memory_ids": 2,
        "process_rule_ids": 1,
        "lesson_ids": 3,
        "skill_ids": 1,
    }
    # Facts, preferences, memories and rules show their texts (issue 36 item 5): these
    # ids name no item the student may read, so each says it is no longer remembered.
    assert "6c1b3f0e-0f5e-4d5e-9a51-0d1c2b3a4f50" not in knew.text
    assert len(knew.find_elements("css selector", ".knew-texts [data-gone]")) == 5
    assert "Lessons (3)" in knew.text and "skill (1)" in knew.text
    assert "41" in knew.text and "s-1" in knew.text  # other keys keep their ids
    assert "history: 3" in knew.text and "lessons: 2" in knew.text and "facts: 0" not in knew.text
    page.shot("phone-english")

    # Keyboard only: after a fresh load the skip link comes first and leads
    # to the content; a message is typed and sent with Ctrl+Enter (the
    # offline tutor answers: no model is configured).
    page.driver.refresh()
    page.wait_for_message_count(3)
    page.find("body").send_keys(Keys.TAB)
    assert page.js("return document.activeElement.className") == "skip-link"
    page.js("return document.activeElement").send_keys(Keys.ENTER)
    assert page.js("return document.activeElement.id") == "main"
    box = page.find("#chat-input")
    box.send_keys(CHINESE_QUESTION)
    box.send_keys(Keys.CONTROL, Keys.ENTER)
    messages = page.wait_for_message_count(5, timeout=15)
    assert messages[3].find_element("css selector", ".content").text == CHINESE_QUESTION
    assert page.find("#chat-input").get_attribute("value") == ""

    # Chinese: the interface switches, and stays switched after a reload.
    from selenium.webdriver.support.ui import Select

    Select(page.find("#lang-select")).select_by_value("zh")
    assert page.text("#chat-heading") == "向导师提问"
    assert page.js("return document.documentElement.lang") == "zh-CN"
    assert "未通过" in page.text("#review-card .criterion[data-rubric-id='A1'] .badge")
    page.driver.refresh()
    page.wait_for_message_count(5)
    assert page.text("#review-heading") == "最新评审"
    assert page.text("#send-button") == "发送"
    assert page.find("#chat-input").get_attribute("id") in {
        label.get_attribute("for") for label in page.find_all("label")
    }
    page.shot("phone-chinese")
    assert page.script_errors() == []
