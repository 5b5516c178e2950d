"""Staff edits of a pending draft (SPEC §6; issue 36 item 3): a draft's
title, body, tags and symptoms may be rewritten before it is approved --
never after (an approved lesson is what staff approved, and a delta never
rewrites content).

Each edit is one revision (``LessonRevision``), audited as
``lesson_edited``. The first edit also writes revision 1, the text as it
was captured or entered, so the record keeps it; the lesson row holds the
newest text, which is what recall reads and what approval approves. The
text goes through the same rules and redaction as every door
(``lessons.validation``, ``lessons.services.store``).
"""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import Max

from lessons.access import ensure_can_manage
from lessons.models import Lesson, LessonKey, LessonRevision, LessonStatus
from lessons.selectors.library import lessons_changed
from lessons.services.lifecycle import IllegalTransition
from lessons.services.store import lesson_keys, redact_lesson
from lessons.text import estimate_tokens, render_lesson, shingles
from lessons.validation import clean_body, clean_symptoms, clean_tags, clean_title
from tutor.audit import audit_record
from tutor.kernel.errors import NotFound, PermissionRefused
from tutor.kernel.redaction import redact_text
from tutor.models import AuditEvent

EDITED_FIELDS = ("title", "body", "tags", "symptoms")


def _revision(lesson: Lesson, number: int, *, author, note: str = "") -> LessonRevision:
    return LessonRevision(
        lesson=lesson,
        number=number,
        title=lesson.title,
        body=lesson.body,
        tags=lesson.tags,
        symptoms=lesson.symptoms,
        redactions=lesson.redactions,
        redaction_kinds=lesson.redaction_kinds,
        author=author,
        note=note,
    )


# Not durable: Django admin's change view already runs its save in a transaction.
@transaction.atomic
def lesson_edit(
    *, lesson: Lesson, actor, title, body, tags, symptoms, note: str = ""
) -> LessonRevision | None:
    """A new revision of a pending draft, or None when the edit changes
    nothing. Bad text is refused per field (400); a draft approved or
    rejected meanwhile is a 409, never edited."""
    if actor is None:
        raise PermissionRefused("a draft is edited by a person, not by a command")
    ensure_can_manage(actor, lesson.course_id)
    title, body = clean_title(title), clean_body(body)
    tags, symptoms = clean_tags(tags), clean_symptoms(symptoms)
    note = redact_text((note or "").strip())
    current = Lesson.objects.select_for_update().filter(pk=lesson.pk).first()
    if current is None:
        raise NotFound("no such lesson")
    if current.status != LessonStatus.PENDING:
        raise IllegalTransition(f"only a pending draft can be edited; this lesson is {current.status}")
    text = redact_lesson(title=title, body=body, tags=tags, symptoms=symptoms)
    new = {"title": text.title, "body": text.body, "tags": text.tags, "symptoms": text.symptoms}
    changed = [name for name in EDITED_FIELDS if getattr(current, name) != new[name]]
    if not changed:
        return None
    last = current.revisions.aggregate(last=Max("number"))["last"]
    try:
        with transaction.atomic():
            if last is None:  # the captured (or entered) text, kept for the record
                _revision(current, 1, author=current.created_by).save(force_insert=True)
                last = 1
            for name, value in new.items():
                setattr(current, name, value)
            current.redactions, current.redaction_kinds = text.count, text.kinds
            current.shingles = shingles(f"{text.title}\n{text.body}")
            current.shingle_count = len(current.shingles)
            current.tokens = estimate_tokens(render_lesson(text.title, text.body))
            fields = [*EDITED_FIELDS, "redactions", "redaction_kinds", "shingles", "shingle_count", "tokens"]
            moved = Lesson.objects.filter(pk=current.pk, status=LessonStatus.PENDING).update(
                **{name: getattr(current, name) for name in fields}
            )
            if moved != 1:
                raise IllegalTransition("the draft is no longer pending; reload it and try again")
            revision = _revision(current, last + 1, author=actor, note=note)
            revision.save(force_insert=True)
    except IntegrityError:  # another edit took this number meanwhile
        raise IllegalTransition("the draft was edited meanwhile; reload it and try again") from None
    LessonKey.objects.filter(lesson=current).delete()
    LessonKey.objects.bulk_create(lesson_keys(current))
    lessons_changed(current.course_id, injected=False, rows=[current.pk])
    audit_record(
        actor=actor,
        event=AuditEvent.Event.LESSON_EDITED,
        target=current,
        course=current.course_id,
        from_state=LessonStatus.PENDING,
        to_state=LessonStatus.PENDING,
        reason=note,
        extra={"revision": revision.number, "fields": changed, "redactions": text.count},
    )
    lesson.refresh_from_db()
    return revision
