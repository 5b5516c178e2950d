"""Regrade requests from the review card (SPEC §7, §9), in a real browser.

A student who thinks the model got a criterion wrong asks staff from the
page and sees the request waiting; a second one on that criterion is not
offered; after staff give a verdict (or decline with a reason) a reload shows
the outcome, rebuilt from the API. A criterion the course's CI decided offers
no request, a hidden check shows its status and text only, and what the API
refuses -- or the page refuses first -- is said next to the field.
"""

from __future__ import annotations

import pytest
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import Select

from feedback.models import RegradeRequest, RegradeStatus, Submission
from feedback.services.regrades import regrade_decline
from feedback.services.verdicts import staff_verdict_create
from tests.browser.factories import PASSWORD, student_with_password, token_for
from tests.browser.test_accessible_client import CONTRAST_JS, UNLABELLED_JS
from tests.browser.test_seed000_flow import fill_evidence
from tests.factories import (
    DEFAULT_CRITERIA,
    criterion_entry,
    enroll,
    make_attempt,
    make_course,
    make_submission,
    make_task,
    review_result,
)
from tutor.models import Enrollment

pytestmark = pytest.mark.browser

A3_REASON = "The explanation never says what first([]) returns."
STUDENT_REASON = "Section 2 of my report says first([]) returns undefined; please read it again."
STAFF_REASON = "Section 2 does explain the empty array."
SECRET_PATH = "tests/hidden/empty_array_edge.spec.js"
HIDDEN_FIXED = "a hidden check did not pass; ask staff if you need a hint"
DECLINE = "The hidden tests still fail on an empty array; read step 3 of the task again."


def failing_review(*, hidden: bool = False) -> dict:
    """CI (the course's service) failed A1, A2 passed, the model failed A3."""
    criteria = [
        criterion_entry("A1", "FAIL", basis="ci", reason="CI failed: 1 test failed"),
        criterion_entry("A2", "PASS", reason="the report names first and undefined"),
        criterion_entry("A3", "FAIL", basis="model", reason=A3_REASON),
        criterion_entry("L1", "NEED_REVIEW", kind="learning", basis="none"),
    ]
    if hidden:
        criteria.append(
            criterion_entry("H1", "FAIL", criterion="Hidden tests pass", reason=f"no {SECRET_PATH}")
        )
    return review_result(criteria, next_step="Fix A1 first.")


def seeded(*, hidden: bool = False):
    criteria = [*DEFAULT_CRITERIA]
    if hidden:
        criteria.append(
            {
                "id": "H1",
                "kind": "acceptance",
                "text": "Hidden tests pass",
                "check": {"type": "file_exists", "path": SECRET_PATH},
                "visibility": "hidden",
            }
        )
    course = make_course("se-101", criteria=criteria)
    task = make_task(course)
    alice = student_with_password(course, "alice")
    teacher = enroll(course, "teacher", Enrollment.Role.STAFF)
    submission = make_submission(alice, task, {"report": "first() returns the first element", "files": {}})
    make_attempt(submission, result=failing_review(hidden=hidden))
    return task, alice, teacher, submission


def row(page, rubric_id: str):
    return page.find(f"#review-card .criterion[data-rubric-id='{rubric_id}']")


def offered(page) -> list[str]:
    """The criteria whose row offers a request to staff."""
    return [
        node.get_attribute("data-rubric-id")
        for node in page.find_all("#review-card .criterion")
        if node.find_elements("css selector", ".regrade-ask")
    ]


def active(page, attribute: str = "id") -> str:
    return page.js(f"return document.activeElement.getAttribute('{attribute}')")


def open_form(page, rubric_id: str):
    page.click(page.wait_for(f"#review-card .criterion[data-rubric-id='{rubric_id}'] .regrade-ask"))
    return page.wait_for(f"#review-card .criterion[data-rubric-id='{rubric_id}'] .regrade-form textarea")


def counter_text(page) -> str:
    return page.text("#review-card .regrade-form .char-count")


def fill(box, text: str) -> None:
    """Put long text in at once, then type its last character as a person
    would, so the page sees a real input event."""
    box.clear()
    box.parent.execute_script("arguments[0].value = arguments[1]", box, text[:-1])
    box.send_keys(text[-1])


def test_a_student_asks_staff_about_a_model_fail_and_after_a_verdict_reads_it_settled(browser):
    task, alice, teacher, submission = seeded()
    browser.open(f"/?task={task.pk}")
    browser.sign_in_with_token(token_for(alice))
    browser.wait_for_text("#review-card", A3_REASON)

    # Only the model's FAIL may be asked about: not CI's FAIL (run CI again
    # instead, the row says), not a PASS, not a learning criterion.
    assert offered(browser) == ["A3"]
    assert "run CI again" in row(browser, "A1").text
    assert browser.find_all("#review-card .criterion[data-rubric-id='A1'] button") == []

    # By keyboard: the button opens a labelled form with the focus in it;
    # Escape closes it and gives the focus back.
    button = row(browser, "A3").find_element("css selector", ".regrade-ask")
    assert button.text.startswith("Ask staff to look at this")
    browser.js("arguments[0].focus()", button)
    button.send_keys(Keys.ENTER)
    box = browser.wait_for("#review-card .regrade-form textarea")
    assert active(browser) == box.get_attribute("id")
    assert (
        browser.js("return document.activeElement.labels[0].textContent")
        == "Why should staff look at A3 again?"
    )
    counter = browser.find("#review-card .regrade-form .char-count")
    assert counter.get_attribute("id") in box.get_attribute("aria-describedby").split()
    assert counter.text == "Characters left: 1000"
    assert browser.js(UNLABELLED_JS) == []
    box.send_keys(Keys.ESCAPE)
    browser.wait_until(lambda: not browser.find_all(".regrade-form"), "the form is still open after Escape")
    assert active(browser, "class") == "regrade-ask"
    assert button.get_attribute("aria-expanded") == "false"

    # Asked: the row says the request waits for staff, and offers no second one.
    box = open_form(browser, "A3")
    box.send_keys(STUDENT_REASON)
    assert counter_text(browser) == f"Characters left: {1000 - len(STUDENT_REASON)}"
    browser.shot("form-open")
    browser.shot_element("#review-card .criterion[data-rubric-id='A3']", "form-criterion")
    box.send_keys(Keys.CONTROL, Keys.ENTER)
    waiting = browser.wait_for(
        "#review-card .criterion[data-rubric-id='A3'] .regrade-request[data-status=open]"
    )
    assert "waiting for staff" in waiting.text.lower()
    assert STUDENT_REASON in waiting.text
    # Once the card is rebuilt (the tutor's view read too), the focus is on
    # the new request and the live region says it was sent.
    browser.wait_until(lambda: active(browser, "data-status") == "open", "the focus is not on the request")
    browser.wait_for_text("#review-status", "Your request on A3 was sent to staff.")
    assert offered(browser) == []
    request = RegradeRequest.objects.get()
    assert (request.submission_id, request.rubric_id, request.reason) == (submission.pk, "A3", STUDENT_REASON)
    browser.shot("waiting-for-staff")

    # After a reload, the same, from the API alone.
    browser.driver.refresh()
    browser.wait_for_text(
        "#review-card .criterion[data-rubric-id='A3'] .regrade-request", "Waiting for staff"
    )
    assert offered(browser) == []

    # Staff give a verdict: the request is settled, and the card is the new review.
    verdict = staff_verdict_create(
        submission=submission,
        staff=teacher,
        criteria=[{"rubric_id": "A3", "status": "PASS", "reason": STAFF_REASON}],
    )
    browser.driver.refresh()
    settled = browser.wait_for(
        "#review-card .criterion[data-rubric-id='A3'] .regrade-request[data-status=settled]"
    )
    assert "Settled: staff gave a verdict" in settled.text
    assert settled.find_element("css selector", ".regrade-response").text == (
        f"Staff gave a verdict: PASS — {STAFF_REASON}"
    )
    a3 = row(browser, "A3")
    assert "status-PASS" in a3.get_attribute("class")
    assert a3.find_element("css selector", ".basis").text == "course staff"
    assert a3.find_element("css selector", ".reason").text == STAFF_REASON
    # Numbers of this student's own work: the verdict is the submission's second review.
    assert verdict.submission.attempts.count() == 2
    assert "Your submission 1," in browser.text("#review-card .meta")
    assert "review 2" in browser.text("#review-card .meta")
    assert offered(browser) == []  # A3 passed now; A1 is still CI's
    ratios = dict(
        browser.js(CONTRAST_JS, ["#review-card .regrade-badge-settled", "#review-card .regrade-response"])
    )
    assert all(ratio >= 4.5 for ratio in ratios.values()), ratios
    browser.shot("settled")
    browser.shot_element("#review-card .criterion[data-rubric-id='A3']", "settled-criterion")
    assert browser.script_errors() == []


def test_a_declined_request_on_a_hidden_check_shows_the_staff_reason_in_both_languages(browser_factory):
    task, alice, teacher, submission = seeded(hidden=True)
    browser = browser_factory("alice", phone=True)
    browser.open(f"/?task={task.pk}")
    browser.sign_in_with_token(token_for(alice))
    hidden = browser.wait_for("#review-card .criterion[data-rubric-id='H1']")

    # A hidden check: its status and text, and that it is hidden -- nothing else.
    assert "status-FAIL" in hidden.get_attribute("class")
    assert "Hidden tests pass" in hidden.text
    assert "Hidden check: only its status and text are shown to you." in hidden.text
    assert hidden.find_elements("css selector", ".basis, .reason, .evidence") == []
    assert "hidden check" in browser.text("#task-criteria [data-criterion='H1']")
    assert SECRET_PATH not in browser.driver.page_source
    assert offered(browser) == ["A3", "H1"]

    box = open_form(browser, "H1")
    box.send_keys("My tests cover the empty array.")
    overflow = browser.js("return document.documentElement.scrollWidth - window.innerWidth")
    assert overflow <= 0, f"with the form open the page is {overflow}px wider than a phone"
    browser.click("#review-card .criterion[data-rubric-id='H1'] .regrade-form button[type=submit]")
    browser.wait_for_text(
        "#review-card .criterion[data-rubric-id='H1'] .regrade-request", "Waiting for staff"
    )

    # Staff decline it with a reason: after a reload the student reads it,
    # and may ask again.
    regrade_decline(request=RegradeRequest.objects.get(rubric_id="H1"), staff=teacher, response=DECLINE)
    browser.driver.refresh()
    declined = browser.wait_for(
        "#review-card .criterion[data-rubric-id='H1'] .regrade-request[data-status=declined]"
    )
    assert "Declined: the review stands" in declined.text
    assert declined.find_element("css selector", ".regrade-response").text == DECLINE
    assert "My tests cover the empty array." in declined.text
    assert offered(browser) == ["A3", "H1"]
    assert SECRET_PATH not in browser.driver.page_source
    browser.shot("declined")

    # In Chinese, the same card; a form being written stays open with its text.
    open_form(browser, "A3").send_keys("Draft about A3")
    Select(browser.find("#lang-select")).select_by_value("zh")
    draft = browser.find("#review-card .criterion[data-rubric-id='A3'] .regrade-form textarea")
    assert draft.get_attribute("value") == "Draft about A3"
    assert browser.js("return arguments[0].labels[0].textContent", draft) == "为什么希望老师重新查看 A3？"
    declined = browser.find("#review-card .criterion[data-rubric-id='H1'] .regrade-request")
    assert "已拒绝：评审结果不变" in declined.text and DECLINE in declined.text
    assert "隐藏检查" in row(browser, "H1").text
    assert not browser.find("#page-status").is_displayed()  # no stale "loading" line
    assert row(browser, "H1").find_element("css selector", ".regrade-ask").text.startswith("请老师看看这一项")
    browser.shot("declined-chinese")
    assert browser.script_errors() == []


def test_what_the_page_or_the_api_refuses_is_said_next_to_the_field(browser):
    task, alice, teacher, submission = seeded()
    browser.open(f"/?task={task.pk}")
    # A password: the session is shared with the second tab below.
    browser.sign_in_with_password("alice", PASSWORD)
    browser.wait_for_text("#review-card", A3_REASON)
    first_tab = browser.driver.current_window_handle

    # Over 1000 characters: the counter says so, and the page does not send it.
    box = open_form(browser, "A3")
    fill(box, "x" * 1001)
    assert counter_text(browser) == "Too many characters: 1"
    browser.click("#review-card .regrade-form button[type=submit]")
    error = browser.wait_for("#review-card .regrade-form .field-error")
    assert error.text == "The reason is longer than 1000 characters (by 1). Shorten it."
    assert box.get_attribute("aria-invalid") == "true"
    assert error.get_attribute("id") in box.get_attribute("aria-describedby").split()
    assert active(browser) == box.get_attribute("id")
    assert not RegradeRequest.objects.exists()
    browser.shot("reason-too-long")
    box.send_keys(Keys.BACKSPACE)
    browser.wait_until(lambda: not error.is_displayed(), "the error stays after the reason was shortened")
    assert box.get_attribute("aria-invalid") == "false"

    # Meanwhile staff passed A3: the API refuses the request on the criterion
    # (attr rubric_id), and the text is kept.
    staff_verdict_create(
        submission=submission,
        staff=teacher,
        criteria=[
            {"rubric_id": "A3", "status": "PASS", "reason": STAFF_REASON},
            {"rubric_id": "A2", "status": "FAIL", "reason": "The report must name undefined."},
        ],
    )
    fill(box, "Please look again at section 2.")
    browser.click("#review-card .regrade-form button[type=submit]")
    refused = browser.wait_for("#review-card .regrade-form .form-error")
    assert "A3 passed; there is nothing to regrade" in refused.text
    assert box.get_attribute("value") == "Please look again at section 2."
    assert not RegradeRequest.objects.exists()

    # A newer submission, sent from another tab: the first tab's request on
    # the older one gets a 409, shown in the form.
    browser.driver.refresh()
    box = open_form(browser, "A2")
    box.send_keys("The report names undefined in its second line.")
    browser.driver.switch_to.new_window("tab")
    browser.open(f"/?task={task.pk}")
    browser.wait_for("#report")
    fill_evidence(browser, report="first() returns undefined for []", ci_status="failed", exit_code="1")
    browser.click("#submit-button")
    browser.wait_for_text("#review-card .meta", "Your submission 2")
    browser.wait_until(lambda: Submission.objects.filter(student=alice).count() == 2, "no second submission")
    browser.driver.switch_to.window(first_tab)
    browser.click("#review-card .regrade-form button[type=submit]")
    conflict = browser.wait_for("#review-card .regrade-form .form-error")
    assert conflict.text == (
        "Staff cannot take this request: regrade requests are for your latest submission of this task only. "
        "Reload the page to see your latest review."
    )
    assert active(browser, "class") == "error form-error"
    assert not RegradeRequest.objects.exists()
    browser.shot("conflict")

    # The reload shows the newest submission's review.
    browser.driver.refresh()
    newest = Submission.objects.filter(student=alice).order_by("-submission_seq").first()
    assert newest.number == 2
    browser.wait_for_text("#review-card .meta", "Your submission 2")
    assert RegradeRequest.objects.filter(status=RegradeStatus.OPEN).count() == 0
    assert browser.script_errors() == []
