"""The named settings of the corrections app (SPEC §5), with their defaults.

``tutor/settings/corrections.py`` reads each from the environment; code reads them here
(``tutor.kernel.conf.optional_setting``: kept until a setting changes), so a test's
``settings`` override takes effect at once.
"""

from __future__ import annotations

from tutor.kernel.conf import optional_setting

DEFAULTS = {
    # Routing (SPEC §5 table; seed 002 §4.1).
    "CORRECTIONS_USER_THRESHOLD": 0.7,  # factual below: session memory
    "CORRECTIONS_SYSTEM_THRESHOLD": 0.85,  # factual at or above: system facts (or a case)
    "CORRECTIONS_PROCESS_CASE_THRESHOLD": 0.8,  # process at or above: also a review case
    "CORRECTIONS_NEGATIVE_TTL_SECONDS": 3600,  # negative feedback: session memory for 1 h
    # Topics and injection.
    "CORRECTIONS_TOPIC_MATCH": 0.6,  # token Jaccard of "the same topic"
    "CORRECTIONS_INJECT_MIN_TOKENS": 2,  # topic tokens a message or task must contain
    "CORRECTIONS_INJECT_MAX_FACTS": 8,
    "CORRECTIONS_INJECT_MAX_PREFERENCES": 8,
    "CORRECTIONS_INJECT_MAX_MEMORIES": 8,
    "CORRECTIONS_INJECT_MAX_PROCESS_RULES": 8,
    "CORRECTIONS_ITEM_CHARS": 300,  # one injected item, cut
    "CORRECTIONS_QUERY_MAX_TOKENS": 400,  # tokens of the message and the task looked up
    # Facts.
    "CORRECTIONS_AUTO_VERIFY_SUPPORTERS": 0,  # 0: staff verify; N >= 2 students agreeing do (opt-in)
    "CORRECTIONS_FACT_TTL_DAYS": 30,  # unconfirmed for longer: not injected unless pinned
    # Review cases.
    "CORRECTIONS_CASE_LEASE_SECONDS": 8 * 3600,
    # Abuse limits.
    "CORRECTIONS_RATE_LIMIT": "20/hour",  # corrections per user
    # The optional model classifier (off: the rules decide alone).
    "CORRECTIONS_LLM_CLASSIFIER": False,
    # The detection outbox: a publish that failed is retried by the sweep this
    # long after the failure (the sweep's period too), at most a batch per run;
    # a message whose detection the sweep sent this many times is left to an operator.
    "CORRECTIONS_DETECTION_SWEEP_INTERVAL": 60,
    "CORRECTIONS_DETECTION_SWEEP_BATCH": 500,
    "CORRECTIONS_DETECTION_MAX_SENDS": 5,
}

_PERIODS = {"s": 1, "sec": 1, "second": 1, "m": 60, "min": 60, "minute": 60, "h": 3600, "hour": 3600}
_PERIODS.update({"d": 86400, "day": 86400})


def setting(name: str):
    return optional_setting(name, DEFAULTS[name])


def rate_limit() -> tuple[int, int]:
    """``CORRECTIONS_RATE_LIMIT`` as (count, seconds)."""
    count, period = str(setting("CORRECTIONS_RATE_LIMIT")).split("/")
    return int(count), _PERIODS[period]
