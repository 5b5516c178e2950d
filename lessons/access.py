"""Who may read and decide on lessons (SPEC §6, §7, §8).

- Course staff read and manage their courses' lessons, traces and skill
  candidates, and read global lessons (a global lesson is recalled into their
  courses, so they must be able to see why).
- Global lessons (no course) are managed by superusers only: no single
  course's staff may change what every course's students are told.
- Students never see lessons through the API (403), nor traces.
- Deltas may also come from a course's service account (its CI integration).
- An operator's command (actor None) may do everything.
"""

from __future__ import annotations

from django.db.models import QuerySet

from tutor import access as tutor_access
from tutor.kernel.errors import PermissionRefused
from tutor.models import Enrollment


def staff_course_ids(user) -> QuerySet:
    return tutor_access.staff_course_ids(user)


def is_lessons_staff(user) -> bool:
    """Superusers and anyone who is staff of at least one course."""
    if user.is_superuser:
        return True
    return Enrollment.objects.filter(user=user, role=Enrollment.Role.STAFF).exists()


def delta_course_ids(user) -> QuerySet:
    """Courses whose playbook ``user`` may send deltas for: staff or service."""
    return tutor_access.course_ids(user, (Enrollment.Role.STAFF, Enrollment.Role.SERVICE))


def may_send_deltas(user) -> bool:
    return user.is_superuser or delta_course_ids(user).exists()


def can_manage(actor, course_id) -> bool:
    if actor is None or actor.is_superuser:
        return True
    if course_id is None:
        return False
    return tutor_access.is_course_staff(actor, course_id)


def ensure_can_manage(actor, course_id) -> None:
    """Refuse (403) anyone who may not decide on a lesson of ``course_id``."""
    if not can_manage(actor, course_id):
        if course_id is None:
            raise PermissionRefused("only superusers manage global lessons")
        raise PermissionRefused("only staff of the lesson's course may do this")
