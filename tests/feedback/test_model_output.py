"""Model output is untrusted input (SPEC §2): NUL characters, lone
surrogates and oversize text are sanitised where a reply enters
(``tutor.llm``), for reviews and tutor replies alike; and any error while
storing a result ends the attempt (or the tutor turn) through the failure
path -- never a 500, never a task crashed holding its claim.

PostgreSQL refuses ``\\u0000`` in text and jsonb, and neither database can
encode a lone surrogate; these replies left attempts ``running`` and made
the tutor answer 500 without a ModelCall row.
"""

from __future__ import annotations

import json

import httpx
import pytest
from django.db import DataError
from django.test import TestCase

from feedback import pipeline
from feedback.models import AttemptStatus, ErrorCode, ReviewAttempt
from feedback.services.intake import submission_create
from feedback.signals import attempt_finished
from tests.fakellm import completion
from tutor import llm
from tutor.chat import services as sessions
from tutor.models import ModelCall, TutorMessage, TutorSession

EVIDENCE = {
    "report": "first() returns undefined for an empty array.",
    "ci": {"status": "passed", "exit_code": 0, "log_tail": "3 passing"},
}
NUL, HIGH, LOW = "\x00", "\ud800", "\udfff"


def verdict_reply(reason: str, next_step: str = "Add a test.") -> str:
    verdict = {"rubric_id": "A3", "status": "PASS", "reason": reason, "evidence": "quote"}
    # ensure_ascii: the reply carries the escapes (\\u0000, \\ud800), as a provider's JSON would.
    return json.dumps({"verdicts": [verdict], "next_step": next_step}, ensure_ascii=True)


def review(student, task) -> ReviewAttempt:
    with TestCase.captureOnCommitCallbacks(execute=True):
        submission = submission_create(
            student=student, task=task, evidence=EVIDENCE, submitted_by=student, ci_source="student"
        )
    return submission.attempts.get()


def unstorable(text: str) -> bool:
    return NUL in text or any("\ud800" <= ch <= "\udfff" for ch in text)


@pytest.fixture
def finished():
    """The attempt_finished announcements, as (attempt id, status)."""
    seen: list[tuple[str, str]] = []

    def receiver(sender, attempt_id, status, **kwargs):
        seen.append((str(attempt_id), status))

    attempt_finished.connect(receiver)
    yield seen
    attempt_finished.disconnect(receiver)


# --- reviews ------------------------------------------------------------------------------


@pytest.mark.django_db
def test_a_verdict_with_nul_and_lone_surrogates_is_stored_sanitised(fake_llm, student, task, finished):
    fake_llm.reply(verdict_reply(f"clear{NUL} and {HIGH}correct{LOW}", next_step=f"Go{NUL} on"))

    attempt = review(student, task)

    assert attempt.status == AttemptStatus.COMPLETED
    a3 = next(c for c in attempt.result["criteria"] if c["rubric_id"] == "A3")
    assert a3["reason"] == "clear and \ufffdcorrect\ufffd"
    assert attempt.result["next_step"] == "Go on"
    call = ModelCall.objects.get(purpose="review")
    assert call.status == ModelCall.Status.OK
    assert not unstorable(call.response_text)
    assert not unstorable(json.dumps(call.response_json, ensure_ascii=False))
    assert finished == [(str(attempt.pk), "completed")]


@pytest.mark.django_db
def test_an_oversize_review_reply_is_cut_and_repaired_not_stored_whole(fake_llm, settings, student, task):
    huge = verdict_reply("x" * (llm.MODEL_REPLY_MAX_CHARS + 10))
    fake_llm.reply(huge, verdict_reply("fine"))

    attempt = review(student, task)

    assert attempt.status == AttemptStatus.COMPLETED
    assert attempt.generation_attempts == 2  # the cut reply is not valid JSON: the repair loop asks again
    first = ModelCall.objects.filter(purpose="review").order_by("created_at").first()
    assert len(first.response_text) == llm.MODEL_REPLY_MAX_CHARS


@pytest.mark.django_db
def test_a_result_the_database_refuses_ends_the_attempt_through_the_failure_path(
    fake_llm, student, task, monkeypatch, finished
):
    fake_llm.reply(verdict_reply("fine"))

    def refuse(**kwargs):
        raise DataError("unsupported Unicode escape sequence")

    monkeypatch.setattr(pipeline, "attempt_complete", refuse)

    attempt = review(student, task)

    assert (attempt.status, attempt.error_code) == (AttemptStatus.UNAVAILABLE, ErrorCode.INTERNAL_ERROR)
    assert "DataError" in attempt.error_detail
    assert attempt.finished_at is not None
    # The machine checks it had run stay in the record (SPEC §2).
    assert attempt.result["overall"] is None
    assert [c["rubric_id"] for c in attempt.result["criteria"]] == ["A1", "A2"]
    assert finished == [(str(attempt.pk), "unavailable")]


@pytest.mark.django_db
def test_a_partial_result_the_database_refuses_still_ends_the_attempt(fake_llm, student, task, monkeypatch):
    fake_llm.default = lambda body: httpx.Response(503, json={"error": "down"})
    real_failed = pipeline.attempt_failed
    tries = []

    def refuse_with_result(**kwargs):
        tries.append(kwargs.get("result"))
        if kwargs.get("result") is not None:
            raise DataError("refused")
        return real_failed(**kwargs)

    monkeypatch.setattr(pipeline, "attempt_failed", refuse_with_result)

    attempt = review(student, task)

    assert (attempt.status, attempt.error_code) == (AttemptStatus.UNAVAILABLE, ErrorCode.REVIEW_UNAVAILABLE)
    assert attempt.result is None
    assert [t is not None for t in tries] == [True, False]


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.django_db
@pytest.mark.parametrize("levels", [33, 5000])
def test_a_verdict_nested_beyond_the_limit_is_repaired_like_any_invalid_reply(
    fake_llm, student, task, levels
):
    """Found by an outside review: json.loads and the walks after it recurse,
    and a reply 5000 levels deep raised RecursionError, not an invalid reply."""
    fake_llm.reply(deep(levels), verdict_reply("fine"))

    attempt = review(student, task)

    assert attempt.status == AttemptStatus.COMPLETED
    assert attempt.generation_attempts == 2
    repair = fake_llm.requests[1]["messages"][-1]["content"]
    assert "nested deeper than 32 levels" in repair


# --- tutor replies ---------------------------------------------------------------------------


def escaped_completion(content: str) -> httpx.Response:
    """The provider's answer as JSON text with \\u escapes: a lone surrogate
    cannot be sent as UTF-8, only escaped."""
    body = json.dumps(completion(content), ensure_ascii=True).encode()
    return httpx.Response(200, content=body, headers={"Content-Type": "application/json"})


def send(client, session_id, content="what now?"):
    return client.post(f"/api/tutor/sessions/{session_id}/messages/", {"content": content}, format="json")


@pytest.fixture
def session_id(task, student_client):
    return student_client.post("/api/tutor/sessions/", {"task": task.pk}, format="json").json()["id"]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "reply, stored",
    [
        (f"Look at A2{NUL}.", "Look at A2."),
        (f"Look at {HIGH}A2{LOW}.", "Look at \ufffdA2\ufffd."),
        (NUL * 3 + "ok", "ok"),
    ],
    ids=["nul", "lone-surrogates", "leading-nuls"],
)
def test_a_tutor_reply_with_unstorable_text_is_a_201_with_the_text_sanitised(
    fake_llm, student_client, session_id, reply, stored
):
    fake_llm.reply(escaped_completion(reply), "Second answer.")

    first = send(student_client, session_id)
    second = send(student_client, session_id, "and then?")

    assert first.status_code == 201, first.content
    assert first.json()["reply"]["content"] == stored
    assert second.status_code == 201, second.content  # the session is not stuck
    assert list(TutorMessage.objects.filter(role="assistant").values_list("content", flat=True)) == [
        stored,
        "Second answer.",
    ]
    calls = ModelCall.objects.filter(purpose="tutor").order_by("created_at")
    assert [c.status for c in calls] == [ModelCall.Status.OK, ModelCall.Status.OK]
    assert calls[0].response_text == stored


@pytest.mark.django_db
def test_an_oversize_tutor_reply_is_cut(fake_llm, student_client, session_id):
    fake_llm.reply("y" * (llm.MODEL_REPLY_MAX_CHARS + 5000))

    response = send(student_client, session_id)

    assert response.status_code == 201
    assert len(response.json()["reply"]["content"]) == llm.MODEL_REPLY_MAX_CHARS


@pytest.mark.django_db
def test_a_reply_the_database_refuses_is_a_503_and_the_session_takes_the_next_message(
    fake_llm, student_client, session_id, monkeypatch
):
    fake_llm.reply("refused reply", "stored reply")
    values = sessions.MESSAGE.params  # the values of the turn's message rows, as they are sent
    refused = []

    def refuse_a_reply(obj, connection):
        if obj.role == TutorMessage.Role.ASSISTANT and obj.content == "refused reply":
            refused.append(obj.content)  # however the reply is written: with its effects, or apart
            raise DataError("value refused")
        return values(obj, connection)

    monkeypatch.setattr(sessions.MESSAGE, "params", refuse_a_reply)

    first = send(student_client, session_id, "first")
    second = send(student_client, session_id, "second")

    assert first.status_code == 503
    assert first.json()["errors"][0]["code"] == "model_unavailable"
    assert second.status_code == 201, second.content
    assert list(TutorMessage.objects.order_by("position").values_list("role", "content")) == [
        ("user", "first"),
        ("user", "second"),
        ("assistant", "stored reply"),
    ]
    assert TutorSession.objects.get(pk=session_id).reply_pending_since is None


@pytest.mark.django_db
@pytest.mark.parametrize("levels", [33, 5000])
def test_a_provider_body_nested_beyond_the_limit_is_a_503_and_leaves_its_row(
    fake_llm, student_client, session_id, levels
):
    """Found by an outside review: a good reply with one member 5000 levels
    deep in the provider's body was a 500."""
    body = json.dumps({**completion("hi"), "x": "DEEP"}).replace('"DEEP"', deep(levels))
    provider = httpx.Response(200, content=body.encode(), headers={"Content-Type": "application/json"})
    fake_llm.reply(provider, "next")

    refused = send(student_client, session_id, "first")
    answered = send(student_client, session_id, "second")

    assert refused.status_code == 503, refused.content
    assert refused.json()["errors"][0]["code"] == "model_unavailable"
    call = ModelCall.objects.filter(purpose="tutor").order_by("created_at").first()
    assert call.status == ModelCall.Status.BAD_RESPONSE
    assert "nested deeper than 32 levels" in call.error
    assert answered.status_code == 201, answered.content
    assert answered.json()["reply"]["content"] == "next"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "encoded",
    [
        lambda text: b"\xef\xbb\xbf" + text.encode(),  # UTF-8 with a byte order mark
        lambda text: text.encode("utf-16"),
        lambda text: text.encode("utf-8"),  # sent with a wrong charset in its header
    ],
    ids=["utf-8-bom", "utf-16", "wrong-charset"],
)
def test_a_provider_body_in_any_json_encoding_is_read_as_json_is(
    fake_llm, student_client, session_id, encoded
):
    """Found by a review: the body was decoded by its charset header, not as
    JSON is (RFC 8259, the encoding detected from the bytes)."""
    body = encoded(json.dumps(completion("café 中文"), ensure_ascii=False))
    headers = {"Content-Type": "application/json; charset=iso-8859-1"}
    fake_llm.reply(httpx.Response(200, content=body, headers=headers))

    answered = send(student_client, session_id, "hi")

    assert answered.status_code == 201, answered.content
    assert answered.json()["reply"]["content"] == "café 中文"


def test_sanitize_text_keeps_valid_text_and_pairs():
    text = "中文 😀 ok\ttab\nline"
    assert llm.sanitize_text(text) == text
    assert llm.sanitize_json({"a\x00": ["b\ud800", {"c": "😀"}], "n": 1}) == {
        "a": ["b\ufffd", {"c": "😀"}],
        "n": 1,
    }


@pytest.mark.django_db
def test_a_reply_body_with_a_number_beyond_64_bits_is_stored_with_the_turn(
    fake_llm, student_client, session_id
):
    """The provider's reply body is kept on the ModelCall row as it came."""
    body = {
        "choices": [{"message": {"role": "assistant", "content": "fine"}}],
        "usage": {"prompt_tokens": 2**70},
    }
    fake_llm.reply(httpx.Response(200, json=body))

    response = send(student_client, session_id, "hello")

    assert response.status_code == 201, response.content
    assert ModelCall.objects.get(purpose="tutor").response_json["usage"]["prompt_tokens"] == 2**70
