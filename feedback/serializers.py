from __future__ import annotations

import hashlib
import heapq
import hmac

from django.conf import settings
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from feedback.models import CiSource, ErrorCode, RegradeRequest, ReviewAttempt, Submission
from feedback.results import Basis, criteria_awaiting_staff
from feedback.services.regrades import REGRADE_REASON_MAX_CHARS
from feedback.visibility import CI_LOG_HIDDEN, hidden_criteria, reads_ci_log, student_result
from tutor.kernel.rubrics import CriterionKind, Verdict
from tutor.web.fields import StrictCharField

EVIDENCE_KEYS = {"report", "files", "ci", "head_sha", "repo_url"}
FILE_PATH_MAX_CHARS = 1024
LOG_TAIL_MAX_CHARS = 64 * 1024
VERDICT_REASON_MAX_CHARS = 2000
VERDICT_NEXT_STEP_MAX_CHARS = 2000


# Beyond these, unknown keys are counted on their parent, not listed one by one.
UNKNOWN_KEYS_LISTED = 20


def reject_unknown_keys(data: dict, allowed: set[str]) -> None:
    """A 400 naming each unknown key as its own field (``evidence.foo``): a
    typo such as ``reports`` must not be dropped silently. More than
    ``UNKNOWN_KEYS_LISTED`` are one error on the parent naming the first
    (a body of 100,000 keys is not answered with 100,000 errors)."""
    unknown = set(data) - allowed
    if not unknown:
        return
    allowed_text = ", ".join(sorted(allowed))
    if len(unknown) > UNKNOWN_KEYS_LISTED:
        first = ", ".join(heapq.nsmallest(3, map(str, unknown)))
        raise serializers.ValidationError(
            f"{len(unknown)} unknown keys (the first: {first}, …); allowed: {allowed_text}"
        )
    raise serializers.ValidationError(
        {key: [f"unknown key; allowed: {allowed_text}"] for key in sorted(map(str, unknown))}
    )


class CiSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["passed", "failed"])
    exit_code = serializers.IntegerField(
        required=False, allow_null=True, min_value=-(2**31), max_value=2**31 - 1
    )
    log_tail = StrictCharField(
        required=False, allow_blank=True, trim_whitespace=False, max_length=LOG_TAIL_MAX_CHARS
    )

    def to_internal_value(self, data):
        if isinstance(data, dict):
            reject_unknown_keys(data, {"status", "exit_code", "log_tail"})
        value = super().to_internal_value(data)
        return {
            "status": value["status"],
            "exit_code": value.get("exit_code"),
            "log_tail": value.get("log_tail", ""),
        }


class EvidenceSerializer(serializers.Serializer):
    """Evidence of SPEC §2; every key optional. Sizes are checked after the
    shape (feedback.evidence.check_evidence_limits → 413)."""

    # null means the same as a missing key (SPEC §2: "", {}, null).
    report = StrictCharField(required=False, allow_blank=True, allow_null=True, trim_whitespace=False)
    files = serializers.DictField(
        child=StrictCharField(allow_blank=True, trim_whitespace=False), required=False, allow_null=True
    )
    ci = CiSerializer(required=False, allow_null=True)
    head_sha = StrictCharField(required=False, allow_blank=True, allow_null=True, max_length=64)
    repo_url = StrictCharField(required=False, allow_blank=True, allow_null=True, max_length=2000)

    def to_internal_value(self, data):
        if isinstance(data, dict):
            reject_unknown_keys(data, EVIDENCE_KEYS)
        return super().to_internal_value(data)

    def validate_files(self, files):
        if files is None:
            return {}
        if len(files) > settings.EVIDENCE_MAX_FILES:
            # Counted again as a size limit (413) by the service; refusing here
            # would turn an oversize request into a 400.
            return files
        for path in files:
            if not path or len(path) > FILE_PATH_MAX_CHARS or "\x00" in path:
                raise serializers.ValidationError(
                    f"file paths must be 1-{FILE_PATH_MAX_CHARS} characters without NUL"
                )
        return files


class SubmissionCreateSerializer(serializers.Serializer):
    task = serializers.UUIDField()
    student = StrictCharField(required=False, max_length=150)
    evidence = EvidenceSerializer()

    def validate_evidence(self, evidence):
        """Evidence with nothing to review -- no report text, no file, no CI
        result -- is refused (SPEC §7, turn 3): stored, it would replace the
        student's latest review with one of nothing."""
        if (
            not (evidence.get("report") or "").strip()
            and not evidence.get("files")
            and not evidence.get("ci")
        ):
            raise serializers.ValidationError(
                "the evidence is empty: send a report, at least one file or a CI result", code="empty"
            )
        return evidence


# --- output shapes (SPEC §2, §7); they type the OpenAPI document -------------------


class CriterionResultSerializer(serializers.Serializer):
    rubric_id = serializers.CharField()
    criterion = serializers.CharField(allow_blank=True)
    kind = serializers.ChoiceField(choices=CriterionKind.choices)
    status = serializers.ChoiceField(choices=Verdict.choices)
    reason = serializers.CharField(allow_blank=True)
    evidence = serializers.CharField(allow_blank=True)
    basis = serializers.ChoiceField(choices=Basis.choices)


class ReviewResultSerializer(serializers.Serializer):
    """A review's result. ``overall`` is null in the partial record of an
    ``unavailable`` attempt, whose criteria are the machine checks it ran."""

    overall = serializers.ChoiceField(choices=Verdict.choices, allow_null=True)
    criteria = CriterionResultSerializer(many=True)
    next_step = serializers.CharField(allow_blank=True)


class CiResultSerializer(serializers.Serializer):
    status = serializers.ChoiceField(choices=["passed", "failed"])
    exit_code = serializers.IntegerField(allow_null=True)
    log_tail = serializers.CharField(allow_blank=True)


class EvidenceSnapshotSerializer(serializers.Serializer):
    """The evidence as stored: every key present (SPEC §2 normalisation)."""

    report = serializers.CharField(allow_blank=True)
    files = serializers.DictField(child=serializers.CharField(allow_blank=True))
    ci = CiResultSerializer(allow_null=True)
    head_sha = serializers.CharField(allow_blank=True)
    repo_url = serializers.CharField(allow_blank=True)


class EvidenceFileSizeSerializer(serializers.Serializer):
    path = serializers.CharField()
    bytes = serializers.IntegerField()


class EvidenceSummarySerializer(serializers.Serializer):
    """Sizes, file names and the CI result of a submission's evidence
    (``feedback.evidence.evidence_summary``)."""

    report_chars = serializers.IntegerField()
    file_count = serializers.IntegerField()
    files = EvidenceFileSizeSerializer(many=True)
    total_bytes = serializers.IntegerField()
    ci_status = serializers.ChoiceField(choices=["passed", "failed"], allow_null=True)
    ci_exit_code = serializers.IntegerField(allow_null=True)


class AttemptSerializer(serializers.ModelSerializer):
    submission = serializers.UUIDField(source="submission_id", read_only=True)
    reused_from = serializers.UUIDField(source="reused_from_id", read_only=True, allow_null=True)
    # Declared: DRF drops allow_blank from a read-only model field, and the
    # schema would then refuse the "" that every attempt without an error has.
    error_code = serializers.ChoiceField(choices=ErrorCode.choices, allow_blank=True, read_only=True)
    result = serializers.SerializerMethodField()
    rubric_hash = serializers.SerializerMethodField()
    awaiting_staff = serializers.SerializerMethodField(
        help_text="Rubric ids NEED_REVIEW for a reason staff settle (no automatic check, semantic review "
        "not configured, the model could not decide): the student waits for a teacher; the staff queue "
        "lists the review (the same rule)."
    )

    class Meta:
        model = ReviewAttempt
        fields = [
            "id",
            "submission",
            "attempt_seq",
            "kind",
            "status",
            "rubric_version",
            "rubric_hash",
            "prompt_version",
            "engine_version",
            "model",
            "result",
            "reused_from",
            "error_code",
            "generation_attempts",
            "awaiting_staff",
            "created_at",
            "finished_at",
        ]
        read_only_fields = fields

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_awaiting_staff(self, attempt: ReviewAttempt) -> list[str]:
        return criteria_awaiting_staff(attempt.result) if attempt.status == "completed" else []

    def _sees_hidden(self, attempt: ReviewAttempt) -> bool:
        return attempt.submission.task.course_id in self.context.get("staff_courses", ())

    @extend_schema_field(serializers.CharField())
    def get_rubric_hash(self, attempt: ReviewAttempt) -> str:
        """The content hash of the rubric version. It covers hidden checks'
        configuration, which a student could recover by hashing guesses
        (SPEC §9): students get a keyed digest of it instead -- as stable an
        identity of the version, and nothing to test guesses against."""
        if not hidden_criteria(attempt.rubric.criteria) or self._sees_hidden(attempt):
            return attempt.rubric_hash
        digest = hmac.new(settings.SECRET_KEY.encode(), attempt.rubric_hash.encode(), hashlib.sha256)
        return digest.hexdigest()

    @extend_schema_field(ReviewResultSerializer(allow_null=True))
    def get_result(self, attempt: ReviewAttempt):
        # Hidden checks keep their reasons for staff of the course (SPEC §9);
        # without a known viewer, nothing hidden is shown.
        shown = student_result(attempt.result, attempt.rubric.criteria)
        if shown is attempt.result or self._sees_hidden(attempt):
            return attempt.result
        return shown


class RegradeRequestSerializer(serializers.ModelSerializer):
    class Meta:
        model = RegradeRequest
        fields = ["id", "rubric_id", "reason", "status", "response", "created_at", "decided_at"]
        read_only_fields = fields


class RegradeCreateSerializer(serializers.Serializer):
    rubric_id = StrictCharField(max_length=64)
    reason = StrictCharField(max_length=REGRADE_REASON_MAX_CHARS)


class SubmissionSummarySerializer(serializers.ModelSerializer):
    """A submission in a list: its evidence as a summary only (a list of 50
    would otherwise carry up to 50 MiB of evidence)."""

    task = serializers.UUIDField(source="task_id", read_only=True)
    student = serializers.CharField(source="student.username", read_only=True)
    previous = serializers.UUIDField(source="previous_id", read_only=True, allow_null=True)
    number = serializers.IntegerField(
        read_only=True,
        allow_null=True,
        help_text="The student's Nth submission of this task (what students are shown); "
        "submission_seq is the system-wide order.",
    )
    evidence_summary = EvidenceSummarySerializer(read_only=True)
    attempts = AttemptSerializer(many=True, read_only=True)
    regrade_requests = RegradeRequestSerializer(many=True, read_only=True)

    class Meta:
        model = Submission
        fields = [
            "id",
            "task",
            "student",
            "submission_seq",
            "number",
            "previous",
            "snapshot_hash",
            "ci_source",
            "created_at",
            "evidence_summary",
            "attempts",
            "regrade_requests",
        ]
        read_only_fields = fields


class SubmissionSerializer(SubmissionSummarySerializer):
    """One submission: the summary's fields and the evidence as submitted."""

    evidence = EvidenceSnapshotSerializer(read_only=True)

    class Meta(SubmissionSummarySerializer.Meta):
        fields = [
            *(
                f
                for f in SubmissionSummarySerializer.Meta.fields
                if f not in ("attempts", "regrade_requests")
            ),
            "evidence",
            "attempts",
            "regrade_requests",
        ]
        read_only_fields = fields

    def to_representation(self, submission: Submission):
        data = super().to_representation(submission)
        ci = data.get("evidence", {}).get("ci")
        # A CI log the course's service reported is a hidden check's output
        # when a hidden criterion reads it (SPEC §9); a student's own claim
        # is what they sent. Staff of the course see it.
        if (
            ci
            and ci.get("log_tail")
            and submission.ci_source == CiSource.SERVICE
            and submission.task.current_rubric_id is not None
            and any(
                reads_ci_log(c) for c in hidden_criteria(submission.task.current_rubric.criteria).values()
            )
            and submission.task.course_id not in self.context.get("staff_courses", ())
        ):
            data["evidence"]["ci"] = {**ci, "log_tail": CI_LOG_HIDDEN}
        return data


class ReviewRequestSerializer(serializers.Serializer):
    force = serializers.BooleanField(default=False)


class VerdictItemSerializer(serializers.Serializer):
    rubric_id = StrictCharField(max_length=64)
    status = serializers.ChoiceField(choices=Verdict.choices)
    reason = StrictCharField(max_length=VERDICT_REASON_MAX_CHARS)


class VerdictSerializer(serializers.Serializer):
    criteria = VerdictItemSerializer(many=True, allow_empty=False, max_length=200)
    # SPEC §2: the staff member's own next step; without it, the earlier one is
    # kept only while it still names a criterion that is not PASS.
    next_step = StrictCharField(required=False, allow_blank=True, max_length=VERDICT_NEXT_STEP_MAX_CHARS)

    def validate_criteria(self, criteria):
        seen = set()
        for i, item in enumerate(criteria):
            if item["rubric_id"] in seen:
                raise serializers.ValidationError(f"criteria[{i}]: {item['rubric_id']!r} is given twice")
            seen.add(item["rubric_id"])
        return criteria


# --- review agreement (SPEC §7): typed for the schema ---------------------------


class ConfusionRowSerializer(serializers.Serializer):
    PASS = serializers.IntegerField()
    FAIL = serializers.IntegerField()
    NEED_REVIEW = serializers.IntegerField()


class ConfusionSerializer(serializers.Serializer):
    """Rows: the machine's status; columns: staff's."""

    PASS = ConfusionRowSerializer()
    FAIL = ConfusionRowSerializer()
    NEED_REVIEW = ConfusionRowSerializer()


class DisagreementSerializer(serializers.Serializer):
    submission = serializers.UUIDField()
    staff_attempt = serializers.UUIDField()
    machine_basis = serializers.CharField()
    machine_status = serializers.CharField()
    staff_status = serializers.CharField()
    created_at = serializers.DateTimeField()


class CriterionAgreementSerializer(serializers.Serializer):
    rubric_id = serializers.CharField()
    criterion = serializers.CharField()
    verdicts = serializers.IntegerField()
    agreements = serializers.IntegerField()
    agreement_rate = serializers.FloatField(allow_null=True)
    model_verdicts = serializers.IntegerField()
    model_agreement_rate = serializers.FloatField(allow_null=True)
    by_basis = serializers.DictField(child=serializers.IntegerField())
    confusion = ConfusionSerializer()
    flagged = serializers.BooleanField()
    disagreements = DisagreementSerializer(many=True)


class RubricAgreementSerializer(serializers.Serializer):
    rubric_version = serializers.CharField()
    current = serializers.BooleanField()
    outdated = serializers.BooleanField()
    criteria = CriterionAgreementSerializer(many=True)


class ReviewAgreementSerializer(serializers.Serializer):
    task = serializers.UUIDField()
    floor = serializers.FloatField()
    min_verdicts = serializers.IntegerField()
    rubric_versions = RubricAgreementSerializer(many=True)
