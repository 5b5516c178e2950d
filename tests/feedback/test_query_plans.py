"""Query plans the ingest path depends on (SPEC §10): the review-cache lookup
is served by the (student, task, snapshot_hash) index on both databases, so
a submission costs the same with 1k or 100k submissions stored."""

from __future__ import annotations

from feedback.services.intake import reusable_attempts
from feedback.versions import current_versions
from tests.factories import make_attempt, make_submission


def test_review_cache_lookup_uses_the_cache_index(task, student):
    submission = make_submission(student, task)
    make_attempt(submission)

    plan = reusable_attempts(submission, current_versions(task))[:1].explain()

    assert "submission_cache_idx" in plan, plan
