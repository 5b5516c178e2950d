"""Fixtures of the corrections tests: tutor turns through the real HTTP API,
with the detection task run as it runs in the embedded default (eager, on
commit), and the model requests read back from the scripted fake."""

from __future__ import annotations

import pytest

from tests.factories import client_for, enroll

RAINFALL_500 = "北京年均降雨量约为 500mm。"
RAINFALL_630 = "北京年均降雨量约为 630mm。"
RAINFALL_QUESTION = "北京的年均降雨量大概是多少？"
RAINFALL_500_EN = "The average annual rainfall in Beijing is about 500 mm."
RAINFALL_QUESTION_EN = "What is the average annual rainfall in Beijing?"


class Chat:
    """One student's tutor session, driven through the API."""

    def __init__(self, client, task, fake_llm, capture):
        self.client, self.task, self.fake_llm, self.capture = client, task, fake_llm, capture
        response = client.post("/api/tutor/sessions/", {"task": task.pk}, format="json")
        assert response.status_code in (200, 201), response.content
        self.session_id = response.json()["id"]

    def send(self, content: str, *, reply: str = "好的。", then=(), expect: int = 201) -> dict:
        """Send ``content``; the tutor answers ``reply``; the detection task runs
        after commit (``then``: the model's answers to any later calls)."""
        self.fake_llm.reply(reply, *then)
        with self.capture(execute=True):
            response = self.client.post(
                f"/api/tutor/sessions/{self.session_id}/messages/", {"content": content}, format="json"
            )
        assert response.status_code == expect, response.content
        return response.json()

    @property
    def last_system(self) -> str:
        messages = self.fake_llm.requests[-1]["messages"]
        assert messages[0]["role"] == "system"
        return messages[0]["content"]

    def context(self, message: str | None = None) -> dict:
        params = {"task": self.task.pk}
        if message is not None:
            params["message"] = message
        response = self.client.get("/api/tutor/context/", params)
        assert response.status_code == 200, response.content
        return response.json()


@pytest.fixture
def chat_for(task, fake_llm, django_capture_on_commit_callbacks):
    """``chat_for(user)``: a Chat of that (enrolled) student on ``task``."""

    def make(user) -> Chat:
        return Chat(client_for(user), task, fake_llm, django_capture_on_commit_callbacks)

    return make


@pytest.fixture
def third_student(course):
    return enroll(course, "carol")


@pytest.fixture
def staff_accepts(staff):
    """``staff_accepts()``: course staff accept every open fact case as
    written -- the one road from a student's proposal to the class (turn 3)."""
    from corrections.models import UNDECIDED_CASE_STATUSES, CaseKind, CorrectionCase
    from corrections.services.cases import case_accept

    def accept() -> None:
        for case in CorrectionCase.objects.filter(kind=CaseKind.FACT, status__in=UNDECIDED_CASE_STATUSES):
            case_accept(case=case, staff=staff, reason="checked against the course material")

    return accept
