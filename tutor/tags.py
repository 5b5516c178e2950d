"""Kept so that old migrations import: the rules live in ``tutor.kernel.tags``."""

from tutor.kernel.tags import validate_tags  # noqa: F401
