"""Writing a lesson row (SPEC §6): redaction before anything is stored, the
token estimate, shingles and the recall keys. Runs inside the caller's
transaction; every door (capture, staff entry, deltas, import) comes here."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import date, timedelta

from django.db import transaction
from django.utils import timezone

from lessons.models import (
    SYMPTOM_MAX_CHARS,
    TAG_MAX_CHARS,
    TITLE_MAX_CHARS,
    Lesson,
    LessonKey,
    LessonStatus,
)
from lessons.text import (
    estimate_tokens,
    marked,
    normalize,
    render_lesson,
    shingles,
    symptom_anchor,
    tag_pairs,
)
from tutor.kernel.conf import optional_setting
from tutor.kernel.redaction import marker_kinds, redact

# How long a new lesson stays valid before staff must look at it again (seed 003: review_by).
LESSON_REVIEW_DAYS = 90


def default_review_by(today: date | None = None) -> date:
    days = int(optional_setting("LESSON_REVIEW_DAYS", LESSON_REVIEW_DAYS))
    return (today or timezone.localdate()) + timedelta(days=days)


@dataclass(frozen=True)
class RedactedText:
    title: str
    body: str
    tags: list[str]
    symptoms: list[str]
    count: int
    kinds: dict[str, int]


def redact_lesson(*, title: str, body: str, tags: list[str], symptoms: list[str]) -> RedactedText:
    """Every field through the one redaction module (``tutor.kernel.redaction``):
    API keys and tokens, passwords, private keys, e-mail and IP addresses
    become ``[REDACTED:kind]``; the count and kinds are kept for staff.

    The count is of the markers the stored text carries, also those made
    upstream: a draft quotes a review whose CI log was redacted before it
    was stored, and staff deciding a ``sensitive_data`` rejection must see
    that secrets were removed (issue 41 item 6). Students write no lesson: a
    marker they typed in evidence was made no marker when it was stored."""
    kinds: Counter[str] = Counter()

    def scrub(text: str, limit: int | None = None) -> str:
        result = redact(text).text
        result = result[:limit] if limit else result
        kinds.update(marker_kinds(result))
        return result

    return RedactedText(
        title=scrub(title, TITLE_MAX_CHARS),
        body=scrub(body),
        tags=[scrub(t, TAG_MAX_CHARS) for t in tags],
        symptoms=[scrub(s, SYMPTOM_MAX_CHARS) for s in symptoms],
        count=sum(kinds.values()),
        kinds=dict(kinds),
    )


def lesson_keys(lesson: Lesson) -> list[LessonKey]:
    """The normalized tag, tag pair and symptom rows recall looks a lesson up by."""
    keys: dict[tuple[str, str], LessonKey] = {}
    for kind, values in ((LessonKey.Kind.TAG, lesson.tags), (LessonKey.Kind.SYMPTOM, lesson.symptoms)):
        for value in values:
            norm = normalize(value)[:SYMPTOM_MAX_CHARS]
            if not norm:
                continue
            symptom = kind == LessonKey.Kind.SYMPTOM
            keys.setdefault(
                (kind, norm),
                LessonKey(
                    lesson=lesson,
                    course_id=lesson.course_id,
                    kind=kind,
                    value=norm,
                    anchor=symptom_anchor(norm) if symptom else "",
                    marked=marked(norm) if symptom else "",
                ),
            )
    tags = sorted(value for kind, value in keys if kind == LessonKey.Kind.TAG)
    for pair in tag_pairs(tags):
        keys[(LessonKey.Kind.TAG_PAIR, pair)] = LessonKey(
            lesson=lesson, course_id=lesson.course_id, kind=LessonKey.Kind.TAG_PAIR, value=pair
        )
    return list(keys.values())


def lesson_insert(
    *,
    course_id,
    title: str,
    body: str,
    tags: list[str],
    symptoms: list[str],
    kind: str,
    source: str,
    status: str = LessonStatus.PENDING,
    review_by: date | None = None,
    tokens: int | None = None,
    **fields,
) -> Lesson:
    """Redact, estimate and store one lesson with its recall keys. Must run
    inside a transaction (the lesson and its keys commit together)."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("lesson_insert must run inside a transaction")
    text = redact_lesson(title=title, body=body, tags=tags, symptoms=symptoms)
    shingle_list = shingles(f"{text.title}\n{text.body}")
    lesson = Lesson(
        course_id=course_id,
        title=text.title,
        body=text.body,
        tags=text.tags,
        symptoms=text.symptoms,
        kind=kind,
        source=source,
        status=status,
        review_by=review_by or default_review_by(),
        # An imported library's own count is kept; otherwise estimated from
        # the text the prompt will carry.
        tokens=tokens if tokens is not None else estimate_tokens(render_lesson(text.title, text.body)),
        redactions=text.count,
        redaction_kinds=text.kinds,
        shingles=shingle_list,
        shingle_count=len(shingle_list),
        **fields,
    )
    if status == LessonStatus.INJECTED and lesson.injected_at is None:
        lesson.injected_at = timezone.now()
    lesson.save(force_insert=True)
    LessonKey.objects.bulk_create(lesson_keys(lesson))
    return lesson
