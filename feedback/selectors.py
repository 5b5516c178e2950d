"""Reads of the feedback app: which review the tutor may rely on (SPEC §3)."""

from __future__ import annotations

import json
import logging
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import F, OuterRef, Q, Subquery
from django.db.models.functions import Coalesce

from feedback.agreement import flagged_criteria
from feedback.models import AttemptStatus, ReviewAttempt, Submission
from feedback.results import result_contract_error
from feedback.versions import NoRubric, Versions, current_versions
from feedback.visibility import student_result
from tutor import access
from tutor.db.jsonrows import JSONRows
from tutor.db.memo import Memo
from tutor.db.prepared import PreparedQuery
from tutor.kernel.rubrics import CriterionKind, Verdict
from tutor.models import Enrollment, Task

log = logging.getLogger(__name__)


class FeedbackState(models.TextChoices):
    NONE = "none"
    PENDING = "pending"
    UNAVAILABLE = "unavailable"
    STALE_RULES = "stale_rules"
    INVALID = "invalid"
    PASSED = "passed"
    CURRENT = "current"


class InvalidReason(models.TextChoices):
    ATTEMPT_INVALID = "attempt_invalid"  # the review itself ended invalid (repair loop gave up)
    CONTRACT_VIOLATION = "contract_violation"  # the stored result breaks the result contract
    CONTEXT_BUDGET_EXCEEDED = "context_budget_exceeded"  # set by the block, never by the selector


@dataclass(frozen=True)
class FeedbackSelection:
    """The review a tutor turn may use, and why.

    Fields that do not exist in a state are None: everything but ``state`` in
    ``none``; the attempt fields in ``stale_rules`` and in ``pending`` without
    an attempt. ``pending`` with a queued or running compatible attempt carries
    that attempt's fields, so a client can follow it. ``review_status`` (the
    overall verdict) and ``result`` are set only in ``passed`` and ``current``,
    where the result has passed the contract check.
    """

    state: FeedbackState
    reason: InvalidReason | None = None
    submission_id: uuid.UUID | None = None
    submission_seq: int | None = None
    snapshot_hash: str | None = None
    attempt_id: uuid.UUID | None = None
    attempt_seq: int | None = None
    attempt_status: str | None = None
    review_status: str | None = None
    rubric_version: str | None = None
    prompt_version: str | None = None
    engine_version: str | None = None
    model: str | None = None
    reused: bool | None = None
    result: dict[str, Any] | None = None
    # For a terminal attempt, what its rendering depends on besides the
    # settings (``feedback.block``): the selection names an immutable record.
    memo_key: tuple | None = field(default=None, compare=False, repr=False)

    @property
    def blocking_items(self) -> list[dict[str, Any]]:
        """The non-PASS acceptance criteria, FAIL before NEED_REVIEW, then
        ``rubric_id`` ascending (SPEC §3). Empty outside ``current``: a
        ``passed`` review replaces any older to-do list."""
        if self.state != FeedbackState.CURRENT:
            return []
        blocking = [
            c
            for c in self.result["criteria"]
            if c["kind"] == CriterionKind.ACCEPTANCE and c["status"] != Verdict.PASS
        ]
        return sorted(blocking, key=lambda c: (c["status"] != Verdict.FAIL, c["rubric_id"]))

    @property
    def next_step(self) -> str | None:
        if self.state not in (FeedbackState.CURRENT, FeedbackState.PASSED):
            return None
        return self.result["next_step"]


_ROW_FIELDS = {
    "submission_id": "id",
    "submission_seq": "submission_seq",
    "snapshot_hash": "snapshot_hash",
    "attempt_id": "attempts__id",
    "attempt_seq": "attempts__attempt_seq",
    "attempt_status": "attempts__status",
    "rubric_version": "attempts__rubric_version",
    "rubric_hash": "attempts__rubric_hash",
    "prompt_version": "attempts__prompt_version",
    "engine_version": "attempts__engine_version",
    "model": "attempts__model",
    "reused_from_id": "attempts__reused_from_id",
    "result": "attempts__result",
}


def _deeper(value):
    """``value`` as a subquery one level further in sees it: a reference to
    an outer query (``OuterRef``) reaches one level further out."""
    return OuterRef(value) if isinstance(value, OuterRef) else value


def latest_row_queryset(*, student_id, task_id, versions: dict | None):
    """The latest submission joined with the one attempt that decides its state.

    One statement, so one snapshot under READ COMMITTED. The joined attempt is
    the newest compatible one (max ``attempt_seq`` under ``versions``, the
    lookups of ``Versions.compatible_filter``); without one, the newest attempt
    of any versions, which then tells ``stale_rules`` from ``pending`` (an
    incompatible attempt means none is compatible). With no attempt at all the
    LEFT JOIN leaves the attempt columns null. Served by
    ``submission_latest_idx`` and ``attempt_newest_idx``.

    ``task_id`` and the ``versions`` may be references (``OuterRef``) to a
    statement this one is a subquery of (``tutor.chat.selectors``: the task's
    statement carries the selection); they are passed on to the inner
    subqueries one level further out.
    """
    attempts = ReviewAttempt.objects.filter(submission=OuterRef("pk")).order_by("-attempt_seq")
    newest_any = Subquery(attempts.values("attempt_seq")[:1])
    if versions is None:
        deciding_seq = newest_any
    else:
        compatible = {lookup: _deeper(value) for lookup, value in versions.items()}
        newest_compatible = Subquery(attempts.filter(**compatible).values("attempt_seq")[:1])
        deciding_seq = Coalesce(newest_compatible, newest_any)
    latest_seq = (
        Submission.objects.filter(student_id=_deeper(student_id), task_id=_deeper(task_id))
        .order_by("-submission_seq")
        .values("submission_seq")[:1]
    )
    return (
        Submission.objects.filter(student_id=student_id, task_id=task_id, submission_seq=Subquery(latest_seq))
        # Both conditions in one filter() call share one LEFT OUTER JOIN.
        .filter(Q(attempts__attempt_seq=deciding_seq) | Q(attempts__isnull=True))
        .values(*_ROW_FIELDS.values())
        .order_by("pk")[:1]
    )


# The hot path runs the selection through SQL compiled once per process from
# the queryset above (tutor.db.prepared): the ORM's build and compile cost 25x
# the database's work. Versions are parameters, so rubric bumps and setting
# changes need no recompilation.
LATEST_ROW = PreparedQuery(
    lambda student_id, task_id, rubric_version, rubric_hash, prompt_version, engine_version: (
        latest_row_queryset(
            student_id=student_id,
            task_id=task_id,
            versions={
                "rubric_version": rubric_version,
                "rubric_hash": rubric_hash,
                "prompt_version": prompt_version,
                "engine_version": engine_version,
            },
        )
    ),
    student_id="int",
    task_id="uuid",
    rubric_version="str",
    rubric_hash="str",
    prompt_version="str",
    engine_version="str",
)
LATEST_ROW_WITHOUT_RUBRIC = PreparedQuery(
    lambda student_id, task_id: latest_row_queryset(student_id=student_id, task_id=task_id, versions=None),
    student_id="int",
    task_id="uuid",
)


def _latest_row(student, task: Task, versions: Versions | None) -> dict[str, Any] | None:
    student_id = getattr(student, "pk", student)  # a user or a user id, as the ORM takes either
    if versions is None:
        row = LATEST_ROW_WITHOUT_RUBRIC.first(student_id=student_id, task_id=task.pk)
    else:
        row = LATEST_ROW.first(student_id=student_id, task_id=task.pk, **versions.compatible_filter())
    if row is None:
        return None
    return {name: row[lookup] for name, lookup in _ROW_FIELDS.items()}


def _compatible(row: dict[str, Any], versions: Versions | None) -> bool:
    return versions is not None and all(
        row[key] == value for key, value in versions.compatible_filter().items()
    )


def select_feedback(student, task: Task) -> FeedbackSelection:
    """The feedback state of ``student``'s latest submission for ``task`` (SPEC §3).

    Rule: the latest submission is the one with the highest ``submission_seq``
    for (student, task); its newest compatible attempt is the one with the
    highest ``attempt_seq`` whose rubric version and hash, prompt version and
    engine version equal the task's current ones (the model is provenance and
    never makes an attempt stale). Only sequence numbers decide order, never
    timestamps, so an older attempt finishing late never overrides a newer
    one, and a newer attempt still queued or running is ``pending`` even when
    an older one completed. Another student's or another task's submissions
    are never read.

    States: ``none`` (no submission), ``pending`` (no attempt, or the newest
    compatible one is queued/running), ``stale_rules`` (attempts, none
    compatible), ``unavailable``, ``invalid`` (``attempt_invalid`` or
    ``contract_violation``), ``passed`` (completed with overall PASS) and
    ``current`` (completed with FAIL or NEED_REVIEW).

    Reads one SQL statement whatever the history length; ``task`` must come
    with ``current_rubric`` loaded (``select_related("current_rubric")``).
    """
    try:
        versions = current_versions(task)
    except NoRubric:
        versions = None  # no current rules: nothing is compatible
    return selection_from_row(_latest_row(student, task, versions), versions)


def latest_row_subquery(*, student_id, task, rubric, prompt_version, engine_version) -> JSONRows:
    """The row ``select_feedback`` reads, as a column of the task's own
    statement (``tutor.db.jsonrows``): the latest submission of ``student_id``
    for ``task`` (a reference to the outer statement's task id), joined with
    its deciding attempt under the task's current rubric (``rubric``: the
    outer path to it, e.g. ``"current_rubric__"``) and the given prompt and
    engine versions. A task without a rubric compares with NULL: no attempt
    is compatible, as ``select_feedback`` has it. Read it with
    ``folded_selection``."""
    versions = {
        "rubric_version": OuterRef(f"{rubric}version"),
        "rubric_hash": OuterRef(f"{rubric}content_hash"),
        "prompt_version": prompt_version,
        "engine_version": engine_version,
    }
    return JSONRows(latest_row_queryset(student_id=student_id, task_id=task, versions=versions))


# The columns of the selection's row, read once: how ``latest_row_rows`` decodes them.
_LATEST_ROW_COLUMNS = JSONRows(Submission.objects.values(*_ROW_FIELDS.values()))


def latest_row_rows(column: str | None) -> list[dict]:
    """The rows a ``latest_row_subquery`` column carries, as ``LATEST_ROW`` returns them."""
    return _LATEST_ROW_COLUMNS.decode(column)


def folded_selection(rows: list[dict], task: Task) -> FeedbackSelection:
    """``select_feedback`` from the rows of ``latest_row_subquery`` read with ``task``."""
    try:
        versions = current_versions(task)
    except NoRubric:
        versions = None
    row = {name: rows[0][lookup] for name, lookup in _ROW_FIELDS.items()} if rows else None
    return selection_from_row(row, versions)


def selection_from_row(row: dict[str, Any] | None, versions: Versions | None) -> FeedbackSelection:
    """The feedback state of the row ``latest_row_queryset`` selects (SPEC §3;
    the rules: ``select_feedback``)."""
    from feedback.block import feedback_limits  # the block module holds every budget number

    if row is None:
        return FeedbackSelection(state=FeedbackState.NONE)

    submission = {
        "submission_id": row["submission_id"],
        "submission_seq": row["submission_seq"],
        "snapshot_hash": row["snapshot_hash"],
    }
    if row["attempt_id"] is None:
        return FeedbackSelection(state=FeedbackState.PENDING, **submission)
    if not _compatible(row, versions):
        return FeedbackSelection(state=FeedbackState.STALE_RULES, **submission)

    attempt = {
        "attempt_id": row["attempt_id"],
        "attempt_seq": row["attempt_seq"],
        "attempt_status": row["attempt_status"],
        "rubric_version": row["rubric_version"],
        "prompt_version": row["prompt_version"],
        "engine_version": row["engine_version"],
        "model": row["model"],
        "reused": row["reused_from_id"] is not None,
    }
    status = row["attempt_status"]
    if status in (AttemptStatus.QUEUED, AttemptStatus.RUNNING):
        return FeedbackSelection(state=FeedbackState.PENDING, **submission, **attempt)
    # A terminal attempt never changes (SPEC §2): its rendering is kept under
    # the records it names and the rubric whose hidden criteria it hides.
    memo_key = (row["submission_id"], row["attempt_id"], versions.rubric.pk, versions.rubric_hash)
    if status == AttemptStatus.UNAVAILABLE:
        return FeedbackSelection(
            state=FeedbackState.UNAVAILABLE, **submission, **attempt, memo_key=(status, *memo_key)
        )
    if status == AttemptStatus.INVALID:
        return FeedbackSelection(
            state=FeedbackState.INVALID,
            reason=InvalidReason.ATTEMPT_INVALID,
            **submission,
            **attempt,
            memo_key=(status, *memo_key),
        )
    if status != AttemptStatus.COMPLETED:
        error, result = f"status {status!r} is unknown", None
    else:
        rubric_id_chars = feedback_limits().rubric_id_chars
        error, result = _GRADED.get_or_make(
            (*memo_key, rubric_id_chars),
            lambda: _graded(row["result"], versions.rubric.criteria, rubric_id_chars),
        )
    if error is not None:
        log.warning("review attempt %s breaks the result contract: %s", row["attempt_id"], error)
        return FeedbackSelection(
            state=FeedbackState.INVALID, reason=InvalidReason.CONTRACT_VIOLATION, **submission, **attempt
        )
    state = FeedbackState.PASSED if result["overall"] == Verdict.PASS else FeedbackState.CURRENT
    return FeedbackSelection(
        state=state,
        review_status=result["overall"],
        result=result,
        **submission,
        **attempt,
        memo_key=(status, *memo_key),
    )


# A completed attempt's contract check and its result as a student sees it,
# per (submission, attempt, rubric row and hash, rubric id limit): the tutor
# reads a student's latest attempt on every turn until the next review.
GRADED_ATTEMPTS = 4096
_GRADED = Memo("graded attempts", GRADED_ATTEMPTS)


def _graded(result, criteria: list[dict], rubric_id_chars: int) -> tuple[str | None, dict | None]:
    """The contract error of a completed attempt's ``result`` (None when it
    holds), and the result as the tutor may see it: what the student sees --
    a hidden check's reason, evidence and configured terms never enter the
    block (SPEC §9). A compatible attempt was made under the current rubric,
    so its criteria say which are hidden."""
    error = result_contract_error(result, rubric_id_chars=rubric_id_chars)
    if error is not None:
        return error, None
    return None, student_result(result, criteria)


def visible_submissions(user):
    """Own submissions, those a service account sent for a course it still
    serves, and staff's courses' (SPEC §7)."""
    qs = Submission.objects.select_related("student", "task", "task__current_rubric")
    if user.is_superuser:
        return qs
    serving = access.course_ids(user, (Enrollment.Role.SERVICE,))
    return qs.filter(
        Q(student=user)
        | Q(submitted_by=user, task__course_id__in=serving)
        | Q(task__course_id__in=access.staff_course_ids(user))
    )


# --- the staff work queue (SPEC §8) ---------------------------------------------


class Decision(models.TextChoices):
    """Why a review waits for staff (SPEC §8: feedback states of §3 that need a person)."""

    NEED_REVIEW = "need_review"  # completed, overall NEED_REVIEW
    # completed, and a criterion NEED_REVIEW for a reason staff can settle
    # whatever the overall (feedback.results.criteria_awaiting_staff)
    AWAITING_STAFF = "awaiting_staff"
    INVALID = "invalid"
    UNAVAILABLE = "unavailable"
    STALE_RULES = "stale_rules"
    # a model FAIL on a criterion flagged for low model-staff agreement
    LOW_AGREEMENT = "low_agreement"


def _is_newest_of_latest() -> Q:
    """The attempt is its submission's newest, and the submission is its
    student's latest for the task (no later submission names it ``previous``).

    As ``pk IN (one id per latest submission)``: the planner starts from the
    latest submissions (the unique index on ``previous``) and takes each one's
    newest attempt (``attempt_newest_idx``), instead of testing every attempt
    of the table (the review queue count at 100k attempts: 290-340 -> 80-95 ms
    on SQLite; tests/tutor/test_desk_scale.py seeds that table)."""
    newest = ReviewAttempt.objects.filter(submission=OuterRef("pk")).order_by("-attempt_seq").values("pk")[:1]
    latest = Submission.objects.filter(next__isnull=True).values(newest=Subquery(newest))
    return Q(pk__in=latest)


def _stale() -> Q:
    # A rubric version is a row of its own, so "same rubric version and hash"
    # is "same rubric row" (feedback.versions.Versions.compatible_filter).
    return (
        ~Q(rubric_id=F("submission__task__current_rubric_id"))
        | ~Q(prompt_version=settings.REVIEW_PROMPT_VERSION)
        | ~Q(engine_version=settings.REVIEW_ENGINE_VERSION)
    )


DECISION_CONDITIONS = {
    Decision.NEED_REVIEW: lambda: (
        Q(status=AttemptStatus.COMPLETED, result__overall="NEED_REVIEW") & ~_stale()
    ),
    Decision.AWAITING_STAFF: lambda: (
        Q(status=AttemptStatus.COMPLETED, awaiting_staff__isnull=False) & ~_stale()
    ),
    Decision.INVALID: lambda: Q(status=AttemptStatus.INVALID) & ~_stale(),
    Decision.UNAVAILABLE: lambda: Q(status=AttemptStatus.UNAVAILABLE) & ~_stale(),
    Decision.STALE_RULES: _stale,
    Decision.LOW_AGREEMENT: lambda: _model_fail_on_flagged(),
}


def _model_fail_on_flagged() -> Q:
    """A completed review in which the model FAILed a flagged criterion (one
    grouped query finds the flagged criteria; ``model_failed`` holds the ids)."""
    condition = Q(pk__in=[])
    for rubric_pk, rubric_id in flagged_criteria():
        condition |= Q(rubric_id=rubric_pk, model_failed__contains=json.dumps(rubric_id))
    return Q(status=AttemptStatus.COMPLETED) & condition


def attempts_needing_decision(qs, decision: str | None = None):
    """The attempts of ``qs`` that need a staff decision (SPEC §8): the newest
    attempt of each student's latest submission, when that review is
    NEED_REVIEW, has a criterion waiting for staff (whatever the overall),
    is ``invalid``, ``unavailable``, made under outdated rules, or has a
    model FAIL on a criterion flagged for low agreement.
    ``decision`` narrows to one reason. One statement, served by
    ``attempt_newest_idx`` and the unique index on ``previous``."""
    if decision is not None:
        return qs.filter(_is_newest_of_latest(), DECISION_CONDITIONS[Decision(decision)]())
    condition = Q()
    for make in DECISION_CONDITIONS.values():
        condition |= make()
    return qs.filter(_is_newest_of_latest(), condition)
