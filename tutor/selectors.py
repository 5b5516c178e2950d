"""Reads of the course domain (SPEC §7); the tutor turn's own reads are in
``tutor.chat.selectors``."""

from __future__ import annotations

from tutor.models import Enrollment


def user_enrollments(user) -> list[Enrollment]:
    """The user's enrolments with their courses, by course slug (one query,
    whatever the number of courses): who the student client says you are."""
    return list(Enrollment.objects.filter(user=user).select_related("course").order_by("course__slug"))
