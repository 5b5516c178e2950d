"""A real send's recalled lessons as committed (SPEC §6): their status and
review date, and whether the session already used each, in one prepared
query -- what a snapshot's recall checks before it is trusted.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

from django.db.models import Exists, OuterRef

from lessons.models import Lesson, LessonHit
from lessons.selectors.rows import padded
from tutor.db.prepared import PreparedQuery


def recalled_now_queryset(*, session_id, lesson_ids):
    used = Exists(LessonHit.objects.filter(lesson_id=OuterRef("pk"), session_id=session_id))
    return (
        Lesson.objects.filter(pk__in=lesson_ids)
        .values("id", "status", "review_by")
        .annotate(used=used)
        .order_by()
    )


RECALLED_NOW = PreparedQuery(recalled_now_queryset, session_id="uuid", lesson_ids="uuid[]")


@dataclass(frozen=True)
class RecalledNow:
    status: str
    review_by: date
    used: bool  # by the session already


def recalled_now(session_id, lesson_ids) -> dict:
    """The committed status and review date of each of ``lesson_ids`` that
    still exists, and whether the tutor session already used it (one query)."""
    rows = RECALLED_NOW.rows(session_id=session_id, lesson_ids=padded(list(lesson_ids)))
    return {row["id"]: RecalledNow(row["status"], row["review_by"], bool(row["used"])) for row in rows}
