"""Correction detection by a real Celery worker on a real Redis (SPEC §4, §5).

The tutor turn runs in the test process through the HTTP API; the detection
task is published after commit and a real ``celery -A tutor worker`` picks it
up, classifies the message and writes a proposed fact with a staff case (the
author's user memory meanwhile); once staff accept it, a classmate's next
request to the model shows it. A duplicate delivery writes nothing twice.
"""

from __future__ import annotations

import pytest

from corrections.models import Correction, Fact, FactSupporter, MemoryItem
from corrections.tasks import detect_correction
from tests.factories import client_for, enroll
from tests.worker.conftest import wait_for
from tests.worker.fakellm import Reply
from tests.worker.test_review_worker import queue_drained
from tutor.models import AuditEvent, TutorMessage


def staff_accept_every_case(staff) -> None:
    """Course staff accept each open fact case as written (SPEC §5: a person)."""
    from corrections.models import UNDECIDED_CASE_STATUSES, CaseKind, CorrectionCase
    from corrections.services.cases import case_accept

    for case in CorrectionCase.objects.filter(kind=CaseKind.FACT, status__in=UNDECIDED_CASE_STATUSES):
        case_accept(case=case, staff=staff, reason="checked against the course material")


pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

DETECTION_TIMEOUT = 30  # seconds for the worker to take and run the task


def send(client, session_id: str, content: str) -> dict:
    response = client.post(f"/api/tutor/sessions/{session_id}/messages/", {"content": content}, format="json")
    assert response.status_code == 201, response.content
    return response.json()


def open_session(client, task) -> str:
    response = client.post("/api/tutor/sessions/", {"task": task.pk}, format="json")
    assert response.status_code in (200, 201), response.content
    return response.json()["id"]


def system_of(recorded) -> str:
    messages = recorded.json()["messages"]
    assert messages[0]["role"] == "system"
    return messages[0]["content"]


def test_the_worker_detects_a_correction_and_the_next_request_shows_it(
    celery_worker, fake_llm, task, student_client, other_student, staff
):
    fake_llm.script(
        Reply("北京年均降雨量约为 500mm。"),  # the tutor's first answer
        Reply("谢谢指正。"),
        Reply("北京年均降雨量约为 500mm。"),  # the second student's answer, before staff decided
        Reply("北京年均降雨量约为 630mm。"),  # and after
    )
    session = open_session(student_client, task)
    send(student_client, session, "北京的年均降雨量大概是多少？")
    correction_turn = send(student_client, session, "不对，北京年均降雨量是 630mm 左右")

    fact = wait_for(
        lambda: Fact.objects.filter(course=task.course).first(),
        timeout=DETECTION_TIMEOUT,
        message=lambda: f"no fact was written\n{celery_worker.log_tail()}",
    )
    assert (fact.status, fact.statement, fact.supporter_count) == (
        "proposed",
        "北京年均降雨量是 630mm 左右",
        1,
    )
    correction = Correction.objects.get()
    assert str(correction.message_id) == correction_turn["user_message"]["id"]
    assert correction.tiers == ["system", "user", "case"]
    # The correction's audit row carries the correlation id of the request that stored the message.
    assert AuditEvent.objects.filter(event="fact_changed").first().correlation_id == correction.correlation_id

    bob = client_for(other_student)
    bob_session = open_session(bob, task)
    send(bob, bob_session, "北京的年均降雨量大概是多少？")
    assert "630mm" not in system_of(fake_llm.requests[-1])  # a proposal is not the class's

    staff_accept_every_case(staff)
    send(bob, bob_session, "北京的年均降雨量大概是多少？")
    assert "北京年均降雨量是 630mm 左右" in system_of(fake_llm.requests[-1])


def test_a_duplicate_delivery_writes_nothing_twice(celery_worker, fake_llm, task, student_client):
    fake_llm.script(Reply("北京年均降雨量约为 500mm。"), then=Reply("好的。"))
    session = open_session(student_client, task)
    send(student_client, session, "北京的年均降雨量大概是多少？")
    send(student_client, session, "不对，北京年均降雨量是 630mm 左右")
    send(student_client, session, "我希望回答简短一些")
    wait_for(
        lambda: Correction.objects.count() == 2,
        timeout=DETECTION_TIMEOUT,
        message=lambda: f"the two corrections were not recorded\n{celery_worker.log_tail()}",
    )
    queue_drained()
    before = {
        "corrections": Correction.objects.count(),
        "facts": Fact.objects.count(),
        "supporters": FactSupporter.objects.count(),
        "memory": MemoryItem.objects.count(),
        "audit": AuditEvent.objects.filter(event="fact_changed").count(),
    }

    # The broker delivers every detection of the session again (a redelivery after a lost ack).
    for message in TutorMessage.objects.filter(session_id=session, role="user"):
        detect_correction.delay(str(message.pk), message.correlation_id)
        detect_correction.delay(str(message.pk), message.correlation_id)
    queue_drained()

    after = {
        "corrections": Correction.objects.count(),
        "facts": Fact.objects.count(),
        "supporters": FactSupporter.objects.count(),
        "memory": MemoryItem.objects.count(),
        "audit": AuditEvent.objects.filter(event="fact_changed").count(),
    }
    # memory: the preference, and the author's own copy of the proposed fact.
    assert before == after == {"corrections": 2, "facts": 1, "supporters": 1, "memory": 2, "audit": 1}
    assert Fact.objects.get().supporter_count == 1
    assert celery_worker.log_tail(400).count("Task corrections.tasks.detect_correction") >= 9


def test_a_new_student_in_the_course_after_the_worker_run(
    celery_worker, fake_llm, task, student_client, course, staff
):
    """The fact reaches a student enrolled after it was written: it is the course's."""
    fake_llm.script(Reply("北京年均降雨量约为 500mm。"), then=Reply("好的。"))
    session = open_session(student_client, task)
    send(student_client, session, "北京的年均降雨量大概是多少？")
    send(student_client, session, "不对，北京年均降雨量是 630mm 左右")
    wait_for(
        lambda: Fact.objects.exists(),
        timeout=DETECTION_TIMEOUT,
        message=lambda: f"no fact was written\n{celery_worker.log_tail()}",
    )
    staff_accept_every_case(staff)

    newcomer = client_for(enroll(course, "newcomer"))
    preview = newcomer.get("/api/tutor/context/", {"task": task.pk, "message": "北京年均降雨量？"}).json()
    assert [f["statement"] for f in preview["facts"]] == ["北京年均降雨量是 630mm 左右"]
