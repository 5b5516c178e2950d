"""What the student sees of the memory loop (issue 36 item 5), over HTTP:
the outcome of a message read as a correction, in the send's answer and in
the history; the texts behind "what the tutor knew" -- their own memory and
the course's facts only; forgetting; and a stated language preference ahead
of the message's language in the exact model request."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from corrections.models import Correction, Fact, FactStatus, MemoryItem
from tests.factories import client_for, enroll, make_course, make_task
from tutor.bench.corrections import bulk_facts, bulk_memories
from tutor.chat.assembler import BASE_TUTOR_RULES
from tutor.models import TutorMessage

PREFERENCE = "please answer in Chinese from now on"
DEADLINE_TUTOR = "The project deadline is December 10 at 18:00."
DEADLINE_CORRECTION = "Actually, the project deadline is December 12 at 18:00"


def history(chat) -> list[dict]:
    response = chat.client.get(f"/api/tutor/sessions/{chat.session_id}/messages/?page_size=200")
    assert response.status_code == 200, response.content
    return response.json()["results"]


@pytest.mark.django_db
def test_the_send_answers_pending_until_detection_has_run_then_the_history_says_where(student, chat_for):
    chat = chat_for(student)

    # Detection runs after the response here, as with a worker: the answer says so.
    sent = chat.send(PREFERENCE)

    assert sent["correction"] == {
        "status": "pending",
        "type": None,
        "tier": None,
        "tiers": [],
        "statement": "",
    }
    user_message = history(chat)[0]
    assert user_message["id"] == sent["user_message"]["id"]
    assert user_message["correction"] == {
        "status": "saved",
        "type": "preference",
        "tier": "user",
        "tiers": ["user"],
        "statement": PREFERENCE,
    }
    assert history(chat)[1]["correction"] is None  # the tutor's reply


@pytest.mark.django_db
def test_a_message_that_cannot_be_a_correction_has_no_outcome(student, chat_for):
    chat = chat_for(student)

    sent = chat.send("what should I do next")

    assert sent["correction"] is None
    assert [message["correction"] for message in history(chat)] == [None, None]


@pytest.mark.django_db(transaction=True)
def test_with_detection_done_in_the_request_the_send_answers_saved_as_your_preference(
    task, student, fake_llm
):
    # Committed at once (no test transaction): the embedded default's eager
    # detection has run by the time the answer is written.
    client = client_for(student)
    session_id = client.post("/api/tutor/sessions/", {"task": task.pk}, format="json").json()["id"]
    fake_llm.reply("好的。")

    sent = client.post(f"/api/tutor/sessions/{session_id}/messages/", {"content": PREFERENCE}, format="json")

    assert sent.status_code == 201, sent.content
    assert sent.json()["correction"]["status"] == "saved"
    assert sent.json()["correction"]["type"] == "preference"
    assert sent.json()["correction"]["tier"] == "user"


@pytest.mark.django_db
def test_a_factual_correction_reads_as_sent_to_course_staff_while_its_fact_is_proposed(
    student, chat_for, staff_accepts
):
    # No student verifies a fact alone (the default, issue 36 item 1).
    chat = chat_for(student)
    chat.send("when is the project deadline", reply=DEADLINE_TUTOR)

    chat.send(DEADLINE_CORRECTION)

    outcome = history(chat)[2]["correction"]
    assert outcome["type"] == "factual"
    assert outcome["status"] == "sent_to_staff"
    # A proposed course fact; with it, the author's own user memory meanwhile (issue 36 item 1).
    assert outcome["tier"] in ("system", "user")
    fact = Correction.objects.get().fact
    assert fact.status == FactStatus.PROPOSED  # what the outcome was read from

    staff_accepts()  # staff accept the proposal as written
    assert Fact.objects.get(pk=fact.pk).status == FactStatus.VERIFIED
    assert history(chat)[2]["correction"]["status"] == "course_fact"


@pytest.mark.django_db
def test_a_process_correction_is_saved_for_the_student_and_sent_to_staff(student, chat_for):
    chat = chat_for(student)
    chat.send("what should I do first", reply="Commit your changes now.")

    chat.send("next time always run the tests before you suggest a commit")

    outcome = history(chat)[2]["correction"]
    assert outcome["type"] == "process"
    assert outcome["status"] == "sent_to_staff"
    assert outcome["tier"] == "user"  # the case is no tier of memory
    assert outcome["tiers"] == ["user", "case"]


@pytest.mark.django_db
def test_forgetting_the_item_shows_in_the_outcome_and_in_what_the_tutor_knew(student, chat_for):
    chat = chat_for(student)
    chat.send(PREFERENCE)
    sent = chat.send("what should I do next")
    item = MemoryItem.objects.get(kind="preference")
    assert sent["context_meta"]["preference_ids"] == [str(item.pk)]
    assert sent["context_texts"] == {str(item.pk): PREFERENCE}
    assert history(chat)[3]["context_texts"] == sent["context_texts"]  # the send and the history agree

    assert chat.client.delete(f"/api/memory/{item.pk}/").status_code == 204

    messages = history(chat)
    assert messages[0]["correction"]["status"] == "forgotten"
    assert messages[3]["context_meta"]["preference_ids"] == [str(item.pk)]  # the ids stay
    assert messages[3]["context_texts"] == {}  # the text is gone with the item
    chat.send("what now")
    assert PREFERENCE not in chat.last_system


@pytest.mark.django_db
def test_what_the_tutor_knew_names_facts_and_own_memory_never_another_students(task, student, chat_for):
    other = enroll(task.course, "mallory")
    [theirs] = bulk_memories(other.pk, [("preference", ["答案"], "mallory wants the answers")])
    elsewhere = make_task(make_course("other-course"))
    [foreign_fact] = bulk_facts(elsewhere.course, [(["截止", "日期"], "another course's deadline")])
    [mine] = bulk_memories(student.pk, [("preference", ["回答"], "shorter answers please")])
    [fact] = bulk_facts(task.course, [(["截止", "日期"], "截止日期是 12 月 12 日")])
    chat = chat_for(student)
    chat.send("what should I do next")
    # A stored meta naming ids that were never this student's to read.
    reply = TutorMessage.objects.get(session_id=chat.session_id, role="assistant")
    reply.context_meta = {
        **reply.context_meta,
        "preference_ids": [str(mine.pk), str(theirs.pk), "not-a-uuid"],
        "fact_ids": [str(fact.pk), str(foreign_fact.pk)],
    }
    reply.save(update_fields=["context_meta"])

    texts = history(chat)[1]["context_texts"]

    assert texts == {str(mine.pk): "shorter answers please", str(fact.pk): "截止日期是 12 月 12 日"}


@pytest.mark.django_db
@pytest.mark.parametrize("turns", [2, 10])
def test_the_history_reads_outcomes_and_texts_in_the_same_queries_at_any_length(student, chat_for, turns):
    chat = chat_for(student)
    for n in range(turns):
        chat.send(f"I prefer answers with example {n}" if n % 2 == 0 else "what now")

    with CaptureQueriesContext(connection) as queries:
        messages = history(chat)

    assert len(messages) == 2 * turns
    # token auth, the session, the page; the outbox, the corrections; the memory texts
    assert len(queries.captured_queries) == 6


@pytest.mark.django_db
def test_a_stated_language_preference_comes_before_the_message_language_in_the_model_request(
    student, chat_for
):
    chat = chat_for(student)
    chat.send(PREFERENCE)

    chat.send("what should I do next")

    system = chat.fake_llm.last_messages[0]["content"]
    assert system.startswith(BASE_TUTOR_RULES)
    asked = system.index("1. a language the student asked for in STUDENT_PREFERENCES")
    written = system.index("2. otherwise, the language the student writes in.")
    assert asked < written
    preferences = system[system.index("<<<BEGIN STUDENT_PREFERENCES>>>") :]
    assert PREFERENCE in preferences[: preferences.index("<<<END STUDENT_PREFERENCES>>>")]
    assert "Answer in the language the student writes in." not in system  # no longer unconditional
