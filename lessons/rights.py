"""The lessons app's part of the data rights (SPEC §13; ``tutor.rights``):
erasure and export of the person's recall traces and lessons. Details:
docs/architecture.md, Data rights.
"""

from __future__ import annotations

from django.db.models import Q
from rest_framework import serializers

from feedback.models import ReviewAttempt, Submission
from lessons.models import (
    DeltaBump,
    Lesson,
    LessonKey,
    LessonRevision,
    LessonStatus,
    RecallTrace,
    SkillCandidate,
)
from lessons.selectors.library import lessons_changed
from lessons.services.capture import BODY_EVIDENCE_CHARS, draft_symptoms
from lessons.services.store import lesson_keys
from lessons.text import estimate_tokens, render_lesson, shingles
from tutor.kernel.redaction import redact
from tutor.models import Course, ModelCall, RetentionKind
from tutor.rights.own import texts_forget
from tutor.rights.registry import Ledger, RightsPart, Subject, delete_batch

APPROVED = (LessonStatus.APPROVED, LessonStatus.INJECTED, LessonStatus.QUARANTINED, LessonStatus.RETIRED)


class RecalledRefSerializer(serializers.Serializer):
    id = serializers.UUIDField()
    title = serializers.CharField()


class RecallUseSerializer(serializers.Serializer):
    correlation_id = serializers.CharField()
    task = serializers.UUIDField(source="task_id")
    session = serializers.UUIDField(source="session_id", allow_null=True)
    created_at = serializers.DateTimeField()
    recalled = RecalledRefSerializer(many=True, help_text="the lessons recalled into that request")


class LessonsRights(RightsPart):
    name = "lessons"
    position = 10
    export_key = "recall"
    rules = {
        "lessons.RecallTrace": "deleted",
        "lessons.RecalledLesson": "deleted with its trace",
        "lessons.LessonHit": "deleted with its trace or session",
        "lessons.Lesson": "from the person's work: kept when staff approved it, its source link cut and the "
        "evidence it quoted from their work removed; else deleted; a staff member's lessons lose their name",
        "lessons.LessonKey": "holds no person (deleted with its lesson)",
        "lessons.LessonRevision": "a draft's text versions: deleted with a draft from the person's work, "
        "kept with an approved one without the evidence quoted from their work; a staff member's lose "
        "their name and note",
        "lessons.SkillCandidate": "kept; a staff member loses their name and note",
        "lessons.DeltaBump": "kept (counts of the course's lessons); a person who sent it loses their name",
    }

    def retention(self):
        # The hits a trace counted go with it: a session may count the lesson again.
        return {
            RetentionKind.RECALL_TRACES: lambda *, scope, before, limit, dry_run: delete_batch(
                scope.of(RecallTrace.objects.filter(created_at__lt=before), "course_id"),
                limit=limit,
                dry_run=dry_run,
            )
        }

    def erase(self, subject: Subject, ledger: Ledger, *, dry_run: bool) -> None:
        user = subject.user
        submissions = subject.in_scope(Submission.objects.filter(student=user), "task__course_id").values(
            "pk"
        )
        attempts = ReviewAttempt.objects.filter(submission__in=submissions).values("pk")
        from_work = Lesson.objects.filter(
            Q(source_submission__in=submissions) | Q(source_attempt__in=attempts)
        )
        drafts = from_work.exclude(status__in=APPROVED)
        approved = from_work.filter(status__in=APPROVED)
        created = subject.in_scope(Lesson.objects.filter(created_by=user), "course_id")
        traces = subject.in_scope(RecallTrace.objects.filter(student=user), "course_id")
        candidates = subject.in_scope(SkillCandidate.objects.filter(decided_by=user), "lesson__course_id")
        bumps = subject.in_scope(DeltaBump.objects.filter(actor=user), "lesson__course_id")
        edits = subject.in_scope(LessonRevision.objects.filter(author=user), "lesson__course_id")
        courses = set(from_work.values_list("course_id", flat=True)) | set(
            created.values_list("course_id", flat=True)
        )
        ledger.delete(traces, dry_run=dry_run)
        ledger.delete(drafts, dry_run=dry_run)
        if dry_run:
            ledger.pseudonymise(Lesson, approved.count() + created.count())
            ledger.pseudonymise(SkillCandidate, candidates.count())
            ledger.pseudonymise(DeltaBump, bumps.count())
            ledger.pseudonymise(LessonRevision, edits.count())
            return
        quotes = _quotes(attempts)
        for lesson in approved:
            removed = _unquote(lesson, quotes)
            # The lesson as it read reached the tutor requests it was recalled into.
            reached = [lesson.course_id] if lesson.course_id else Course.objects.values_list("pk", flat=True)
            ledger.pseudonymise(ModelCall, texts_forget(texts=removed, course_ids=reached, dry_run=False))
        for revision in LessonRevision.objects.filter(lesson__in=approved):
            _unquote_revision(revision, quotes)
        ledger.pseudonymise(Lesson, approved.update(source_submission=None, source_attempt=None))
        ledger.pseudonymise(Lesson, created.update(created_by=None))
        ledger.pseudonymise(SkillCandidate, candidates.update(decided_by=None, note=""))
        ledger.pseudonymise(DeltaBump, bumps.update(actor=None))
        ledger.pseudonymise(LessonRevision, edits.update(author=None, note=""))
        if courses:
            lessons_changed(*courses)

    def export(self, subject: Subject):
        traces = (
            RecallTrace.objects.filter(student=subject.user)
            .prefetch_related("recalled")
            .order_by("created_at", "id")
        )
        return RecallUseSerializer(traces, many=True).data

    def export_serializer(self):
        return RecallUseSerializer(many=True)


REMOVED_QUOTE = "(removed: the student's work was erased)"


def _quotes(attempts) -> list[str]:
    """What a captured lesson may quote of the person's work: the evidence
    of their criteria (``lessons.services.capture`` copies a failing
    criterion's evidence into the body and its first lines into symptoms)."""
    found = set()
    for result in ReviewAttempt.objects.filter(pk__in=attempts).values_list("result", flat=True):
        for criterion in (result or {}).get("criteria") or []:
            evidence = criterion.get("evidence") if isinstance(criterion, dict) else None
            if isinstance(evidence, str) and evidence.strip():
                found.add(evidence)
    return sorted(found, key=len, reverse=True)


def _without_quotes(body: str, symptoms: list[str], quotes: list[str]) -> tuple[str, list[str], list[str]]:
    """``body`` and ``symptoms`` without the quotes, and the quotes the body held."""
    symptoms, removed = list(symptoms), []
    for quote in quotes:
        for form in {quote[:BODY_EVIDENCE_CHARS], redact(quote[:BODY_EVIDENCE_CHARS]).text}:
            if form and form in body:
                removed.append(form)
            body = body.replace(form, REMOVED_QUOTE)
        quoted = {s.casefold() for s in draft_symptoms("", quote)} | {
            s.casefold() for s in draft_symptoms("", redact(quote).text)
        }
        symptoms = [s for s in symptoms if s.casefold() not in quoted]
    return body, symptoms, removed


def _unquote_revision(revision: LessonRevision, quotes: list[str]) -> None:
    body, symptoms, _ = _without_quotes(revision.body, revision.symptoms, quotes)
    if (body, symptoms) != (revision.body, revision.symptoms):
        LessonRevision.objects.filter(pk=revision.pk).update(body=body, symptoms=symptoms)


def _unquote(lesson: Lesson, quotes: list[str]) -> list[str]:
    """Remove the person's quoted work from a lesson the course keeps, and
    write its derived columns (tokens, shingles, recall keys) again. Returns
    the quotes its body held."""
    body, symptoms, removed = _without_quotes(lesson.body, lesson.symptoms, quotes)
    if (body, symptoms) == (lesson.body, lesson.symptoms):
        return removed
    lesson.body, lesson.symptoms = body, symptoms
    lesson.shingles = shingles(f"{lesson.title}\n{body}")
    lesson.shingle_count = len(lesson.shingles)
    lesson.tokens = estimate_tokens(render_lesson(lesson.title, body))
    Lesson.objects.filter(pk=lesson.pk).update(
        body=body,
        symptoms=symptoms,
        shingles=lesson.shingles,
        shingle_count=lesson.shingle_count,
        tokens=lesson.tokens,
    )
    LessonKey.objects.filter(lesson=lesson).delete()
    LessonKey.objects.bulk_create(lesson_keys(lesson))
    return removed
