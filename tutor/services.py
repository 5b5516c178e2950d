"""Writes for course membership and API tokens (SPEC §1 ``enroll``)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import transaction
from rest_framework.authtoken.models import Token

from tutor.models import Course, Enrollment

COURSE_STAFF_GROUP = "Course staff"
# Admin models course staff may open; querysets are still scoped to their courses.
STAFF_VIEW_MODELS = {
    "tutor": ["course", "task", "rubric", "enrollment"],
    "feedback": ["submission", "reviewattempt"],
}


def course_staff_group() -> Group:
    """The group that gives course staff admin access (view permissions)."""
    group, _ = Group.objects.get_or_create(name=COURSE_STAFF_GROUP)
    wanted = Permission.objects.none()
    for app_label, models in STAFF_VIEW_MODELS.items():
        wanted = wanted | Permission.objects.filter(
            content_type__app_label=app_label,
            content_type__model__in=models,
            codename__startswith="view_",
        )
    group.permissions.set(wanted)
    return group


class EnrollError(ValueError):
    pass


def enrollment_set(*, course: Course, username: str, role: str, create: bool) -> tuple:
    """Enrol ``username`` in ``course`` with ``role`` and return (user, token).

    Staff get ``is_staff`` for the admin but never ``is_superuser`` (SPEC §1);
    a user has one role per course, and enrolling again changes it.
    """
    User = get_user_model()
    with transaction.atomic():
        user = User.objects.filter(username=username).first()
        if user is None:
            if not create:
                raise EnrollError(f"unknown user {username!r} (pass --create to create it)")
            user = User(username=username)
            user.set_unusable_password()
            user.save()
        Enrollment.objects.update_or_create(user=user, course=course, defaults={"role": role})
        if role == Enrollment.Role.STAFF:
            if not user.is_staff:
                user.is_staff = True
                user.save(update_fields=["is_staff"])
            user.groups.add(course_staff_group())
        token, _ = Token.objects.get_or_create(user=user)
    return user, token
