"""Bulk import of an existing lesson library (SPEC §1 ``import_lessons``):
validated whole, then imported in one transaction, statuses kept, each row
audited. Details: docs/architecture.md, Lesson capture, deltas, import and
lifecycle.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from lessons.models import Lesson, LessonKind, LessonSource, LessonStatus, RejectReason
from lessons.services.store import default_review_by, lesson_insert, redact_lesson
from lessons.validation import clean_body, clean_symptoms, clean_tags, clean_title
from tutor.audit import audit_record
from tutor.kernel.datafiles import DataFileError, data_file_load
from tutor.kernel.errors import DomainError
from tutor.models import AuditEvent, Course

ROW_KEYS = {
    "title",
    "body",
    "tags",
    "symptoms",
    "status",
    "hit_count",
    "last_hit",
    "review_by",
    "tokens",
    "course",
    "kind",
}
_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
IMPORTED_REJECTION_NOTE = "imported from a lesson library as rejected"


class LessonFileError(DomainError):
    """A malformed lesson file; ``field`` is the path of the offending value."""

    def __init__(self, field: str, message: str):
        super().__init__(f"invalid lesson file: {field}: {message}", field=field)


@dataclass(frozen=True)
class LessonRowSpec:
    index: int
    course_slug: str | None
    title: str
    body: str
    tags: list[str]
    symptoms: list[str]
    status: str
    kind: str
    hit_count: int
    last_hit: date | None
    review_by: date | None
    tokens: int | None


@dataclass
class ImportReport:
    created: list[Lesson] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)  # row indexes already present
    # (row index, review_by) of imported rows whose review date has passed
    past_review: list[tuple[int, date]] = field(default_factory=list)


def load_lesson_file(path: str | Path) -> Any:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise LessonFileError("FILE", f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise LessonFileError("FILE", f"{path} is not UTF-8 text") from None
    try:
        return data_file_load(text, json_file=path.suffix.lower() == ".json")
    except DataFileError as exc:
        raise LessonFileError("FILE", f"{path} is not valid JSON/YAML: {exc}") from None


def _date(value: Any, at: str) -> date | None:
    if value is None:
        return None
    if isinstance(value, date) and not hasattr(value, "hour"):  # YAML reads 2026-10-13 as a date
        return value
    if isinstance(value, str) and _ISO_DATE.match(value):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise LessonFileError(at, "must be an ISO date YYYY-MM-DD")


def _count(value: Any, at: str, *, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise LessonFileError(at, f"must be a whole number >= {minimum}")
    return value


def _choice(value: Any, at: str, choices: list[str], default: str) -> str:
    if value is None:
        return default
    if value not in choices:
        raise LessonFileError(at, f"must be one of {', '.join(choices)}")
    return value


def _checked(clean: Callable, value: Any, at: str):
    """Run a shared field rule, reporting its error under the file's path."""
    try:
        return clean(value, at)
    except DomainError as exc:
        raise LessonFileError(exc.field or at, exc.message) from None


def validate_lesson_rows(data: Any, *, default_course: str | None = None) -> list[LessonRowSpec]:
    if not isinstance(data, list):
        raise LessonFileError("FILE", "must be a list of lessons")
    rows = []
    for i, row in enumerate(data):
        at = f"[{i}]"
        if not isinstance(row, dict):
            raise LessonFileError(at, "must be a mapping")
        for key in sorted(set(row) - ROW_KEYS, key=str):
            raise LessonFileError(f"{at}.{key}", f"unknown key; allowed: {', '.join(sorted(ROW_KEYS))}")
        course = row.get("course") or default_course
        if course is not None and (not isinstance(course, str) or not course.strip()):
            raise LessonFileError(f"{at}.course", "must be a course slug")
        tokens = row.get("tokens")
        rows.append(
            LessonRowSpec(
                index=i,
                course_slug=course,
                title=_checked(clean_title, row.get("title"), f"{at}.title"),
                body=_checked(clean_body, row.get("body"), f"{at}.body"),
                tags=_checked(clean_tags, row.get("tags"), f"{at}.tags"),
                symptoms=_checked(clean_symptoms, row.get("symptoms"), f"{at}.symptoms"),
                status=_choice(row.get("status"), f"{at}.status", LessonStatus.values, LessonStatus.PENDING),
                kind=_choice(row.get("kind"), f"{at}.kind", LessonKind.values, LessonKind.NOTE),
                hit_count=_count(row.get("hit_count", 0), f"{at}.hit_count", minimum=0),
                last_hit=_date(row.get("last_hit"), f"{at}.last_hit"),
                review_by=_date(row.get("review_by"), f"{at}.review_by"),
                tokens=None if tokens is None else _count(tokens, f"{at}.tokens", minimum=1),
            )
        )
    return rows


def resolve_courses(rows: list[LessonRowSpec], default_course: str | None) -> dict[str, Course]:
    slugs = {r.course_slug for r in rows if r.course_slug} | ({default_course} if default_course else set())
    courses = {c.slug: c for c in Course.objects.filter(slug__in=slugs)}
    if default_course and default_course not in courses:
        raise LessonFileError("--course", f"no course with slug {default_course!r}")
    for row in rows:
        if row.course_slug and row.course_slug not in courses:
            raise LessonFileError(f"[{row.index}].course", f"no course with slug {row.course_slug!r}")
    return courses


@transaction.atomic(durable=True)
def lessons_import(
    *,
    rows: list[LessonRowSpec],
    courses: dict[str, Course],
    source: str = "",
    progress: Callable[[int, int], None] | None = None,
) -> ImportReport:
    """Import validated rows, all or nothing, each audited as an operator import."""
    report = ImportReport()
    today = timezone.localdate()
    for done, row in enumerate(rows, 1):
        course = courses.get(row.course_slug) if row.course_slug else None
        course_id = course.pk if course is not None else None
        text = redact_lesson(title=row.title, body=row.body, tags=[], symptoms=[])
        if Lesson.objects.filter(course_id=course_id, title=text.title, body=text.body).exists():
            report.skipped.append(row.index)
        else:
            rejected = row.status == LessonStatus.REJECTED
            lesson = lesson_insert(
                course_id=course_id,
                title=row.title,
                body=row.body,
                tags=row.tags,
                symptoms=row.symptoms,
                kind=row.kind,
                source=LessonSource.IMPORT,
                status=row.status,
                review_by=row.review_by or default_review_by(),
                tokens=row.tokens,
                hit_count=row.hit_count,
                last_hit=row.last_hit,
                reject_reason=RejectReason.OTHER if rejected else "",
                reject_note=IMPORTED_REJECTION_NOTE if rejected else "",
            )
            audit_record(
                actor=None,
                event=AuditEvent.Event.LESSON_IMPORTED,
                target=lesson,
                course=course_id,
                to_state=lesson.status,
                extra={"row": row.index, "file": source, "redactions": lesson.redactions},
            )
            report.created.append(lesson)
            if lesson.review_by < today:
                report.past_review.append((row.index, lesson.review_by))
        if progress is not None:
            progress(done, len(rows))
    return report
