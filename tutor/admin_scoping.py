"""Admin helpers shared by the apps: course scoping and read-only records."""

from __future__ import annotations

from django.contrib import admin

from tutor import access


class ScopedFilter(admin.RelatedOnlyFieldListFilter):
    """A related-object filter offering only objects that occur in the rows the
    user may see, so another course's name never shows in the sidebar."""


class CourseScopedAdmin(admin.ModelAdmin):
    """Non-superuser staff see only rows of courses they are staff of (SPEC §8).

    ``course_path`` is the lookup from the model to its course id.
    """

    course_path = "course_id"

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        if request.user.is_superuser:
            return qs
        return qs.filter(**{f"{self.course_path}__in": access.staff_course_ids(request.user)})


class ReadOnlyAdmin(admin.ModelAdmin):
    """History is never edited in admin: no add, change or delete."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False
