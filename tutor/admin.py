import json

from django.contrib import admin
from django.utils.html import format_html, format_html_join

from tutor.admin_scoping import CappedCountPaginator, CourseScopedAdmin, ReadOnlyAdmin, ScopedFilter
from tutor.models import AuditEvent, Course, Enrollment, ModelCall, RetentionOverride, Rubric, Task
from tutor.rights.admin_actions import ErasureActions
from tutor.services import enrollment_remove, enrollment_set


def _pretty_json(value):
    return format_html(
        '<pre style="white-space:pre-wrap;max-width:100ch">{}</pre>',
        json.dumps(value, ensure_ascii=False, indent=2),
    )


class RubricInline(admin.TabularInline):
    model = Rubric
    fields = ["version", "content_hash", "criteria", "created_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


class RetentionOverrideInline(admin.TabularInline):
    """A course's own retention per kind of data (SPEC §13); without a row
    the setting RETENTION_<KIND>_DAYS applies."""

    model = RetentionOverride
    extra = 0


@admin.register(Course)
class CourseAdmin(CourseScopedAdmin):
    course_path = "id"
    list_display = ["slug", "title", "ai_notice_required", "created_at"]
    search_fields = ["slug", "title"]
    inlines = [RetentionOverrideInline]


@admin.register(Task)
class TaskAdmin(CourseScopedAdmin):
    list_display = ["slug", "title", "course", "rubric_version"]
    list_filter = [("course", ScopedFilter)]
    list_select_related = ["course", "current_rubric"]
    search_fields = ["slug", "title"]
    # Rubrics change only through import_course: a version is never edited.
    readonly_fields = ["current_rubric", "review_agreement"]
    inlines = [RubricInline]

    @admin.display(description="model-staff agreement")
    def review_agreement(self, task):
        """Per rubric version and acceptance criterion: staff verdicts, how often
        they agreed with the machine, and the flag (SPEC §8)."""
        from feedback.agreement import review_agreement

        versions = review_agreement(task)
        if not any(c["verdicts"] for v in versions for c in v["criteria"]):
            return "No staff verdict on a machine-judged criterion yet."
        return format_html_join(
            "",
            "<h3>Rubric {}{}</h3><table><thead><tr><th>criterion</th><th>verdicts</th>"
            "<th>agreement</th><th>model verdicts</th><th>model agreement</th><th>flag</th></tr></thead>"
            "<tbody>{}</tbody></table>",
            (
                (
                    v["rubric_version"],
                    " (current)" if v["current"] else " (outdated rubric)",
                    format_html_join(
                        "",
                        "<tr><td>{} {}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                        (
                            (
                                c["rubric_id"],
                                c["criterion"],
                                c["verdicts"],
                                "-" if c["agreement_rate"] is None else f"{c['agreement_rate']:.0%}",
                                c["model_verdicts"],
                                "-"
                                if c["model_agreement_rate"] is None
                                else f"{c['model_agreement_rate']:.0%}",
                                "LOW AGREEMENT" if c["flagged"] else "",
                            )
                            for c in v["criteria"]
                        ),
                    ),
                )
                for v in versions
            ),
        )

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
class EnrollmentAdmin(ErasureActions, CourseScopedAdmin):
    """Enrolments change through the enrolment services, as from the command
    line: audited (``enrollment_changed``), and admin access follows staff
    enrolments."""

    list_display = ["user", "course", "role", "created_at"]
    list_filter = [("course", ScopedFilter), "role"]
    list_select_related = ["user", "course"]
    search_fields = ["user__username"]
    autocomplete_fields = ["user"]
    actions = ["erase_course_data", "erase_person"]

    def get_readonly_fields(self, request, obj=None):
        # An enrolment is one user in one course: to move it, remove it and enrol anew.
        return ["user", "course"] if obj is not None else []

    def save_model(self, request, obj, form, change):
        user, _ = enrollment_set(
            course=obj.course,
            username=obj.user.get_username(),
            role=obj.role,
            create=False,
            actor=request.user,
        )
        obj.pk = Enrollment.objects.values_list("pk", flat=True).get(user=user, course=obj.course)

    def delete_model(self, request, obj):
        enrollment_remove(course=obj.course, user=obj.user, actor=request.user, reason="removed in admin")

    def delete_queryset(self, request, queryset):
        for enrollment in queryset.select_related("user", "course"):
            self.delete_model(request, enrollment)


@admin.register(ModelCall)
class ModelCallAdmin(CourseScopedAdmin, ReadOnlyAdmin):
    """Every model request and response (SPEC §4). Prompts quote student work:
    course staff see only the calls of their own course's reviews and tutor
    turns; calls of no course are for superusers."""

    list_display = ["created_at", "purpose", "status", "course", "model", "latency_ms", "correlation_id"]
    list_filter = ["purpose", "status", ("course", ScopedFilter)]
    list_select_related = ["course"]
    search_fields = ["correlation_id"]
    date_hierarchy = "created_at"
    show_full_result_count = False
    paginator = CappedCountPaginator
    fields = [
        "created_at",
        "purpose",
        "course",
        "status",
        "http_status",
        "model",
        "latency_ms",
        "correlation_id",
        "error",
        "request",
        "response_text",
    ]
    readonly_fields = fields

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        if request.resolver_match and request.resolver_match.url_name.endswith("changelist"):
            qs = qs.defer("request_messages", "response_text", "response_json")
        return qs

    @admin.display(description="request messages")
    def request(self, call):
        return _pretty_json(call.request_messages)


class EventFilter(admin.SimpleListFilter):
    """The audit events by name, from the known names: no scan of the table
    to find which names occur."""

    title = "event"
    parameter_name = "event"

    def lookups(self, request, model_admin):
        return AuditEvent.Event.choices

    def queryset(self, request, queryset):
        return queryset.filter(event=self.value()) if self.value() else queryset


@admin.register(AuditEvent)
class AuditEventAdmin(CourseScopedAdmin, ReadOnlyAdmin):
    """The audit trail (SPEC §8): read-only, course-scoped, newest first."""

    list_display = [
        "created_at",
        "event",
        "actor_label",
        "course",
        "target_repr",
        "from_state",
        "to_state",
        "reason_short",
    ]
    list_filter = [EventFilter, ("course", ScopedFilter), ("actor", ScopedFilter)]
    list_select_related = ["course"]
    search_fields = ["target_repr", "target_id", "correlation_id", "actor_label"]
    date_hierarchy = "created_at"
    show_full_result_count = False
    paginator = CappedCountPaginator
    fields = [
        "created_at",
        "event",
        "actor_label",
        "actor",
        "course",
        "target_type",
        "target_id",
        "target_repr",
        "from_state",
        "to_state",
        "reason",
        "correlation_id",
        "extra_data",
    ]
    readonly_fields = fields

    @admin.display(description="reason")
    def reason_short(self, event):
        return event.reason if len(event.reason) <= 80 else event.reason[:79] + "…"

    @admin.display(description="extra")
    def extra_data(self, event):
        return _pretty_json(event.extra)
