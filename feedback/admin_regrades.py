"""The human side of reviews in admin (SPEC §8): the queue of open regrade
requests and the model-staff agreement pairs."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

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
from tutor.desk.rows import QueueRowsAdmin, RowAction
from tutor.kernel.errors import DomainError


class RegradeStatusFilter(DefaultChoiceFilter):
    title = _("status")
    parameter_name = "regrade"
    default = RegradeStatus.OPEN.value

    def lookups(self, request, model_admin):
        return [*RegradeStatus.choices, ("all", _("All"))]

    def queryset(self, request, queryset):
        value = self.value()
        return queryset if value == self.all_value else queryset.filter(status=value)


def verdict_url(row) -> str:
    """The verdict form of the request's review, showing the request and
    returning to this queue (``feedback.admin``)."""
    url = reverse("admin:feedback_reviewattempt_verdict", args=[row.attempt_id])
    return f"{url}?regrade={row.pk}"


class DeclineForm(forms.Form):
    response = forms.CharField(
        label="Why the review stands (the student reads this)",
        max_length=REGRADE_RESPONSE_MAX_CHARS,
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
    )


@admin.register(RegradeRequest)
class RegradeRequestAdmin(QueueRowsAdmin, CourseScopedAdmin, ReadOnlyAdmin):
    course_path = "submission__task__course_id"
    # Fits 1366 px (SPEC §8): the buttons first, then who asked about what and why.
    list_display = ["act", "rubric_id", "student", "task", "review_says", "reason_short", "created_at"]
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

    @admin.display(description=_("review"))
    def review_says(self, row):
        entry = self._entry(row)
        return f"{entry.get('status', '?')} ({entry.get('basis', '?')})"

    @admin.display(description=_("student's reason"))
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

    def get_row_actions(self, request):
        is_open = lambda row: row.status == RegradeStatus.OPEN  # noqa: E731
        return (
            RowAction("verdict", _("Verdict…"), href=verdict_url, applies=is_open, primary=True),
            RowAction("decline", _("Decline"), run=self._decline_one, reason="text", applies=is_open),
        )

    def _decline_one(self, request, row, reason):
        regrade_decline(request=row, staff=request.user, response=reason)
        return gettext("Declined the regrade request on %(criterion)s by %(student)s.") % {
            "criterion": row.rubric_id,
            "student": row.student.get_username(),
        }

    @admin.action(description=_("Decline the selected requests (with a reason)"), permissions=["decide"])
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
