"""Who may see what (SPEC §7): students their own objects, staff their
courses, superusers everything. Every queryset of the API starts here."""

from __future__ import annotations

from django.db.models import QuerySet

from tutor.models import Course, Enrollment, Task

STAFF_ROLES = (Enrollment.Role.STAFF,)


def course_ids(user, roles: tuple[str, ...] | None = None) -> QuerySet:
    """Ids of the courses ``user`` is enrolled in (optionally in ``roles``)."""
    qs = Enrollment.objects.filter(user=user)
    if roles is not None:
        qs = qs.filter(role__in=roles)
    return qs.values("course_id")


def visible_courses(user) -> QuerySet[Course]:
    if user.is_superuser:
        return Course.objects.all()
    return Course.objects.filter(id__in=course_ids(user))


def visible_tasks(user) -> QuerySet[Task]:
    qs = Task.objects.select_related("course", "current_rubric")
    if user.is_superuser:
        return qs
    return qs.filter(course_id__in=course_ids(user))


def staff_course_ids(user) -> QuerySet:
    return course_ids(user, STAFF_ROLES)


def is_course_staff(user, course_id: int) -> bool:
    if user.is_superuser:
        return True
    return Enrollment.objects.filter(user=user, course_id=course_id, role=Enrollment.Role.STAFF).exists()


def role_in(user, course_id: int) -> str | None:
    return Enrollment.objects.filter(user=user, course_id=course_id).values_list("role", flat=True).first()


class AllCourses:
    """Stands for "every course" (a superuser's staff scope)."""

    def __contains__(self, course_id) -> bool:
        return True


class StaffCourses:
    """The ids of the courses a user is staff of, read on the first
    membership test and then kept for the request: most responses never ask
    (only hidden checks do), so most requests pay no query for it."""

    def __init__(self, user):
        self._user = user
        self._ids: frozenset | None = None

    def __contains__(self, course_id) -> bool:
        if self._ids is None:
            self._ids = frozenset(staff_course_ids(self._user).values_list("course_id", flat=True))
        return course_id in self._ids


def staff_courses_of(user):
    """A container of the course ids ``user`` is staff of; every course for a superuser."""
    return AllCourses() if user.is_superuser else StaffCourses(user)
