"""The feedback app's part of the data rights (SPEC §13; ``tutor.rights``).

Erasure: a student's regrade requests go; their submissions and review
attempts stay for the course -- the verdicts count in agreement statistics,
LTI scores and lessons -- with the student replaced by the pseudonym and
every text they wrote or that quotes their work removed: the evidence, each
criterion's reason and evidence, the next step, the error detail. A terminal
attempt takes that one UPDATE only under a scrub permit of this transaction
(migration 0009). Model calls of their reviews go with the tutor's part
(``ModelCall.student``); older rows without it, by the attempts' correlation ids.
"""

from __future__ import annotations

from feedback.evidence import evidence_summary, normalize_evidence
from feedback.models import AttemptScrubPermit, RegradeRequest, ReviewAttempt, Submission
from feedback.serializers import SubmissionSerializer
from feedback.services.retention import HISTORIES_MAX_BATCH, histories_past_retention, histories_purge
from tutor.models import Course, ModelCall, RetentionKind
from tutor.rights.registry import Ledger, RightsPart, Subject

ERASED_EVIDENCE = normalize_evidence({})


def scrubbed_result(result):
    """``result`` with its free text removed and its verdicts kept."""
    if not isinstance(result, dict):
        return result
    criteria = [
        {**c, "reason": "", "evidence": ""} if isinstance(c, dict) else c
        for c in result.get("criteria") or []
    ]
    return {**result, "criteria": criteria, "next_step": ""}


class FeedbackRights(RightsPart):
    name = "feedback"
    position = 40
    export_key = "submissions"
    rules = {
        "feedback.Submission": "pseudonymised: the student becomes the pseudonym, the evidence is emptied",
        "feedback.ReviewAttempt": "pseudonymised: verdicts kept, reasons, quoted evidence, next step and "
        "error detail removed (the one UPDATE the immutability trigger allows, under a scrub permit); "
        "a staff member's verdicts name the pseudonym as their author",
        "feedback.RegradeRequest": "deleted (the student's reason); staff decisions lose the decider's name",
        "feedback.CriterionAgreement": "kept: agreement statistics of the pseudonymised attempts",
        "feedback.Counter": "holds no person",
        "feedback.AttemptPurgePermit": "holds no person (exists only inside a purge)",
        "feedback.AttemptScrubPermit": "holds no person (exists only inside an erasure)",
    }

    def retention(self):
        return {RetentionKind.SUBMISSIONS: submissions_expire}

    def erase(self, subject: Subject, ledger: Ledger, *, dry_run: bool) -> None:
        user, pseudonym = subject.user, subject.pseudonym
        submissions = subject.in_scope(Submission.objects.filter(student=user), "task__course_id")
        submission_ids = list(submissions.values_list("pk", flat=True))
        ledger.delete(RegradeRequest.objects.filter(submission_id__in=submission_ids), dry_run=dry_run)
        # A staff member's decisions on others' requests stay, without their name.
        decided = subject.in_scope(
            RegradeRequest.objects.filter(decided_by=user), "submission__task__course_id"
        )
        attempts = ReviewAttempt.objects.filter(submission_id__in=submission_ids)
        requested = subject.in_scope(
            ReviewAttempt.objects.filter(requested_by=user).exclude(submission_id__in=submission_ids),
            "submission__task__course_id",
        )
        correlation_ids = set(attempts.exclude(correlation_id="").values_list("correlation_id", flat=True))
        legacy_calls = ModelCall.objects.filter(
            student__isnull=True, purpose=ModelCall.Purpose.REVIEW, correlation_id__in=correlation_ids
        )
        if dry_run:
            ledger.pseudonymise(RegradeRequest, decided.count())
            ledger.pseudonymise(ReviewAttempt, attempts.count() + requested.count())
            ledger.pseudonymise(Submission, len(submission_ids))
            ledger.delete(legacy_calls, dry_run=True)
            return
        ledger.pseudonymise(RegradeRequest, decided.update(decided_by=None, response=""))
        ledger.delete(legacy_calls, dry_run=False)
        scrub = list(attempts.values_list("pk", "result", "requested_by_id"))
        others = list(requested.values_list("pk", flat=True))
        AttemptScrubPermit.objects.bulk_create(
            [AttemptScrubPermit(attempt_id=pk) for pk in [row[0] for row in scrub] + others]
        )
        for pk, result, requested_by in scrub:
            ReviewAttempt.objects.filter(pk=pk).update(
                result=scrubbed_result(result),
                error_detail="",
                requested_by=pseudonym if requested_by == user.pk else requested_by,
            )
        ReviewAttempt.objects.filter(pk__in=others).update(requested_by=pseudonym)
        # A staff verdict names its author in ``model`` (migration 0011 permits this rename).
        ReviewAttempt.objects.filter(pk__in=others, model=f"staff:{user.get_username()}").update(
            model=f"staff:{pseudonym.get_username()}"
        )
        AttemptScrubPermit.objects.all().delete()
        ledger.pseudonymise(ReviewAttempt, len(scrub) + len(others))
        changed = Submission.objects.filter(pk__in=submission_ids).update(
            student=pseudonym,
            evidence=ERASED_EVIDENCE,
            evidence_summary=evidence_summary(ERASED_EVIDENCE),
        )
        # Also what a person sent on others' behalf (a course's CI account).
        subject.in_scope(Submission.objects.filter(submitted_by=user), "task__course_id").update(
            submitted_by=pseudonym
        )
        ledger.pseudonymise(Submission, changed)

    def _submissions(self, subject: Subject):
        return (
            Submission.objects.filter(student=subject.user)
            .select_related("task", "task__course", "task__current_rubric")
            .prefetch_related("attempts__rubric", "attempts__submission__task", "regrade_requests")
            .order_by("submission_seq")
        )

    def export(self, subject: Subject):
        # As the student reads them through the API: hidden checks stay hidden.
        return SubmissionSerializer(self._submissions(subject), many=True, context={"staff_courses": ()}).data

    def export_serializer(self):
        return SubmissionSerializer(many=True)

    def evidence_files(self, subject: Subject) -> list[tuple[str, str]]:
        files = []
        for submission in self._submissions(subject):
            base = f"submissions/{submission.submission_seq}"
            evidence = submission.evidence or {}
            if evidence.get("report"):
                files.append((f"{base}/report.txt", evidence["report"]))
            for path, text in sorted((evidence.get("files") or {}).items()):
                files.append((f"{base}/files/{path.lstrip('/')}", text))
            log = (evidence.get("ci") or {}).get("log_tail")
            if log and submission.ci_source == "student":
                files.append((f"{base}/ci-log.txt", log))
        return files


RETENTION_REASON = "retention: RETENTION_SUBMISSIONS_DAYS"


def submissions_expire(*, scope, before, limit, dry_run) -> int:
    """Whole histories whose newest submission is past retention go, in
    batches of at most ``limit`` histories of one course, each an audited
    ``attempts_purge`` (SPEC §2, as ``purge_submissions`` does), course after
    course until ``limit`` submissions went: a call that returns fewer has
    left nothing past its time in any course."""
    courses = scope.of(Course.objects.order_by("slug"), "pk")
    cap = min(limit or HISTORIES_MAX_BATCH, HISTORIES_MAX_BATCH)
    total = 0
    for course in courses:
        histories = histories_past_retention(course=course, before=before)
        if dry_run:
            total += sum(h.submissions for h in histories)
            continue
        while histories and total < (limit or HISTORIES_MAX_BATCH):
            batch, histories = histories[:cap], histories[cap:]
            total += histories_purge(
                course=course, histories=batch, before=before, reason=RETENTION_REASON
            ).submissions
        if total >= (limit or HISTORIES_MAX_BATCH):
            return total
    return total
