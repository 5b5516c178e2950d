"""Erasure from the admin (SPEC §13): an action on enrolments. Course staff
erase a student's data of their own course; superusers also erase a person
entirely. Each shows the plan (a dry run, table by table) first and runs only
when confirmed; each erasure is one audited request."""

from __future__ import annotations

from django.contrib import admin, messages
from django.template.response import TemplateResponse

from tutor import access
from tutor.kernel.errors import DomainError
from tutor.models import Enrollment
from tutor.rights.erasure import student_erase


class ErasureActions:
    """Mixed into the enrolment admin."""

    def has_erase_permission(self, request) -> bool:
        return request.user.is_superuser or access.staff_course_ids(request.user).exists()

    def has_erase_person_permission(self, request) -> bool:
        return request.user.is_superuser

    @admin.action(description="Erase the selected students' data of this course…", permissions=["erase"])
    def erase_course_data(self, request, queryset):
        rows = list(queryset.filter(role=Enrollment.Role.STUDENT).select_related("user", "course"))
        return self._erase(request, rows, "erase_course_data", whole=False)

    @admin.action(
        description="Erase the selected people entirely (every course, the account)…",
        permissions=["erase_person"],
    )
    def erase_person(self, request, queryset):
        rows = list(queryset.select_related("user", "course"))
        unique = {row.user_id: row for row in rows}
        return self._erase(request, list(unique.values()), "erase_person", whole=True)

    def _erase(self, request, rows, action: str, *, whole: bool):
        if not rows:
            self.message_user(request, "Nothing to erase: select students' enrolments.", messages.WARNING)
            return None
        if "apply" in request.POST:
            for row in rows:
                name = row.user.get_username()
                try:
                    report = student_erase(
                        user=row.user, course=None if whole else row.course, actor=request.user
                    )
                except DomainError as exc:
                    self.message_user(request, f"{name}: {exc.public_message()}", messages.ERROR)
                    continue
                where = "entirely" if whole else f"from {row.course.slug}"
                if report.residue:
                    left = "; ".join(hit.line() for hit in report.residue[:10])
                    self.message_user(
                        request,
                        f"{name} erased {where} as {report.pseudonym}, but data is left: {left}",
                        messages.ERROR,
                    )
                else:
                    self.message_user(
                        request,
                        f"{name} erased {where} as {report.pseudonym}; the residue check found nothing "
                        f"(correlation id {report.correlation_id}).",
                    )
            return None
        plans = []
        for row in rows:
            try:
                plan = student_erase(user=row.user, course=None if whole else row.course, dry_run=True)
            except DomainError as exc:
                plans.append({"row": row, "error": exc.public_message()})
                continue
            plans.append({"row": row, "plan": plan})
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Erase a person entirely" if whole else "Erase students' data of a course",
            "plans": plans,
            "whole": whole,
            "action": action,
            "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/tutor/enrollment/erase.html", context)
