"""The vocabulary of a rubric (SPEC §2, §3, §9), in one place.

Course files, review results, the feedback block, the model reviewer and the
API all speak of criterion kinds, verdict statuses and rubric ids; each of
them takes the words and the limits from here.
"""

from __future__ import annotations

from django.db import models

# SPEC §3: identifiers are never cut; a longer rubric id is refused in a course
# file and makes a stored review record invalid.
RUBRIC_ID_MAX_CHARS = 64


class CriterionKind(models.TextChoices):
    ACCEPTANCE = "acceptance"  # blocks a PASS
    LEARNING = "learning"  # taught, never blocks (SPEC §2)


class Visibility(models.TextChoices):
    VISIBLE = "visible"
    # SPEC §9: status and text reach students and the tutor; reason, evidence,
    # check configuration and output never do.
    HIDDEN = "hidden"


class Verdict(models.TextChoices):
    PASS = "PASS"
    FAIL = "FAIL"
    NEED_REVIEW = "NEED_REVIEW"


class CheckType(models.TextChoices):
    CI_PASSED = "ci_passed"
    FILE_EXISTS = "file_exists"
    CONTAINS = "contains"
    SEMANTIC = "semantic"


def is_hidden(criterion: dict) -> bool:
    return criterion.get("visibility") == Visibility.HIDDEN


def public_criteria(criteria: list[dict]) -> list[dict]:
    """The rubric as students see it (SPEC §7, §9): a hidden criterion keeps its
    id, kind and text but not its check configuration."""
    return [{**c, "check": None} if is_hidden(c) else c for c in criteria or []]
