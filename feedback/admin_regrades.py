"""The human side of reviews in admin (SPEC §8): the queue of open regrade
requests and the model-staff agreement pairs."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html

from feedback.admin_display import criteria_of
from feedback.models import CriterionAgreement, RegradeRequest, RegradeStatus
from feedback.services.regrades import REGRADE_RESPONSE_MAX_CHARS, regrade_decline
from tutor.admin_scoping import (
    CappedCountPaginator,
    CourseScopedAdmin,
    DefaultChoiceFilter,
    ReadOnlyAdmin,
    ScopedFilter,
)
from tutor.kernel.errors import DomainError


class RegradeStatusFilter(DefaultChoiceFilter):
    title = "status"
    parameter_name = "regrade"
    default = RegradeStatus.OPEN.value

    def lookups(self, request, model_admin):
        return [*RegradeStatus.choices, ("all", "All")]

    def queryset(self, request, queryset):
        value = self.value()
        return queryset if value == self.all_value else queryset.filter(status=value)


class DeclineForm(forms.Form):
    response = forms.CharField(
        label="Why the review stands (the student reads this)",
        max_length=REGRADE_RESPONSE_MAX_CHARS,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
    )


@admin.register(RegradeRequest)
class RegradeRequestAdmin(CourseScopedAdmin, ReadOnlyAdmin):
    course_path = "submission__task__course_id"
    list_display = [
        "created_at",
        "student",
        "task",
        "rubric_id",
        "review_says",
        "reason_short",
        "status",
        "decide",
    ]
    list_filter = [
        RegradeStatusFilter,
        ("submission__task__course", ScopedFilter),
        ("submission__task", ScopedFilter),
    ]
    list_select_related = ["student", "submission__task__course", "attempt"]
    search_fields = ["student__username", "rubric_id"]
    show_full_result_count = False
    paginator = CappedCountPaginator
    actions = ["decline"]
    fields = [
        "created_at",
        "student",
        "submission",
        "attempt",
        "rubric_id",
        "reason",
        "redactions",
        "review_criterion",
        "status",
        "response",
        "decided_by",
        "decided_at",
        "settled_by",
    ]
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).defer("submission__evidence")

    def _entry(self, request_row):
        rows = criteria_of(request_row.attempt.result)
        return next((c for c in rows if c.get("rubric_id") == request_row.rubric_id), {})

    @admin.display(description="task")
    def task(self, row):
        task = row.submission.task
        return f"{task.course.slug}/{task.slug}"

    @admin.display(description="review")
    def review_says(self, row):
        entry = self._entry(row)
        return f"{entry.get('status', '?')} ({entry.get('basis', '?')})"

    @admin.display(description="student's reason")
    def reason_short(self, row):
        return row.reason if len(row.reason) <= 80 else row.reason[:79] + "…"

    @admin.display(description="the review's finding")
    def review_criterion(self, row):
        entry = self._entry(row)
        return format_html(
            "<b>{}</b> {} — basis {}<br>reason: {}<br>evidence: {}",
            entry.get("status", "?"),
            entry.get("criterion", ""),
            entry.get("basis", "?"),
            entry.get("reason", ""),
            entry.get("evidence", ""),
        )

    @admin.display(description="")
    def decide(self, row):
        if row.status != RegradeStatus.OPEN:
            return "-"
        url = reverse("admin:feedback_reviewattempt_verdict", args=[row.attempt_id])
        return format_html('<a class="button" href="{}">Verdict…</a>', url)

    @admin.action(description="Decline the selected requests (with a reason)", permissions=["decide"])
    def decline(self, request, queryset):
        open_requests = list(queryset.filter(status=RegradeStatus.OPEN).select_related("submission__task"))
        form = DeclineForm(request.POST if "apply" in request.POST else None)
        if "apply" in request.POST and form.is_valid():
            done = 0
            for row in open_requests:
                try:
                    regrade_decline(request=row, staff=request.user, response=form.cleaned_data["response"])
                    done += 1
                except DomainError as exc:
                    self.message_user(request, f"{row.rubric_id}: {exc.public_message()}", messages.ERROR)
            self.message_user(request, f"Declined {done} regrade request(s); the students see your reason.")
            return None
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "Decline regrade requests",
            "rows": open_requests,
            "form": form,
            "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
        }
        return TemplateResponse(request, "admin/feedback/regrade_decline.html", context)


@admin.register(CriterionAgreement)
class CriterionAgreementAdmin(CourseScopedAdmin, ReadOnlyAdmin):
    """Every (machine, staff) pair behind the agreement report."""

    course_path = "task__course_id"
    list_display = [
        "created_at",
        "task",
        "rubric_version",
        "criterion",
        "machine_basis",
        "machine_status",
        "staff_status",
        "agrees",
    ]
    list_filter = [("task__course", ScopedFilter), ("task", ScopedFilter), "machine_basis", "criterion"]
    list_select_related = ["task", "task__course", "rubric"]
    show_full_result_count = False
    paginator = CappedCountPaginator

    @admin.display(description="rubric")
    def rubric_version(self, row):
        return row.rubric.version

    @admin.display(boolean=True, description="agrees")
    def agrees(self, row):
        return row.agrees
