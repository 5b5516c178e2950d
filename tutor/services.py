"""Writes for course membership and API tokens (SPEC §1 ``enroll``)."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.db import transaction
from rest_framework.authtoken.models import Token

from tutor.audit import audit_record
from tutor.kernel.errors import DomainError
from tutor.models import AuditEvent, Course, Enrollment

COURSE_STAFF_GROUP = "Course staff"
# Admin models course staff may open; querysets are still scoped to their courses.
STAFF_VIEW_MODELS = {
    "tutor": ["course", "task", "rubric", "enrollment", "modelcall", "auditevent"],
    "feedback": ["submission", "reviewattempt"],
}


def register_staff_view_models(app_label: str, models: list[str]) -> None:
    """Let course staff open an app's admin models (called from AppConfig.ready);
    the admin classes scope every queryset to the staff member's courses."""
    STAFF_VIEW_MODELS.setdefault(app_label, [])
    for name in models:
        if name not in STAFF_VIEW_MODELS[app_label]:
            STAFF_VIEW_MODELS[app_label].append(name)


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


class EnrollError(DomainError):
    pass


def sync_staff_flag(user) -> None:
    """Admin access follows staff enrolments: a staff member who is no longer
    staff of any course loses ``is_staff`` and the course-staff group
    (superusers keep theirs). Called when a staff enrolment starts or ends."""
    is_staff_somewhere = Enrollment.objects.filter(user=user, role=Enrollment.Role.STAFF).exists()
    if is_staff_somewhere:
        if not user.is_staff:
            user.is_staff = True
            user.save(update_fields=["is_staff"])
        user.groups.add(course_staff_group())
    elif not user.is_superuser and user.is_staff:
        user.is_staff = False
        user.save(update_fields=["is_staff"])
        user.groups.remove(*Group.objects.filter(name=COURSE_STAFF_GROUP))


def enrollment_set(*, course: Course, username: str, role: str, create: bool, actor=None) -> tuple:
    """Enrol ``username`` in ``course`` with ``role`` and return (user, token).

    Staff get ``is_staff`` for the admin but never ``is_superuser`` (SPEC §1);
    a user has one role per course, and enrolling again changes it. A new
    enrolment or a changed role is audited as ``enrollment_changed``.
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
        enrollment = Enrollment.objects.filter(user=user, course=course).first()
        before = enrollment.role if enrollment is not None else ""
        if enrollment is None:
            enrollment = Enrollment.objects.create(user=user, course=course, role=role)
        elif enrollment.role != role:
            enrollment.role = role
            enrollment.save(update_fields=["role"])
        if before != role:
            audit_record(
                actor=actor,
                event=AuditEvent.Event.ENROLLMENT_CHANGED,
                target=enrollment,
                course=course,
                from_state=before,
                to_state=role,
                extra={"username": user.get_username()},
            )
        if Enrollment.Role.STAFF in (before, role):
            sync_staff_flag(user)
        token, _ = Token.objects.get_or_create(user=user)
    return user, token


def enrollment_remove(*, course: Course, user, actor=None, reason: str = "") -> bool:
    """End ``user``'s enrolment in ``course``; their submissions and sessions
    stay. Returns False when there was none."""
    with transaction.atomic():
        enrollment = Enrollment.objects.filter(user=user, course=course).first()
        if enrollment is None:
            return False
        audit_record(
            actor=actor,
            event=AuditEvent.Event.ENROLLMENT_CHANGED,
            target=enrollment,
            course=course,
            from_state=enrollment.role,
            to_state="",
            reason=reason,
            extra={"username": user.get_username()},
        )
        enrollment.delete()
        if enrollment.role == Enrollment.Role.STAFF:
            sync_staff_flag(user)
    return True
