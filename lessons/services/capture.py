"""Capture from reviews (SPEC §6 capture a; seed 003: capture from failures):
a criterion that FAILed on an external basis and PASSes on the student's next
submission becomes one ``pending`` draft, built only from what the student
could see. Details: docs/architecture.md, Lesson capture, deltas, import and
lifecycle.
"""

from __future__ import annotations

import logging
import re

from django.db import IntegrityError, transaction

from feedback.models import AttemptStatus, ReviewAttempt
from feedback.results import EXTERNAL_SIGNAL_BASES
from feedback.visibility import CI_LOG_HIDDEN, HIDDEN_TEXT, student_result
from lessons.models import MAX_TAGS, Lesson, LessonKind, LessonSource
from lessons.services.store import lesson_insert
from tutor.audit import audit_record
from tutor.kernel.rubrics import Verdict, is_hidden
from tutor.models import AuditEvent

log = logging.getLogger(__name__)

CAPTURE_ACTOR = "review capture"
# A symptom must fit inside a feedback item's cut reason (120 characters in
# the block, SPEC §3), or a later student's feedback could never contain it.
SYMPTOM_CHARS = 100
EVIDENCE_SYMPTOM_LINES = 2
BODY_EVIDENCE_CHARS = 600
# The stand-ins ``student_result`` puts in place of hidden text: they say
# nothing about a fix and would match every feedback block that shows them.
STAND_INS = frozenset(t.casefold() for t in (CI_LOG_HIDDEN, *HIDDEN_TEXT.values()))


def _unless_stand_in(text: str) -> str:
    return "" if text.strip().casefold() in STAND_INS else text


def _phrase(text: str) -> str:
    """The start of ``text`` as one line of at most SYMPTOM_CHARS, cut at a space."""
    line = " ".join(text.split())
    if len(line) <= SYMPTOM_CHARS:
        return line
    cut = line[:SYMPTOM_CHARS]
    return cut.rsplit(" ", 1)[0] if " " in cut else cut


def draft_symptoms(reason: str, evidence: str) -> list[str]:
    """The failing reason, and the first lines of its evidence (a CI log tail)."""
    phrases = [_phrase(reason)] if reason.strip() else []
    lines = [line for line in evidence.splitlines() if re.search(r"\w", line)]
    phrases += [_phrase(line) for line in lines[:EVIDENCE_SYMPTOM_LINES]]
    unique: list[str] = []
    for phrase in phrases:
        if phrase and phrase.casefold() not in {u.casefold() for u in unique}:
            unique.append(phrase)
    return unique


def what_changed(before: dict, after: dict, check: dict) -> str:
    """What the passing evidence shows changed for this criterion, by its
    machine check (``feedback.checks``): the file that appeared, the CI
    result, the terms the text now holds."""
    kind = check.get("type")
    if kind == "file_exists":
        return f"{check['path']} appeared in the submitted files."
    if kind == "ci_passed":
        changed = f"the CI result changed from '{before['reason']}' to '{after['reason']}'"
        log_tail = (after.get("evidence") or "")[-BODY_EVIDENCE_CHARS:]
        return f"{changed}; its log now ends: {log_tail}" if log_tail else changed + "."
    # ``contains`` and any other check: its passing reason names what the text now holds.
    return f"{after['reason']} (before: {before['reason']})."


def draft_body(before: dict, after: dict, check: dict) -> str:
    parts = [f"Symptom: {before['reason']}"]
    if before.get("evidence"):
        parts.append(f"Evidence: {before['evidence'][:BODY_EVIDENCE_CHARS]}")
    parts.append(f"What fixed it: {what_changed(before, after, check)}")
    parts.append(
        f"Verified: '{after['criterion']}' ({after['rubric_id']}) passed on the next submission "
        f"({after['reason']})."
    )
    return "\n".join(parts)


def fixed_criteria(failing: dict, passing: dict, rubric_criteria: list[dict]) -> list[tuple[dict, dict]]:
    """(before, after) for each visible criterion that FAILed in ``failing``
    and PASSes in ``passing``, both on an external basis."""
    hidden = {c["id"] for c in rubric_criteria if is_hidden(c)}
    before = {c["rubric_id"]: c for c in failing.get("criteria") or []}
    fixed = []
    for after in passing.get("criteria") or []:
        rubric_id = after["rubric_id"]
        earlier = before.get(rubric_id)
        if (
            rubric_id not in hidden
            and after["status"] == Verdict.PASS
            and after["basis"] in EXTERNAL_SIGNAL_BASES
            and earlier is not None
            and earlier["status"] == Verdict.FAIL
            and earlier["basis"] in EXTERNAL_SIGNAL_BASES
        ):
            fixed.append((earlier, after))
    return fixed


def lessons_capture_from_attempt(*, attempt_id) -> list[Lesson]:
    """Drafts for the criteria that ``attempt`` (a finished review of a
    student's submission) shows fixed since the previous submission."""
    attempt = (
        ReviewAttempt.objects.select_related("submission", "submission__task", "rubric")
        .filter(pk=attempt_id, status=AttemptStatus.COMPLETED)
        .first()
    )
    if attempt is None or not attempt.result or attempt.submission.previous_id is None:
        return []
    # The previous submission's newest completed review under the same rubric
    # version (one rubric row per task and version): criterion ids, and which
    # of them are hidden, mean the same thing on both sides.
    failing = (
        ReviewAttempt.objects.filter(
            submission_id=attempt.submission.previous_id,
            status=AttemptStatus.COMPLETED,
            rubric_version=attempt.rubric_version,
        )
        .order_by("-attempt_seq")
        .first()
    )
    if failing is None or not failing.result:
        return []
    task = attempt.submission.task
    # Only the student's view of both reviews may become a draft (SPEC §9).
    criteria = attempt.rubric.criteria
    failing_shown = student_result(failing.result, criteria)
    passing_shown = student_result(attempt.result, criteria)
    checks = {c["id"]: c.get("check") or {} for c in criteria}
    created = []
    for before, after in fixed_criteria(failing_shown, passing_shown, criteria):
        before = {**before, "evidence": _unless_stand_in(before.get("evidence") or "")}
        after = {**after, "evidence": _unless_stand_in(after.get("evidence") or "")}
        try:
            # One transaction per draft: an already captured criterion (the
            # unique constraint) must not undo the others.
            with transaction.atomic(durable=True):
                lesson = lesson_insert(
                    course_id=task.course_id,
                    title=f"[{task.slug} {before['rubric_id']}] {before['reason']}",
                    body=draft_body(before, after, checks[before["rubric_id"]]),
                    # As many as a lesson may carry (MAX_TAGS): a task saved before
                    # task tags had the same limit (tutor.kernel.tags) may carry more.
                    tags=list(task.tags or [])[:MAX_TAGS],
                    symptoms=draft_symptoms(before["reason"], before["evidence"]),
                    kind=LessonKind.GUARDRAIL,
                    source=LessonSource.REVIEW,
                    source_attempt=attempt,
                    source_submission_id=attempt.submission_id,
                    source_rubric_id=before["rubric_id"],
                )
                audit_record(
                    actor=None,
                    actor_label=CAPTURE_ACTOR,
                    event=AuditEvent.Event.LESSON_CREATED,
                    target=lesson,
                    course=task.course_id,
                    to_state=lesson.status,
                    extra={
                        "source": LessonSource.REVIEW,
                        "rubric_id": before["rubric_id"],
                        "failing_attempt": str(failing.pk),
                        "passing_attempt": str(attempt.pk),
                        "redactions": lesson.redactions,
                    },
                )
        except IntegrityError:
            already = Lesson.objects.filter(
                source=LessonSource.REVIEW,
                source_submission_id=attempt.submission_id,
                source_rubric_id=before["rubric_id"],
            ).exists()
            if not already:
                raise
            log.info(
                "lesson for %s of submission %s already captured", before["rubric_id"], attempt.submission_id
            )
            continue
        created.append(lesson)
    return created
