"""A TA clears the day's work from the desk (SPEC §8, turn 3), in headless
Chromium at a laptop's 1366×768 and a phone's 390×844: the desk's counts,
one item of each queue cleared from its row without horizontal scroll, the
counts dropping; the regrade round trip; the desk in Chinese.

``DESK_SCREENSHOTS=docs/screenshots`` also writes the desk and each queue at
1366×768 there (the README's staff workflow shows them)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from selenium.webdriver.support.ui import Select

from feedback.models import AttemptKind, RegradeStatus, ReviewAttempt
from tests.browser.factories import PASSWORD, student_with_password
from tests.desk_data import QUEUE_NAMES, seed_queues
from tests.factories import make_course, make_task
from tutor.models import Enrollment

pytestmark = pytest.mark.browser
LAPTOP = (1366, 768)
SCREENSHOTS = os.environ.get("DESK_SCREENSHOTS")

# How each queue's item is cleared from its row: (button, reason typed first).
CLEAR = {
    "regrades": ("decline", "The CI service reported this run; the review stands."),
    "correction_cases": ("reject", "The lab's desks are 720 mm; the handbook is right."),
    "proposed_facts": ("verify", "Posted on the lab door."),
    "lesson_drafts": ("approve_use", None),
    "lessons_approved_unused": ("use", None),
    "lessons_harmful": ("retire", None),
    "skill_candidates": ("accept", None),
    "lti_failed_scores": ("resend", None),
}


def laptop(browser) -> None:
    browser.driver.set_window_size(*LAPTOP)
    inner = browser.js("return [window.innerWidth, window.innerHeight]")
    # The window's own frame takes some of its size: the viewport is what must measure 1366×768.
    browser.driver.set_window_size(LAPTOP[0] + (LAPTOP[0] - inner[0]), LAPTOP[1] + (LAPTOP[1] - inner[1]))
    assert browser.js("return [window.innerWidth, window.innerHeight]") == list(LAPTOP)


def sign_in(browser, username: str, next_path: str = "/admin/") -> None:
    browser.open(f"/admin/login/?next={next_path}")
    browser.find("#id_username").send_keys(username)
    browser.find("#id_password").send_keys(PASSWORD)
    browser.click("input[type=submit]")


def counts(browser) -> dict[str, int]:
    browser.wait_for("#desk-cards")
    return {
        card.get_attribute("data-queue"): int(card.get_attribute("data-count"))
        for card in browser.find_all("#desk-cards .desk-card")
    }


def no_horizontal_scroll(browser) -> None:
    widths = browser.js(
        "const r = document.querySelector('#changelist .results, #result_list');"
        "return [document.documentElement.scrollWidth, window.innerWidth,"
        " r ? r.scrollWidth : 0, r ? r.clientWidth : 0]"
    )
    page, viewport, table, box = widths
    assert page <= viewport, f"the page is {page} px wide in a {viewport} px window"
    # Both widths are rounded from fractional layout widths: one pixel is rounding
    # (seen in CI with dates of another width), not a scrollbar hiding a button.
    assert table <= box + 1, f"the list is {table} px wide in its {box} px box"
    hidden = browser.js(
        "const r = document.querySelector('#changelist .results, #result_list').getBoundingClientRect();"
        "return [...document.querySelectorAll('#result_list .row-acts button, #result_list .row-acts a')]"
        ".filter(b => b.getBoundingClientRect().right > r.right + 1).map(b => b.textContent.trim())"
    )
    assert hidden == [], f"row buttons beyond the list's box: {hidden}"


def keep(browser, name: str) -> None:
    if SCREENSHOTS:
        Path(SCREENSHOTS).mkdir(parents=True, exist_ok=True)
        browser.driver.save_screenshot(str(Path(SCREENSHOTS) / f"{name}.png"))
    browser.shot(name)


@pytest.fixture
def desk(db):
    course = make_course("se-101")
    items = seed_queues(course, make_task(course))
    teacher = student_with_password(course, "teacher", Enrollment.Role.STAFF)
    teacher.is_staff = True
    teacher.save(update_fields=["is_staff"])
    return items


def test_a_ta_clears_one_item_of_each_queue_from_the_desk_without_horizontal_scroll(
    browser, desk, monkeypatch
):
    # A score sent again waits for the worker, as with a broker: not posted here.
    monkeypatch.setattr("tutor.lti.services.scores.score_dispatch", lambda score_id: None)
    laptop(browser)
    sign_in(browser, "teacher")
    assert counts(browser) == dict.fromkeys(QUEUE_NAMES, 1)
    assert browser.js("return document.documentElement.scrollWidth <= window.innerWidth")
    keep(browser, "desk")

    for name in QUEUE_NAMES:
        browser.click(f'.desk-card[data-queue="{name}"] a.open')
        browser.wait_for("#result_list")
        no_horizontal_scroll(browser)
        keep(browser, f"queue-{name}")
        (row,) = browser.find_all("#result_list tbody tr")
        if name == "reviews":
            browser.click(row.find_element("css selector", 'a[data-act="verdict"]'))
            browser.wait_for("#verdict-form")
            assert "CI failed" in browser.text(".criteria-table")
            assert browser.find_all(".evidence-file .path")[0].text == "REPORT"
            keep(browser, "verdict-form")
            Select(browser.find("#id_status_A3")).select_by_value("PASS")
            browser.find("#id_reason_A3").send_keys("The explanation covers the empty array.")
            browser.click("#verdict-form input[type=submit]")
        else:
            button, reason = CLEAR[name]
            if reason:
                row.find_element("css selector", ".row-reason").send_keys(reason)
            browser.click(row.find_element("css selector", f'button[data-act="{button}"]'))
        browser.wait_for(".messagelist .success, .messagelist .info")
        assert browser.find_all("#result_list tbody tr") == [], f"{name}: the item is still listed"
        assert not browser.find_all(".messagelist .error"), browser.text(".messagelist")
        browser.click("#site-name a")  # back to the desk
        assert counts(browser)[name] == 0, name

    assert counts(browser) == dict.fromkeys(QUEUE_NAMES, 0)
    assert browser.script_errors() == []


def test_the_regrade_round_trip_shows_the_request_and_returns_to_its_queue(browser, desk):
    regrade = desk["regrades"]
    laptop(browser)
    sign_in(browser, "teacher", "/admin/feedback/regraderequest/")
    browser.wait_for("#result_list")
    browser.click('#result_list a[data-act="verdict"]')

    origin = browser.wait_for("#regrade-origin")
    assert "Regrade request on A2 from asker" in origin.text
    assert regrade.reason in browser.text("#regrade-origin .regrade-reason")
    assert "regrade-asked" in browser.find("#id_status_A2").find_element(
        "xpath", "./ancestor::tr"
    ).get_attribute("class")
    keep(browser, "regrade-verdict")
    Select(browser.find("#id_status_A2")).select_by_value("PASS")
    browser.find("#id_reason_A2").send_keys("The second paragraph names undefined.")
    browser.click("#verdict-form input[type=submit]")

    browser.wait_for_text(".messagelist", "Settled the regrade request on A2 by asker")
    assert browser.driver.current_url.endswith("/admin/feedback/regraderequest/?regrade=open")
    assert browser.find_all("#result_list tbody tr") == []
    regrade.refresh_from_db()
    assert regrade.status == RegradeStatus.SETTLED
    assert ReviewAttempt.objects.get(kind=AttemptKind.STAFF_VERDICT).pk == regrade.settled_by_id


def test_the_desk_fits_a_phone(browser, desk):
    browser.emulate_phone()
    sign_in(browser, "teacher")
    assert sum(counts(browser).values()) == len(QUEUE_NAMES)
    assert browser.js("return [document.documentElement.scrollWidth, window.innerWidth]") == [390, 390]
    browser.shot("phone-desk")
    browser.click('.desk-card[data-queue="lesson_drafts"] a.open')
    browser.wait_for("#result_list")
    # The list scrolls in its own box; the page stays as wide as the phone.
    assert browser.js("return [document.documentElement.scrollWidth, window.innerWidth]") == [390, 390]
    browser.click('#result_list button[data-act="approve_use"]')
    browser.wait_for(".messagelist .success")
    browser.shot("phone-after-approve")
    desk["lesson_drafts"].refresh_from_db()
    assert desk["lesson_drafts"].status == "injected"


def test_the_desk_renders_in_chinese_when_chosen(browser, desk):
    laptop(browser)
    sign_in(browser, "teacher")
    Select(browser.wait_for("#desk-language")).select_by_value("zh-hans")

    browser.wait_for_text("#site-name", "助教工作台")
    labels = [card.find_element("css selector", ".label").text for card in browser.find_all(".desk-card")]
    assert labels[:2] == ["待决定的评审", "复评申请"]
    assert "打开队列" in browser.text("#desk-cards")
    assert browser.find("html").get_attribute("lang") == "zh-hans"
    keep(browser, "desk-zh-hans")
