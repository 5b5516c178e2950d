"""A person between a student and the class, in a real browser (SPEC §5
turn 3, §8): a student's factual correction waits in the staff queue; a
classmate's model request carries nothing of it; course staff accept it in
admin with their own wording; the classmate's next model request carries
the staff wording, not the student's."""

from __future__ import annotations

import pytest

from corrections.models import CaseStatus, CorrectionCase, Fact, FactStatus
from tests.browser.conftest import tutor_requests
from tests.browser.factories import PASSWORD, student_with_password
from tests.factories import client_for, make_course, make_task
from tests.worker.fakellm import Reply
from tutor.models import AuditEvent, Enrollment

pytestmark = pytest.mark.browser

STUDENT_SAYS = "Actually, the average annual rainfall in Beijing is 630 mm."
STAFF_WORDING = "The average annual rainfall in Beijing is about 585 mm (1991-2020 normal)."
QUESTION = "What is the average annual rainfall in Beijing?"


def ask(client, session_id: str, server) -> str:
    """The classmate asks; the system message of the model request it caused."""
    server.script(Reply("ANSWER: noted."))
    response = client.post(
        f"/api/tutor/sessions/{session_id}/messages/", {"content": QUESTION}, format="json"
    )
    assert response.status_code == 201, response.content
    return tutor_requests(server)[-1][0]["content"]


def test_staff_accept_a_proposal_in_their_wording_and_the_classmate_is_told_it(browser, model_server):
    course = make_course("se-101")
    task = make_task(course)
    alice = student_with_password(course, "alice")
    bob = student_with_password(course, "bob")
    student_with_password(course, "teacher", Enrollment.Role.STAFF)

    # Alice corrects the tutor: a proposal, not a course fact.
    corrected = client_for(alice).post("/api/corrections/", {"content": STUDENT_SAYS}, format="json")
    assert corrected.status_code == 201, corrected.content
    assert Fact.objects.get().status == FactStatus.PROPOSED
    case = CorrectionCase.objects.get()

    classmate = client_for(bob)
    session = classmate.post("/api/tutor/sessions/", {"task": str(task.pk)}, format="json").json()["id"]
    before = ask(classmate, session, model_server)
    assert "630" not in before  # nobody checked it: the class is not told

    # Course staff decide it in admin, in their own words.
    browser.open("/admin/login/?next=/admin/corrections/correctioncase/")
    browser.find("#id_username").send_keys("teacher")
    browser.find("#id_password").send_keys(PASSWORD)
    browser.click("input[type=submit]")
    browser.wait_for("#result_list")
    (row,) = browser.find_all("#result_list tbody tr")
    assert "630 mm" in row.text
    browser.shot("queue")
    browser.click(row.find_element("css selector", "a[data-act=decide]"))
    browser.wait_for("#case-decide-form")
    browser.click("#case-decide-form input[name=decision][value=accept]")
    browser.find("#id_statement").send_keys(STAFF_WORDING)
    browser.find("#id_reason").send_keys("Meteorological bureau normal")
    browser.shot("decide-form")
    browser.click("#case-decide-form input[type=submit]")
    browser.wait_for_text(".messagelist", "Accepted")
    browser.shot("after-accept")

    case.refresh_from_db()
    fact = Fact.objects.get(status=FactStatus.VERIFIED)
    assert (case.status, case.result_fact_id) == (CaseStatus.ACCEPTED, fact.pk)
    assert (fact.statement, fact.proposed_by.username, fact.decided_by.username) == (
        STAFF_WORDING,
        "teacher",
        "teacher",
    )
    assert AuditEvent.objects.get(event="case_accepted").extra["staff_statement"] == STAFF_WORDING

    after = ask(classmate, session, model_server)
    assert STAFF_WORDING.rstrip(".") in after
    assert "630" not in after
