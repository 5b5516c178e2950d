from django.contrib import admin

from feedback.models import ReviewAttempt, Submission
from tutor.admin_scoping import CourseScopedAdmin, ReadOnlyAdmin, ScopedFilter


class AttemptInline(admin.TabularInline):
    model = ReviewAttempt
    fk_name = "submission"
    fields = [
        "attempt_seq",
        "kind",
        "status",
        "rubric_version",
        "prompt_version",
        "engine_version",
        "model",
        "error_code",
        "reused_from",
        "created_at",
        "finished_at",
    ]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True
    ordering = ["-attempt_seq"]

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Submission)
class SubmissionAdmin(CourseScopedAdmin, ReadOnlyAdmin):
    course_path = "task__course_id"
    list_display = ["submission_seq", "student", "task", "ci_source", "created_at"]
    list_filter = [("task__course", ScopedFilter), ("task", ScopedFilter), "ci_source", "attempts__status"]
    list_select_related = ["student", "task", "task__course"]
    search_fields = ["student__username", "snapshot_hash"]
    inlines = [AttemptInline]

    def get_queryset(self, request):
        return super().get_queryset(request).distinct()


@admin.register(ReviewAttempt)
class ReviewAttemptAdmin(CourseScopedAdmin, ReadOnlyAdmin):
    course_path = "submission__task__course_id"
    list_display = ["attempt_seq", "submission", "kind", "status", "error_code", "model", "created_at"]
    list_filter = [
        "status",
        "kind",
        ("submission__task__course", ScopedFilter),
        ("submission__task", ScopedFilter),
    ]
    list_select_related = ["submission"]
    search_fields = ["submission__student__username"]
