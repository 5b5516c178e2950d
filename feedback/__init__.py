"""Submissions, immutable review attempts, the review pipeline and the feedback selector (SPEC §2, §3)."""
