"""Seed 000's whole browser path (SPEC §3, §4): from clicking submit to the
next message the tutor sends, in a real browser.

One student with a long conversation submits failing work and watches the
review go queued → running → completed; she asks "what now?" and the model
request -- read back from the fake model server -- carries the failing items;
after a reload the chat and the review card are back and the next request
still carries them; once a newer submission is pending, the old items are
gone from the next request; another student's browser never shows them.
"""

from __future__ import annotations

import json

import pytest

from feedback.models import AttemptStatus, ReviewAttempt, Submission
from tests.browser.conftest import tutor_requests
from tests.browser.factories import PASSWORD, long_session, student_with_password, token_for
from tests.factories import make_course, make_task
from tests.worker.fakellm import Gate, Reply
from tutor.chat.history import history_limits

pytestmark = pytest.mark.browser

# Strings that occur nowhere else: each one found (or not) in a request or a
# page says where a piece of the review travelled.
A3_REASON = "The explanation never says what first([]) returns."
NEXT_STEP = "Say in the report that first([]) returns undefined, then run the tests again."
CI_LOG = "FAIL test/first.test.js > returns undefined for []"
REPORT_FILE = "# Report\nfirst() returns the first element of an array.\n"
EARLIER_MESSAGES = 40


def review_reply(status: str, reason: str, next_step: str) -> str:
    """The review model's answer for the one semantic criterion, A3."""
    return json.dumps(
        {
            "verdicts": [{"rubric_id": "A3", "status": status, "reason": reason, "evidence": "REPORT.md"}],
            "next_step": next_step,
        }
    )


def system_of(messages: list[dict]) -> str:
    assert messages[0]["role"] == "system"
    return messages[0]["content"]


def criterion(page, rubric_id: str) -> dict:
    node = page.find(f"#review-card .criterion[data-rubric-id='{rubric_id}']")
    badge = node.find_element("css selector", ".badge")
    return {
        "status": node.get_attribute("class").split("status-")[1].split()[0],
        "badge": badge.text,
        "basis": node.find_element("css selector", ".basis").text,
        "text": node.text,
    }


def fill_evidence(page, *, report: str, ci_status: str, exit_code: str, log_tail: str = "") -> None:
    from selenium.webdriver.support.ui import Select

    box = page.find("#report")
    box.clear()
    box.send_keys(report)
    Select(page.find("#ci-status")).select_by_value(ci_status)
    code = page.find("#ci-exit-code")
    code.clear()
    code.send_keys(exit_code)
    log = page.find("#ci-log-tail")
    log.clear()
    if log_tail:
        log.send_keys(log_tail)


def last_reply(page):
    return page.find_all("#chat-log .message.from-tutor")[-1]


def test_seed_000_review_to_guidance_survives_reload_and_gives_way_to_a_newer_submission(
    browser_factory, model_server, held_reviews, tmp_path
):
    course = make_course("se-101")
    task = make_task(course)
    alice = student_with_password(course, "alice")
    bob = student_with_password(course, "bob")
    long_session(alice, task, EARLIER_MESSAGES)
    page = browser_factory("alice")

    # --- an existing long session: signed in with a password, opened by ?task= --------------
    page.open(f"/?task={task.pk}")
    page.sign_in_with_password("alice", PASSWORD)
    page.wait_for_text("#task-heading", task.title)
    assert page.find("#task-select").get_attribute("value") == str(task.pk)
    page.wait_for_message_count(EARLIER_MESSAGES)
    page.wait_for_text("#review-card", "No submission yet")
    page.shot("signed-in-long-session")

    # --- submit failing work: report, a file from disk, a CI failure reported by her -------
    report_path = tmp_path / "REPORT.md"
    report_path.write_text(REPORT_FILE)
    fill_evidence(
        page,
        report="first() returns the first element.",
        ci_status="failed",
        exit_code="1",
        log_tail=CI_LOG,
    )
    page.find("#file-input").send_keys(str(report_path))
    page.wait_until(
        lambda: page.find("#file-path-0").get_attribute("value") == "REPORT.md", "the file is not listed"
    )
    gate = Gate(Reply(review_reply("FAIL", A3_REASON, NEXT_STEP)))
    model_server.script(gate)
    page.click("#submit-button")

    attempt_id = held_reviews.next()
    page.wait_for_step("queued")
    page.wait_for_text("#review-card", "no finished review yet")
    page.shot("review-queued")
    submission = Submission.objects.get(student=alice)
    assert submission.ci_source == "student"
    assert submission.evidence["files"] == {"REPORT.md": REPORT_FILE}
    assert submission.evidence["ci"] == {"status": "failed", "exit_code": 1, "log_tail": CI_LOG}

    held_reviews.run(attempt_id)
    (review_request,) = model_server.wait_for_requests(1, timeout=10)
    page.wait_for_step("running")
    assert ReviewAttempt.objects.get(pk=attempt_id).status == AttemptStatus.RUNNING
    page.shot("review-running")
    # The file read from disk reached the reviewer inside the fenced evidence.
    assert "first() returns the first element of an array." in review_request.json()["messages"][1]["content"]

    gate.open()
    page.wait_for_step("completed", timeout=15)
    page.wait_for_text("#review-card", A3_REASON)
    assert "FAIL" in page.text("#review-card .overall")
    assert criterion(page, "A1")["status"] == "FAIL"
    assert criterion(page, "A1")["basis"] == "your own CI report"
    assert criterion(page, "A2")["status"] == "FAIL"
    assert criterion(page, "A2")["basis"] == "a machine check"
    assert criterion(page, "A3")["status"] == "FAIL"
    assert criterion(page, "A3")["basis"] == "the model reviewer"
    assert criterion(page, "L1")["status"] == "NEED_REVIEW"
    assert criterion(page, "L1")["basis"] == "no automatic check"
    assert "Waiting for a teacher's review" in criterion(page, "L1")["text"]
    assert NEXT_STEP in page.text("#review-card .next-step")
    assert "Review of your submission 1" in page.text("#review-status")
    page.wait_for_tutor_view("current")
    assert page.text("#tutor-view").endswith("(A1, A2, A3)")
    page.shot("review-card")
    page.shot_element("#review", "review-card-alone")

    # --- "what now?": the model request carries the failing items ------------------------------
    model_server.script(Reply("Start with A2: say what first([]) returns."))
    page.send_chat("what now?")
    page.wait_for_message_count(EARLIER_MESSAGES + 2, timeout=15)
    page.wait_for_text("#chat-log .message.from-tutor:last-of-type .content", "Start with A2")
    (first_turn,) = tutor_requests(model_server)
    system = system_of(first_turn)
    assert '"state":"current"' in system
    for rubric_id in ("A1", "A2", "A3"):
        assert f'"rubric_id":"{rubric_id}","status":"FAIL"' in system
    assert A3_REASON in system and NEXT_STEP in system
    assert first_turn[-1] == {"role": "user", "content": "what now?"}
    max_history, _ = history_limits()
    assert len(first_turn) <= 1 + max_history + 1  # the long session was cut, the feedback was not
    reply = last_reply(page)
    assert reply.find_element("css selector", ".knew-state").get_attribute("data-state") == "current"
    summary = reply.find_element("css selector", ".knew summary").text
    assert summary.endswith("latest review has open items (A1, A2, A3)")
    page.click(reply.find_element("css selector", ".knew summary"))
    assert reply.find_element("css selector", ".knew-rubric-ids").text.split() == ["A1", "A2", "A3"]
    page.shot("what-now")
    page.shot_element("#chat", "chat-alone")

    # --- reload: the chat and the review card are rebuilt from the server ------------------------
    page.driver.refresh()
    page.wait_for_message_count(EARLIER_MESSAGES + 2)
    page.wait_for_text("#review-card", A3_REASON)
    assert criterion(page, "A2")["status"] == "FAIL"
    reply = last_reply(page)
    assert "Start with A2" in reply.text
    assert reply.find_element("css selector", ".knew-state").get_attribute("data-state") == "current"
    page.click(reply.find_element("css selector", ".knew summary"))
    page.shot("after-reload")
    model_server.script(Reply("Then rerun the tests and submit again."))
    page.send_chat("and after that?")
    page.wait_for_message_count(EARLIER_MESSAGES + 4, timeout=15)
    second_turn = tutor_requests(model_server)[-1]
    assert second_turn[-1] == {"role": "user", "content": "and after that?"}
    assert '"state":"current"' in system_of(second_turn)
    assert A3_REASON in system_of(second_turn)

    # --- a newer submission is pending: the old items leave the next request -------------------
    fill_evidence(
        page, report="first() returns undefined for an empty array.", ci_status="passed", exit_code="0"
    )
    page.click("#submit-button")
    held_reviews.next()
    page.wait_until(
        lambda: "Your submission 2" in page.text("#review-card .meta"),
        "the card does not show the new submission",
    )
    page.wait_for_step("queued")
    assert A3_REASON not in page.text("#review-card")
    assert "Earlier reviews no longer apply" in page.text("#review-card")
    page.wait_for_tutor_view("pending")
    model_server.script(Reply("Your new submission is still being reviewed."))
    page.send_chat("what now?")
    page.wait_for_message_count(EARLIER_MESSAGES + 6, timeout=15)
    pending_turn = tutor_requests(model_server)[-1]
    system = system_of(pending_turn)
    assert '"state":"pending"' in system
    assert A3_REASON not in system and NEXT_STEP not in system
    assert '"status":"FAIL"' not in system
    reply = last_reply(page)
    assert reply.find_element("css selector", ".knew-state").get_attribute("data-state") == "pending"
    page.click(reply.find_element("css selector", ".knew summary"))
    assert reply.find_element("css selector", ".knew-rubric-ids").text == "none"
    page.shot("newer-submission-pending")

    # --- another student's browser never shows them ----------------------------------------------
    other = browser_factory("bob")
    other.open(f"/?task={task.pk}")
    other.sign_in_with_token(token_for(bob))
    other.wait_for_text("#task-heading", task.title)
    other.wait_for_text("#review-card", "No submission yet")
    other.wait_for_text("#chat-log", "No messages yet")
    model_server.script(Reply("There is no review of your work yet."))
    other.send_chat("what now?")
    other.wait_for_message_count(2, timeout=15)
    bobs_turn = tutor_requests(model_server)[-1]
    assert '"state":"none"' in system_of(bobs_turn)
    assert A3_REASON not in json.dumps(bobs_turn) and NEXT_STEP not in json.dumps(bobs_turn)
    assert [m["content"] for m in bobs_turn[1:]] == ["what now?"]  # none of alice's history
    source = other.driver.page_source
    for secret in (A3_REASON, NEXT_STEP, CI_LOG, "Start with A2", "earlier question"):
        assert secret not in source
    assert last_reply(other).find_element("css selector", ".knew-state").get_attribute("data-state") == "none"
    other.shot("other-student")

    assert page.script_errors() == [] and other.script_errors() == []
