"""Reads of the course domain (SPEC §7); the tutor turn's own reads are in
``tutor.chat.selectors``."""

from __future__ import annotations

from django.db.models import OuterRef, Subquery

from tutor.models import Enrollment, NoticeAcknowledgement


def user_enrollments(user) -> list[Enrollment]:
    """The user's enrolments with their courses, by course slug, each with the
    AI notice version the user last acknowledged there (``ai_notice_acknowledged``;
    SPEC §13) -- one query, whatever the number of courses: who the student
    client says you are."""
    latest = NoticeAcknowledgement.objects.filter(user_id=user.pk, course_id=OuterRef("course_id")).order_by(
        "-acknowledged_at", "-id"
    )
    return list(
        Enrollment.objects.filter(user=user)
        .select_related("course")
        .annotate(ai_notice_acknowledged=Subquery(latest.values("version")[:1]))
        .order_by("course__slug")
    )
