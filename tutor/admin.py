from django.contrib import admin

from tutor.admin_scoping import CourseScopedAdmin, ReadOnlyAdmin, ScopedFilter
from tutor.models import Course, Enrollment, ModelCall, Rubric, Task


class RubricInline(admin.TabularInline):
    model = Rubric
    fields = ["version", "content_hash", "criteria", "created_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Course)
class CourseAdmin(CourseScopedAdmin):
    course_path = "id"
    list_display = ["slug", "title", "created_at"]
    search_fields = ["slug", "title"]


@admin.register(Task)
class TaskAdmin(CourseScopedAdmin):
    list_display = ["slug", "title", "course", "rubric_version"]
    list_filter = [("course", ScopedFilter)]
    list_select_related = ["course", "current_rubric"]
    search_fields = ["slug", "title"]
    # Rubrics change only through import_course: a version is never edited.
    readonly_fields = ["current_rubric"]
    inlines = [RubricInline]

    # The version alone: Rubric.__str__ would load the rubric's task and course
    # again for every row.
    @admin.display(description="rubric", ordering="current_rubric__version")
    def rubric_version(self, task):
        return task.current_rubric.version if task.current_rubric else "-"


@admin.register(Rubric)
class RubricAdmin(CourseScopedAdmin, ReadOnlyAdmin):
    course_path = "task__course_id"
    list_display = ["task", "version", "content_hash", "created_at"]
    list_filter = [("task__course", ScopedFilter)]
    list_select_related = ["task", "task__course"]


@admin.register(Enrollment)
class EnrollmentAdmin(CourseScopedAdmin):
    list_display = ["user", "course", "role", "created_at"]
    list_filter = [("course", ScopedFilter), "role"]
    list_select_related = ["user", "course"]
    search_fields = ["user__username"]
    autocomplete_fields = ["user"]


@admin.register(ModelCall)
class ModelCallAdmin(ReadOnlyAdmin):
    list_display = ["created_at", "purpose", "status", "model", "latency_ms", "correlation_id"]
    list_filter = ["purpose", "status"]
    search_fields = ["correlation_id"]
    date_hierarchy = "created_at"

    def has_view_permission(self, request, obj=None):
        # Prompts may quote any course's student work: superusers only.
        return request.user.is_superuser
