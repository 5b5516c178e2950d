"""The context assembler is one loop over registered section providers
(SPEC §4): a new section is one provider, with no edit of the assembler."""

from __future__ import annotations

import pytest

from tests.api.test_tutor import send, session_id_for
from tutor.context import providers
from tutor.context.providers import Section, SectionProvider, SendEffects
from tutor.kernel.fencing import fence


class GlossarySection(SectionProvider):
    """A section a course might add: defined between process rules and lessons."""

    name = "glossary"
    position = providers.PROCESS_RULES_POSITION + 5
    ids_key = "glossary_ids"
    data_key = "facts"

    def __init__(self):
        self.sent = []

    def build(self, request):
        body = f"first(): returns the first element (asked: {request.message!r}, preview={request.preview})"
        text = fence("GLOSSARY", body)
        return Section(
            text=text,
            ids=["g-1"],
            omitted=2,
            used_chars=len(text),
            budget_chars=500,
            data=[{"kind": "glossary"}],
        )

    def send_effects(self, request, section):
        sent = (request.message, section.ids, request.preview)
        return SendEffects(follow_up=lambda: self.sent.append(sent))


@pytest.fixture
def glossary():
    provider = GlossarySection()
    providers.register(provider)
    yield provider
    providers.unregister(provider.name)


def test_a_registered_provider_adds_its_section_meta_and_data_without_editing_the_assembler(
    task, student_client, glossary
):
    response = student_client.get("/api/tutor/context/", {"task": task.pk, "message": "what is first?"})

    body = response.json()
    system = body["messages"][0]["content"]
    assert "<<<BEGIN GLOSSARY>>>" in system
    # After the feedback block, in position order.
    assert system.index("<<<BEGIN REVIEW_FEEDBACK>>>") < system.index("<<<BEGIN GLOSSARY>>>")
    assert "preview=True" in system
    meta = body["meta"]
    assert meta["glossary_ids"] == ["g-1"]
    assert meta["omitted"]["glossary"] == 2
    text = fence("GLOSSARY", "first(): returns the first element (asked: 'what is first?', preview=True)")
    assert text in system
    assert meta["sections"]["glossary"] == {
        "used_chars": len(text),
        "budget_chars": 500,
        "truncated": [],
        "omitted": 2,
    }
    assert body["facts"] == [{"kind": "glossary"}]
    assert glossary.sent == []  # a preview has no effects


def test_send_effects_are_written_once_on_a_real_send_and_never_for_a_preview(task, student_client, glossary):
    session_id = session_id_for(student_client, task)

    response = send(student_client, session_id, "define first")

    assert response.status_code == 201
    assert response.json()["context_meta"]["glossary_ids"] == ["g-1"]
    assert glossary.sent == [("define first", ["g-1"], False)]
    student_client.get("/api/tutor/context/", {"task": task.pk, "message": "again"})
    assert len(glossary.sent) == 1


def test_registering_under_a_slot_name_replaces_the_empty_slot(task, student_client):
    class Facts(SectionProvider):
        name = "facts"
        position = providers.FACTS_POSITION
        ids_key = "fact_ids"
        data_key = "facts"

        def build(self, request):
            return Section(text=fence("FACTS", "630 mm"), ids=["f-1"], data=[{"kind": "fact"}])

    original = next(p for p in providers.providers() if p.name == "facts")
    providers.register(Facts())
    try:
        body = student_client.get("/api/tutor/context/", {"task": task.pk}).json()
    finally:
        providers.register(original)

    assert body["meta"]["fact_ids"] == ["f-1"]
    assert body["facts"] == [{"kind": "fact"}]
    assert body["messages"][0]["content"].count("<<<BEGIN FACTS>>>") == 1


def test_every_slot_keeps_its_meta_keys_when_empty(task, student_client):
    meta = student_client.get("/api/tutor/context/", {"task": task.pk}).json()["meta"]

    for key in ("fact_ids", "preference_ids", "memory_ids", "process_rule_ids", "lesson_ids"):
        assert key in meta
    for name in (
        "facts",
        "preferences",
        "memories",
        "process_rules",
        "lessons",
        "task",
        "feedback",
        "history",
    ):
        assert name in meta["sections"]
        assert name in meta["omitted"] or name in ("task", "feedback")
