"""Kept so that old migrations import: the field lives in ``tutor.kernel.jsonfield``."""

from tutor.kernel.jsonfield import CompactJSONField  # noqa: F401
