"""What the student sees of the memory loop (issue 36 item 5, SPEC §4, §5).

An assistant message shows "what the tutor knew" as texts, not ids:
``context_texts`` maps each id of its ``context_meta`` to the text behind it
-- the student's own preferences and memories, the course facts and process
rules that were in their context (``corrections.selectors.context_texts``);
lessons keep their ids. A user message read as a correction carries its
``correction`` outcome (``corrections.selectors.correction_outcomes``): what
was recorded and where, or ``pending`` while the worker has not run.

A send takes the texts from the request it just assembled (no query); the
history reads them again, so a forgotten item shows no text any more. Both
give the same map (``tests/corrections/test_student_loop.py``).
"""

from __future__ import annotations

from corrections.selectors import context_texts, correction_outcomes
from tutor.models import TutorMessage

# The preview data items (``AssembledContext.data``) whose text the student
# may see, and the field that holds it: their own memory, the course's facts.
TEXT_FIELDS = {"fact": "statement", "process_rule": "statement", "preference": "content", "memory": "content"}
TEXT_META_KEYS = {
    "fact_ids": "fact_ids",
    "process_rule_ids": "process_rule_ids",
    "preference_ids": "memory_ids",
    "memory_ids": "memory_ids",
}


def sent_context_texts(context) -> dict[str, str]:
    """The texts of a request just assembled, from its own data."""
    texts = {}
    for items in context.data.values():
        for item in items:
            field = TEXT_FIELDS.get(item.get("kind")) if isinstance(item, dict) else None
            if field and item.get(field) is not None:
                texts[str(item["id"])] = item[field]
    return texts


def sent_correction(*, student, user_message: TutorMessage) -> dict | None:
    """The outcome of the message just sent, as far as it is known when the
    reply is: the embedded default runs detection at once; with a worker it
    is ``pending`` and the history says more later. A message that cannot be
    a correction (the detection gate) costs no query."""
    from corrections.services.dispatch import detection_needed

    if not detection_needed(user_message):
        return None
    return correction_outcomes(user_id=student.pk, message_ids=[user_message.pk]).get(user_message.pk)


def history_reads(*, student, course_id, messages) -> dict:
    """The serializer context of a page of history: the outcomes of its user
    messages and the texts of its assistant messages' metas (three queries
    at most, whatever the page's length)."""
    user_ids, ids = [], {key: set() for key in set(TEXT_META_KEYS.values())}
    for message in messages:
        if message.role == TutorMessage.Role.USER:
            user_ids.append(message.pk)
        elif isinstance(message.context_meta, dict):
            for meta_key, kind in TEXT_META_KEYS.items():
                found = message.context_meta.get(meta_key)
                if isinstance(found, list):
                    ids[kind].update(str(value) for value in found)
    return {
        "corrections": correction_outcomes(user_id=student.pk, message_ids=user_ids),
        "context_texts": context_texts(user_id=student.pk, course_id=course_id, **ids),
    }


def message_texts(meta, texts: dict[str, str]) -> dict[str, str]:
    """The part of ``texts`` an assistant message's meta names."""
    if not isinstance(meta, dict):
        return {}
    named = {}
    for meta_key in TEXT_META_KEYS:
        for value in meta.get(meta_key) or ():
            text = texts.get(str(value))
            if text is not None:
                named[str(value)] = text
    return named
