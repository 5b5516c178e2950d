"""Corrections settings (SPEC §5): routing thresholds, topic matching,
injection budgets, fact TTL, case lease, the per-user rate limit and the
detection sweep; defaults and meanings in corrections/conf.py."""

from __future__ import annotations

import os

from django.core.exceptions import ImproperlyConfigured

from tutor.ops.env import env_bool, env_int, env_number, env_rate
from tutor.settings.base import CELERY_BEAT_SCHEDULE

CORRECTIONS_USER_THRESHOLD = env_number("CORRECTIONS_USER_THRESHOLD", 0.7)
CORRECTIONS_SYSTEM_THRESHOLD = env_number("CORRECTIONS_SYSTEM_THRESHOLD", 0.85)
CORRECTIONS_PROCESS_CASE_THRESHOLD = env_number("CORRECTIONS_PROCESS_CASE_THRESHOLD", 0.8)
CORRECTIONS_TOPIC_MATCH = env_number("CORRECTIONS_TOPIC_MATCH", 0.6)
for _name in (
    "CORRECTIONS_USER_THRESHOLD",
    "CORRECTIONS_SYSTEM_THRESHOLD",
    "CORRECTIONS_PROCESS_CASE_THRESHOLD",
    "CORRECTIONS_TOPIC_MATCH",
):
    if not 0 < globals()[_name] <= 1:
        raise ImproperlyConfigured(f"{_name} must be a number in (0, 1]; got {globals()[_name]}")
if not CORRECTIONS_USER_THRESHOLD <= CORRECTIONS_SYSTEM_THRESHOLD:
    raise ImproperlyConfigured("CORRECTIONS_USER_THRESHOLD must not exceed CORRECTIONS_SYSTEM_THRESHOLD")
CORRECTIONS_NEGATIVE_TTL_SECONDS = env_int("CORRECTIONS_NEGATIVE_TTL_SECONDS", 3600, minimum=1)
CORRECTIONS_INJECT_MIN_TOKENS = env_int("CORRECTIONS_INJECT_MIN_TOKENS", 2, minimum=1)
CORRECTIONS_INJECT_MAX_FACTS = env_int("CORRECTIONS_INJECT_MAX_FACTS", 8)
CORRECTIONS_INJECT_MAX_PREFERENCES = env_int("CORRECTIONS_INJECT_MAX_PREFERENCES", 8)
CORRECTIONS_INJECT_MAX_MEMORIES = env_int("CORRECTIONS_INJECT_MAX_MEMORIES", 8)
CORRECTIONS_INJECT_MAX_PROCESS_RULES = env_int("CORRECTIONS_INJECT_MAX_PROCESS_RULES", 8)
CORRECTIONS_ITEM_CHARS = env_int("CORRECTIONS_ITEM_CHARS", 300, minimum=20)
# 0: staff decide every course fact; N >= 2: N distinct students agreeing verify it (SPEC §5).
CORRECTIONS_AUTO_VERIFY_SUPPORTERS = env_int("CORRECTIONS_AUTO_VERIFY_SUPPORTERS", 0, minimum=0)
if CORRECTIONS_AUTO_VERIFY_SUPPORTERS == 1:
    raise ImproperlyConfigured(
        "CORRECTIONS_AUTO_VERIFY_SUPPORTERS must be 0 (off) or at least 2 (no student verifies a course "
        f"fact alone); got {os.environ.get('CORRECTIONS_AUTO_VERIFY_SUPPORTERS')!r}"
    )
CORRECTIONS_FACT_TTL_DAYS = env_int("CORRECTIONS_FACT_TTL_DAYS", 30, minimum=1)
CORRECTIONS_CASE_LEASE_SECONDS = env_int("CORRECTIONS_CASE_LEASE_SECONDS", 8 * 3600, minimum=1)
CORRECTIONS_RATE_LIMIT = env_rate("CORRECTIONS_RATE_LIMIT", "20/hour")
CORRECTIONS_LLM_CLASSIFIER = env_bool("CORRECTIONS_LLM_CLASSIFIER", False)
CELERY_BEAT_SCHEDULE["purge-expired-memory"] = {
    "task": "corrections.tasks.purge_expired_memory",
    "schedule": 3600.0,
}
CORRECTIONS_DETECTION_SWEEP_INTERVAL = env_int("CORRECTIONS_DETECTION_SWEEP_INTERVAL", 60, minimum=1)
CORRECTIONS_DETECTION_SWEEP_BATCH = env_int("CORRECTIONS_DETECTION_SWEEP_BATCH", 500, minimum=1)
CORRECTIONS_DETECTION_MAX_SENDS = env_int("CORRECTIONS_DETECTION_MAX_SENDS", 5, minimum=1)
# Detections still pending in the outbox (corrections.services.dispatch).
CELERY_BEAT_SCHEDULE["sweep-correction-detections"] = {
    "task": "corrections.tasks.sweep_detections",
    "schedule": float(CORRECTIONS_DETECTION_SWEEP_INTERVAL),
}
