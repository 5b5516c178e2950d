"""The skill-candidate queue and the recall traces in Django admin (SPEC §6, §8):
staff accept or dismiss a candidate through its service; a trace shows one
request's recall, read-only, scoped to the staff's courses."""

from __future__ import annotations

from django.contrib import admin
from django.db.models import Q
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from lessons import access
from lessons.admin_filters import run_each
from lessons.models import RecallTrace, SkillCandidate
from lessons.services.usage import skill_candidate_decide
from tutor.admin_scoping import (
    ActionIdsChecked,
    CappedCountPaginator,
    CourseScopedAdmin,
    ReadOnlyAdmin,
    ScopedFilter,
)
from tutor.desk.rows import QueueRowsAdmin, RowAction


class CandidateQueueFilter(admin.SimpleListFilter):
    title = "status"
    parameter_name = "status"

    def lookups(self, request, model_admin):
        return [("open", "Open"), ("accepted", "Accepted"), ("dismissed", "Dismissed"), ("all", "All")]

    def choices(self, changelist):
        current = self.value() or "open"
        for value, label in self.lookup_choices:
            yield {
                "selected": current == value,
                "query_string": changelist.get_query_string({self.parameter_name: value}),
                "display": label,
            }

    def queryset(self, request, queryset):
        value = self.value() or "open"
        return queryset if value == "all" else queryset.filter(status=value)


@admin.register(SkillCandidate)
class SkillCandidateAdmin(ActionIdsChecked, QueueRowsAdmin, ReadOnlyAdmin):
    paginator = CappedCountPaginator  # no full COUNT over a big table
    list_display = ["act", "lesson", "course_label", "hit_count", "status", "created_at"]
    list_filter = [CandidateQueueFilter]
    list_select_related = ["lesson", "lesson__course", "decided_by"]
    show_full_result_count = False
    actions = ["accept", "dismiss"]
    readonly_fields = ["lesson", "hit_count", "status", "decided_by", "decided_at", "note", "created_at"]

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        if request.user.is_superuser:
            return qs
        return qs.filter(
            Q(lesson__course__isnull=True) | Q(lesson__course_id__in=access.staff_course_ids(request.user))
        )

    def has_decide_permission(self, request) -> bool:
        return access.is_lessons_staff(request.user)

    def get_row_actions(self, request):
        is_open = lambda c: c.status == SkillCandidate.Status.OPEN  # noqa: E731
        return (
            RowAction("accept", _("Accept"), run=self._decide(True), applies=is_open, primary=True),
            RowAction("dismiss", _("Dismiss"), run=self._decide(False), applies=is_open),
        )

    @staticmethod
    def _decide(accept: bool):
        def run(request, candidate, reason):
            skill_candidate_decide(candidate=candidate, actor=request.user, accept=accept)
            verb = gettext("Accepted") if accept else gettext("Dismissed")
            return f"{verb}: {candidate.lesson.title}"

        return run

    @admin.display(description=_("course"))
    def course_label(self, candidate: SkillCandidate) -> str:
        return candidate.lesson.course.slug if candidate.lesson.course_id else "(global)"

    @admin.action(description="Accept selected candidates (a skill will be written)")
    def accept(self, request, queryset):
        run_each(
            self,
            request,
            queryset,
            "accepted",
            lambda c: skill_candidate_decide(candidate=c, actor=request.user, accept=True),
        )

    @admin.action(description="Dismiss selected candidates")
    def dismiss(self, request, queryset):
        run_each(
            self,
            request,
            queryset,
            "dismissed",
            lambda c: skill_candidate_decide(candidate=c, actor=request.user, accept=False),
        )


@admin.register(RecallTrace)
class RecallTraceAdmin(CourseScopedAdmin, ReadOnlyAdmin):
    """ "Why was this lesson not shown?" -- every real tutor request's recall."""

    paginator = CappedCountPaginator  # no full COUNT over a big table
    list_display = ["created_at", "correlation_id", "student", "task", "recalled_count", "used_tokens"]
    list_filter = [("course", ScopedFilter)]
    list_select_related = ["student", "task", "task__course"]
    search_fields = ["correlation_id", "student__username"]
    show_full_result_count = False
    readonly_fields = [
        "correlation_id",
        "course",
        "student",
        "task",
        "session",
        "context",
        "params",
        "used_tokens",
        "budget_tokens",
        "trace_table",
        "omitted",
        "counts",
        "created_at",
    ]
    fields = readonly_fields

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        match = request.resolver_match
        if match is not None and match.url_name.endswith("changelist"):
            qs = qs.defer("lines", "context", "params", "omitted")
        return qs

    @admin.display(description="recalled")
    def recalled_count(self, trace: RecallTrace) -> int:
        return (trace.counts or {}).get("recalled", 0)

    @admin.display(description="trace (lessons considered, in pipeline order)")
    def trace_table(self, trace: RecallTrace):
        if not trace.lines:
            return "no lesson could reach the floor for this context"

        def fmt(value):
            return "-" if value is None else f"{value:.2f}"

        rows = (
            (
                line["decision"],
                line["title"],
                fmt(line["score"]),
                fmt((line["components"] or {}).get("tag")),
                fmt((line["components"] or {}).get("symptom")),
                fmt((line["components"] or {}).get("decay")),
                line["tokens"],
            )
            for line in trace.lines
        )
        header = mark_safe(
            "<tr><th>decision</th><th>lesson</th><th>score</th><th>tag</th><th>symptom</th>"
            "<th>decay</th><th>tokens</th></tr>"
        )
        body = format_html_join(
            "", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", rows
        )
        return format_html("<table>{}{}</table>", header, body)
