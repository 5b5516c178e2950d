"""Signing in and out of the client: a Django session from the password form,
or an API token kept in this tab's sessionStorage; staff get a link to the
admin instead of a student's workspace."""

from __future__ import annotations

import uuid

import pytest

from tests.browser.factories import PASSWORD, student_with_password, token_for
from tests.factories import make_course, make_task
from tutor.models import Enrollment

pytestmark = pytest.mark.browser


def test_a_link_with_the_task_id_in_upper_case_opens_that_task(browser):
    """The API takes a UUID in either case; so does the client's ?task= link."""
    course = make_course("se-101", tasks=2)
    second = make_task(course, "t2")
    student_with_password(course, "alice")

    browser.open(f"/?task={str(second.pk).upper()}")
    browser.sign_in_with_password("alice", PASSWORD)

    browser.wait_for_text("#task-heading", second.title)
    assert browser.find("#task-select").get_attribute("value") == str(second.pk)


def test_wrong_credentials_are_refused_and_signing_out_ends_token_and_session(browser):
    course = make_course("se-101")
    task = make_task(course)
    alice = student_with_password(course, "alice")

    browser.open(f"/?task={task.pk}")
    browser.wait_for("#signin")
    assert browser.find("#app").is_displayed() is False
    # A token that is not one.
    browser.wait_for("#token-input").send_keys("not-a-token")
    browser.click("#token-form button[type=submit]")
    browser.wait_for_text("#token-error", "This token was not accepted")
    assert browser.js("return sessionStorage.length") == 0
    # A wrong password: Django's sign-in page says so, and offers the form again.
    browser.find("#signin-username").send_keys("alice")
    browser.find("#signin-password").send_keys("wrong")
    browser.click("#password-form button[type=submit]")
    browser.wait_for_text("[role=alert]", "did not match")
    browser.shot("wrong-password")
    # The right one brings her back to the task she asked for.
    browser.find("#id_password").send_keys(PASSWORD)
    browser.click("form button[type=submit]")
    browser.wait_for_text("#task-heading", task.title)
    assert f"task={task.pk}" in browser.driver.current_url
    assert browser.text("#whoami") == "Signed in as alice"
    assert not browser.find("#admin-link").is_displayed()

    # Signing out ends the session...
    browser.click("#logout-form button")
    browser.wait_for("#signin")
    # ...and a token pasted afterwards lives in this tab only, until sign-out.
    browser.sign_in_with_token(token_for(alice))
    assert browser.js("return Object.keys(sessionStorage)") == ["tutor.apiToken"]
    browser.click("#logout-form button")
    browser.wait_for("#signin")
    assert browser.js("return sessionStorage.length") == 0
    assert browser.script_errors() == []


def test_course_staff_see_the_admin_link_and_no_student_workspace(browser):
    course = make_course("se-101")
    task = make_task(course)
    teacher = student_with_password(course, "teacher", Enrollment.Role.STAFF)

    # A link to a task that is not one of hers (an old or mistyped link).
    browser.open(f"/?task={uuid.uuid4()}")
    browser.sign_in_with_token(token_for(teacher))
    browser.wait_for_text("#task-heading", task.title)
    assert "not a task of your courses" in browser.text("#page-error")
    link = browser.wait_for("#admin-link")
    assert link.get_attribute("href").endswith("/admin/")
    assert "staff in this course" in browser.text("#task-note")
    for section in ("#evidence", "#review", "#chat"):
        assert not browser.find(section).is_displayed()
    browser.shot("staff")
