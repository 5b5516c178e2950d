"""Rows the browser tests start from: users who can sign in, and long sessions."""

from __future__ import annotations

from django.db import transaction
from rest_framework.authtoken.models import Token

from tests.factories import enroll
from tutor.models import Course, Enrollment, TutorMessage, TutorSession

PASSWORD = "browser-test-password"
EMPTY_META_LISTS = (
    "feedback_rubric_ids",
    "fact_ids",
    "preference_ids",
    "memory_ids",
    "process_rule_ids",
    "lesson_ids",
)


def student_with_password(course: Course, username: str, role: str = Enrollment.Role.STUDENT):
    user = enroll(course, username, role)
    user.set_password(PASSWORD)
    user.save(update_fields=["password"])
    return user


def token_for(user) -> str:
    return Token.objects.get_or_create(user=user)[0].key


def context_meta(state: str = "none", **lists) -> dict:
    """A stored ``context_meta`` as the tutor writes it, with every list key."""
    meta = {"correlation_id": "seeded", "feedback_state": state, "omitted": {}}
    meta.update({key: [] for key in EMPTY_META_LISTS})
    meta.update(lists)
    return meta


def long_session(student, task, count: int, *, last_meta: dict | None = None) -> TutorSession:
    """An open session with ``count`` alternating messages (user first), as
    earlier turns left it; the last assistant message may carry ``last_meta``."""
    with transaction.atomic():
        session = TutorSession.objects.create(student=student, task=task, message_count=count)
        rows = []
        for position in range(1, count + 1):
            user_turn = position % 2 == 1
            turn = (position + 1) // 2
            rows.append(
                TutorMessage(
                    session=session,
                    position=position,
                    role=TutorMessage.Role.USER if user_turn else TutorMessage.Role.ASSISTANT,
                    content=f"earlier question {turn}" if user_turn else f"earlier answer {turn}",
                    context_meta=None if user_turn else context_meta(),
                )
            )
        if last_meta is not None and rows and rows[-1].role != TutorMessage.Role.USER:
            rows[-1].context_meta = last_meta
        TutorMessage.objects.bulk_create(rows)
    return session
