"""Model-staff agreement per criterion (SPEC §7 ``review-agreement``, §8).

Every staff verdict on a criterion a machine had judged left a
``CriterionAgreement`` pair. These reads count the pairs per criterion and
rubric version: verdicts, agreement rate, the 3x3 confusion table and the
disagreeing submissions. A criterion is *flagged* when its model verdicts
agree with staff less often than ``REVIEW_AGREEMENT_FLOOR`` over at least
``REVIEW_AGREEMENT_MIN_VERDICTS`` verdicts, under the task's current rubric
(a rubric bump starts a new count; older counts stay as "outdated").
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.conf import settings
from django.db.models import Count, F, Q

from feedback.models import CriterionAgreement
from feedback.results import Basis
from tutor.kernel.rubrics import CriterionKind, Verdict
from tutor.models import Rubric, Task

# Staff verdicts on criteria judged this way count: a machine judged them.
MACHINE_BASES = (Basis.MODEL, Basis.CHECK, Basis.CI, Basis.SELF_REPORT)
DISAGREEMENTS_LISTED = 20  # links per criterion; the count covers every one


def is_flagged(model_verdicts: int, model_agreements: int) -> bool:
    """SPEC §8: model agreement below the floor over at least the minimum of verdicts."""
    if model_verdicts < settings.REVIEW_AGREEMENT_MIN_VERDICTS:
        return False
    return model_agreements / model_verdicts < settings.REVIEW_AGREEMENT_FLOOR


def _empty_confusion() -> dict[str, dict[str, int]]:
    return {machine: dict.fromkeys(Verdict.values, 0) for machine in Verdict.values}


@dataclass
class CriterionReport:
    rubric_id: str
    criterion: str
    verdicts: int = 0
    agreements: int = 0
    model_verdicts: int = 0
    model_agreements: int = 0
    by_basis: dict[str, int] = field(default_factory=dict)
    confusion: dict[str, dict[str, int]] = field(default_factory=_empty_confusion)
    disagreements: list[dict] = field(default_factory=list)

    @property
    def agreement_rate(self) -> float | None:
        return round(self.agreements / self.verdicts, 4) if self.verdicts else None

    @property
    def model_agreement_rate(self) -> float | None:
        return round(self.model_agreements / self.model_verdicts, 4) if self.model_verdicts else None

    @property
    def flagged(self) -> bool:
        return is_flagged(self.model_verdicts, self.model_agreements)

    def as_dict(self) -> dict:
        return {
            "rubric_id": self.rubric_id,
            "criterion": self.criterion,
            "verdicts": self.verdicts,
            "agreements": self.agreements,
            "agreement_rate": self.agreement_rate,
            "model_verdicts": self.model_verdicts,
            "model_agreement_rate": self.model_agreement_rate,
            "by_basis": self.by_basis,
            "confusion": self.confusion,
            "flagged": self.flagged,
            "disagreements": self.disagreements,
        }


def review_agreement(task: Task) -> list[dict]:
    """Per rubric version of ``task`` (newest first), every acceptance
    criterion with its counts -- zero when no staff verdict exists yet.
    Three queries whatever the number of verdicts: rubrics, grouped counts,
    and the listed disagreements."""
    rubrics = list(Rubric.objects.filter(task=task).order_by("-created_at", "-id"))
    counts = (
        CriterionAgreement.objects.filter(task=task)
        .values("rubric_id", "criterion", "machine_basis", "machine_status", "staff_status")
        .annotate(n=Count("id"))
    )
    reports: dict[tuple[int, str], CriterionReport] = {}
    for rubric in rubrics:
        for c in rubric.criteria:
            if c["kind"] == CriterionKind.ACCEPTANCE:
                reports[(rubric.pk, c["id"])] = CriterionReport(rubric_id=c["id"], criterion=c["text"])
    for row in counts:
        report = reports.get((row["rubric_id"], row["criterion"]))
        if report is None:  # a learning criterion: agreement is about acceptance
            continue
        n = row["n"]
        agree = row["machine_status"] == row["staff_status"]
        report.verdicts += n
        report.agreements += n if agree else 0
        report.by_basis[row["machine_basis"]] = report.by_basis.get(row["machine_basis"], 0) + n
        if row["machine_basis"] == Basis.MODEL:
            report.model_verdicts += n
            report.model_agreements += n if agree else 0
        if row["machine_status"] in Verdict.values and row["staff_status"] in Verdict.values:
            report.confusion[row["machine_status"]][row["staff_status"]] += n
    listed: dict[tuple[int, str], int] = defaultdict(int)
    for pair in (
        CriterionAgreement.objects.filter(task=task)
        .exclude(machine_status=F("staff_status"))
        .order_by("-id")
        .values(
            "rubric_id",
            "criterion",
            "machine_basis",
            "machine_status",
            "staff_status",
            "submission_id",
            "staff_attempt_id",
            "created_at",
        )
    ):
        key = (pair["rubric_id"], pair["criterion"])
        if key in reports and listed[key] < DISAGREEMENTS_LISTED:
            listed[key] += 1
            reports[key].disagreements.append(
                {
                    "submission": str(pair["submission_id"]),
                    "staff_attempt": str(pair["staff_attempt_id"]),
                    "machine_basis": pair["machine_basis"],
                    "machine_status": pair["machine_status"],
                    "staff_status": pair["staff_status"],
                    "created_at": pair["created_at"],
                }
            )
    versions = []
    for rubric in rubrics:
        current = rubric.pk == task.current_rubric_id
        versions.append(
            {
                "rubric_version": rubric.version,
                "current": current,
                "outdated": not current,
                "criteria": [
                    report.as_dict() for (rubric_pk, _), report in reports.items() if rubric_pk == rubric.pk
                ],
            }
        )
    return versions


def flagged_criteria() -> list[tuple[int, str]]:
    """(rubric pk, rubric id) of every flagged criterion under its task's
    current rubric, across all tasks: one grouped query."""
    rows = (
        CriterionAgreement.objects.filter(machine_basis=Basis.MODEL, rubric_id=F("task__current_rubric_id"))
        .values("rubric_id", "criterion")
        .annotate(n=Count("id"), agree=Count("id", filter=Q(machine_status=F("staff_status"))))
    )
    return [(row["rubric_id"], row["criterion"]) for row in rows if is_flagged(row["n"], row["agree"])]
