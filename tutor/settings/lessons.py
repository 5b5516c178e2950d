"""Lessons settings (SPEC §6; seed 003): recall weights and brakes, promotion,
quarantine and review."""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

from tutor.ops.env import env_int, env_number
from tutor.settings.base import CELERY_BEAT_SCHEDULE, SPECTACULAR_SETTINGS

# Recall: score = W_TAG*tag + W_SYMPTOM*symptom + W_DECAY*exp(-age_days/DECAY_DAYS),
# then the brakes floor -> top_k -> token budget; a stored trace keeps MAX_LINES lines.
LESSON_RECALL_W_TAG = env_number("LESSON_RECALL_W_TAG", 0.5)
LESSON_RECALL_W_SYMPTOM = env_number("LESSON_RECALL_W_SYMPTOM", 0.3)
LESSON_RECALL_W_DECAY = env_number("LESSON_RECALL_W_DECAY", 0.2)
LESSON_DECAY_DAYS = env_number("LESSON_DECAY_DAYS", 30, minimum=1)
LESSON_RECALL_FLOOR = env_number("LESSON_RECALL_FLOOR", 0.4)
LESSON_RECALL_TOP_K = env_int("LESSON_RECALL_TOP_K", 3)
LESSON_RECALL_BUDGET_TOKENS = env_int("LESSON_RECALL_BUDGET_TOKENS", 800)
LESSON_TRACE_MAX_LINES = env_int("LESSON_TRACE_MAX_LINES", 200, minimum=1)
LESSON_TRACE_FLOOR_LINES = env_int("LESSON_TRACE_FLOOR_LINES", 20, minimum=0)
LESSON_PROMOTE_HITS = env_int("LESSON_PROMOTE_HITS", 3, minimum=1)  # real uses before a skill candidate
LESSON_QUARANTINE_HARMFUL = env_int("LESSON_QUARANTINE_HARMFUL", 3, minimum=1)
# A global lesson is quarantined automatically only on harmful marks from this many
# courses (1: SPEC §6 as it is; raise it when course teams share global lessons).
LESSON_GLOBAL_QUARANTINE_COURSES = env_int("LESSON_GLOBAL_QUARANTINE_COURSES", 1, minimum=1)
LESSON_DUPLICATE_JACCARD = env_number("LESSON_DUPLICATE_JACCARD", 0.8)
LESSON_REVIEW_DAYS = env_int("LESSON_REVIEW_DAYS", 90, minimum=1)  # default review_by of a new lesson
if not 0 < LESSON_DUPLICATE_JACCARD <= 1:
    raise ImproperlyConfigured("LESSON_DUPLICATE_JACCARD must be in (0, 1]")
CELERY_BEAT_SCHEDULE["lessons-review-due"] = {"task": "lessons.tasks.report_review_due", "schedule": 86400.0}
SPECTACULAR_SETTINGS["ENUM_NAME_OVERRIDES"].update(
    {
        "LessonStatusEnum": "lessons.models.LessonStatus.choices",
        "LessonKindEnum": "lessons.models.LessonKind.choices",
        "LessonSourceEnum": "lessons.models.LessonSource.choices",
        "RejectReasonEnum": "lessons.models.RejectReason.choices",
        "RecallDecisionEnum": "lessons.recall.Decision.choices",
        "SkillCandidateStatusEnum": "lessons.models.SkillCandidateStatus.choices",
    }
)
