"""Submissions and review attempts as the staff work queue (SPEC §8).

Both lists open on what needs a decision; the attempt list has the actions
(a staff verdict through a per-criterion form, a forced re-review) that call
the feedback services. Records stay read-only: a decision is a new attempt.
Heavy fields (the evidence, up to 1 MiB) are deferred and counts are capped,
so a page costs the same few queries with 100k rows.
"""

from __future__ import annotations

import json
import uuid

from django.contrib import admin, messages
from django.db.models import JSONField, OuterRef, Subquery
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from feedback.admin_display import basis_summary, criteria_table, evidence_files, evidence_summary, overall_of
from feedback.admin_forms import VerdictForm
from feedback.models import AttemptStatus, RegradeRequest, RegradeStatus, ReviewAttempt, Submission
from feedback.selectors import Decision, attempts_needing_decision
from feedback.services.intake import review_request
from feedback.services.verdicts import staff_verdict_create
from feedback.versions import current_versions
from tutor.admin_scoping import (
    CappedCountPaginator,
    CourseScopedAdmin,
    DefaultChoiceFilter,
    ReadOnlyAdmin,
    ScopedFilter,
)
from tutor.desk.rows import QueueRowsAdmin, RowAction
from tutor.kernel.errors import DomainError

DECISION_LABELS = {
    Decision.NEED_REVIEW: _("Overall NEED_REVIEW"),
    Decision.AWAITING_STAFF: _("A criterion waits for staff"),
    Decision.INVALID: _("Invalid"),
    Decision.UNAVAILABLE: _("Unavailable"),
    Decision.STALE_RULES: _("Outdated rules"),
    Decision.LOW_AGREEMENT: _("Model FAIL, low agreement"),
}


class NeedsDecisionFilter(DefaultChoiceFilter):
    title = _("queue")
    parameter_name = "decision"

    def lookups(self, request, model_admin):
        return [
            ("needs", _("Needs a decision")),
            *((d.value, DECISION_LABELS.get(d, d.label)) for d in Decision),
            ("all", _("All")),
        ]

    def queryset(self, request, queryset):
        value = self.value()
        if value == self.all_value:
            return queryset
        decision = None if value == "needs" else value
        if decision is not None and decision not in Decision.values:
            return queryset.none()
        return self.narrow(queryset, decision)

    def narrow(self, queryset, decision):
        return attempts_needing_decision(queryset, decision)


class SubmissionNeedsDecisionFilter(NeedsDecisionFilter):
    def narrow(self, queryset, decision):
        waiting = attempts_needing_decision(ReviewAttempt.objects.all(), decision)
        return queryset.filter(pk__in=waiting.values("submission_id"))


def _force_rereview(modeladmin, request, submissions) -> None:
    done, refused = 0, []
    for submission in submissions:
        try:
            review_request(submission=submission, user=request.user, is_staff=True, force=True)
            done += 1
        except DomainError as exc:
            refused.append(f"#{submission.submission_seq}: {exc.public_message()}")
    if done:
        modeladmin.message_user(
            request, gettext("Queued a fresh review (cache bypassed) for %(n)s submission(s).") % {"n": done}
        )
    for line in refused:
        modeladmin.message_user(request, line, messages.ERROR)


class AttemptInline(admin.TabularInline):
    model = ReviewAttempt
    fk_name = "submission"
    fields = ["attempt_seq", "kind", "status", "overall", "basis", "rubric_version", "model", "error_code"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True
    ordering = ["-attempt_seq"]

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    @admin.display(description="overall")
    def overall(self, attempt):
        return overall_of(attempt.result)

    @admin.display(description="basis")
    def basis(self, attempt):
        return basis_summary(attempt.result)


@admin.register(Submission)
class SubmissionAdmin(QueueRowsAdmin, CourseScopedAdmin, ReadOnlyAdmin):
    course_path = "task__course_id"
    list_display = [
        "act",
        "submission_seq",
        "student",
        "task",
        "latest_status",
        "latest_overall",
        "created_at",
    ]
    list_filter = [
        SubmissionNeedsDecisionFilter,
        ("task__course", ScopedFilter),
        ("task", ScopedFilter),
        "ci_source",
    ]
    list_select_related = ["student", "task", "task__course"]
    search_fields = ["student__username", "snapshot_hash"]
    inlines = [AttemptInline]
    show_full_result_count = False
    paginator = CappedCountPaginator
    actions = ["force_rereview"]
    fields = [
        "submission_seq",
        "student",
        "task",
        "submitted_by",
        "ci_source",
        "previous",
        "snapshot_hash",
        "created_at",
        "evidence_overview",
        "redactions_per_field",
        "evidence_as_files",
    ]
    readonly_fields = fields

    def get_queryset(self, request):
        newest = ReviewAttempt.objects.filter(submission=OuterRef("pk")).order_by("-attempt_seq")
        qs = super().get_queryset(request)
        if request.resolver_match and request.resolver_match.url_name.endswith("changelist"):
            qs = qs.defer("evidence")
        return qs.annotate(
            newest_status=Subquery(newest.values("status")[:1]),
            newest_result=Subquery(newest.values("result")[:1], output_field=JSONField()),
        )

    @admin.display(description="latest review")
    def latest_status(self, submission):
        return submission.newest_status or "-"

    @admin.display(description="overall")
    def latest_overall(self, submission):
        return overall_of(submission.newest_result)

    @admin.display(description="basis")
    def latest_basis(self, submission):
        return basis_summary(submission.newest_result)

    def get_row_actions(self, request):
        return (RowAction("rereview", _("Re-review"), run=self._rereview_one),)

    def _rereview_one(self, request, submission, reason):
        review_request(submission=submission, user=request.user, is_staff=True, force=True)
        return gettext("Queued a fresh review of submission #%(seq)s.") % {"seq": submission.submission_seq}

    @admin.display(description=_("redactions"))
    def redactions_per_field(self, submission):
        """What was redacted before the evidence was stored, per field (SPEC §2)."""
        counts = submission.evidence_redactions or {}
        if not counts:
            return gettext("none")
        return ", ".join(f"{field} ×{n}" for field, n in sorted(counts.items()))

    @admin.display(description=_("evidence"))
    def evidence_overview(self, submission):
        return evidence_summary(submission.evidence)

    @admin.display(description=_("evidence as files"))
    def evidence_as_files(self, submission):
        return evidence_files(submission.evidence, submission.evidence_redactions)

    @admin.action(description=_("Force a fresh review (bypasses the cache)"), permissions=["decide"])
    def force_rereview(self, request, queryset):
        _force_rereview(
            self, request, queryset.select_related("task", "task__course", "task__current_rubric")
        )


@admin.register(ReviewAttempt)
class ReviewAttemptAdmin(QueueRowsAdmin, CourseScopedAdmin, ReadOnlyAdmin):
    course_path = "submission__task__course_id"
    # Fits 1366 px (SPEC §8): the buttons first, then who, what and why it waits.
    list_display = ["act", "attempt_seq", "student", "task", "overall", "waiting_on", "created_at"]
    list_filter = [
        NeedsDecisionFilter,
        "status",
        "kind",
        ("submission__task__course", ScopedFilter),
        ("submission__task", ScopedFilter),
    ]
    list_select_related = [
        "submission",
        "submission__student",
        "submission__task",
        "submission__task__course",
        "submission__task__current_rubric",
    ]
    search_fields = ["submission__student__username"]
    show_full_result_count = False
    paginator = CappedCountPaginator
    actions = ["give_verdict", "force_rereview"]
    fields = [
        "attempt_seq",
        "submission",
        "kind",
        "status",
        "overall",
        "criteria",
        "rubric_version",
        "rubric_hash",
        "prompt_version",
        "engine_version",
        "model",
        "reused_from",
        "error_code",
        "error_detail",
        "generation_attempts",
        "forced",
        "requested_by",
        "correlation_id",
        "created_at",
        "finished_at",
    ]
    readonly_fields = fields

    def get_queryset(self, request):
        return super().get_queryset(request).defer("submission__evidence", "error_detail")

    @admin.display(description="student", ordering="submission__student__username")
    def student(self, attempt):
        return attempt.submission.student.get_username()

    @admin.display(description="task")
    def task(self, attempt):
        task = attempt.submission.task
        return f"{task.course.slug}/{task.slug}"

    @admin.display(description="overall")
    def overall(self, attempt):
        return overall_of(attempt.result)

    @admin.display(description="basis")
    def basis(self, attempt):
        return basis_summary(attempt.result)

    @admin.display(description="criteria")
    def criteria(self, attempt):
        return criteria_table(attempt.result)

    @admin.display(description=_("waiting on"))
    def waiting_on(self, attempt):
        """Why a person is needed: the criteria that wait for staff, else the state."""
        if attempt.awaiting_staff:
            ids = ", ".join(json.loads(f"[{attempt.awaiting_staff.replace(' ', ',')}]"))
            return gettext("%(ids)s wait for staff") % {"ids": ids}
        if attempt.status != AttemptStatus.COMPLETED:
            return attempt.status
        return basis_summary(attempt.result)

    def get_row_actions(self, request):
        return (
            RowAction(
                "verdict",
                _("Verdict…"),
                href=lambda attempt: reverse("admin:feedback_reviewattempt_verdict", args=[attempt.pk]),
                primary=True,
            ),
            RowAction("rereview", _("Re-review"), run=self._rereview_one),
        )

    def _rereview_one(self, request, attempt, reason):
        review_request(submission=attempt.submission, user=request.user, is_staff=True, force=True)
        return gettext("Queued a fresh review of submission #%(seq)s.") % {
            "seq": attempt.submission.submission_seq
        }

    # --- actions ----------------------------------------------------------------

    @admin.action(description=_("Give a staff verdict (one review)"), permissions=["decide"])
    def give_verdict(self, request, queryset):
        selected = list(queryset.values_list("pk", flat=True)[:2])
        if len(selected) != 1:
            self.message_user(request, "Select exactly one review to give a verdict on.", messages.WARNING)
            return None
        return HttpResponseRedirect(reverse("admin:feedback_reviewattempt_verdict", args=[selected[0]]))

    @admin.action(description=_("Force a fresh review (bypasses the cache)"), permissions=["decide"])
    def force_rereview(self, request, queryset):
        ids = set(queryset.values_list("submission_id", flat=True))
        submissions = Submission.objects.filter(pk__in=ids).select_related(
            "task", "task__course", "task__current_rubric"
        )
        _force_rereview(self, request, submissions)

    # --- the verdict form -----------------------------------------------------------

    def get_urls(self):
        # Before the row actions' "<id>/<...>/" patterns.
        urls = [
            path(
                "<path:object_id>/verdict/",
                self.admin_site.admin_view(self.verdict_view),
                name="feedback_reviewattempt_verdict",
            )
        ]
        return urls + super().get_urls()

    def verdict_view(self, request, object_id):
        """A staff verdict on the submission of one attempt: per criterion of
        the current rubric a status and a reason, and an optional next step;
        the service creates a new attempt and its audit row."""
        if not self.has_decide_permission(request):
            raise Http404("no such review")
        attempt = (
            self.get_queryset(request)
            .select_related("submission__task__current_rubric")
            .filter(pk=object_id)
            .first()
            if _is_uuid(object_id)
            else None
        )
        if attempt is None:
            raise Http404("no such review")
        submission = attempt.submission
        versions = current_versions(submission.task)
        base = (
            submission.attempts.filter(status=AttemptStatus.COMPLETED, **versions.compatible_filter())
            .order_by("-attempt_seq")
            .first()
        )
        current = {c["rubric_id"]: c for c in (base.result["criteria"] if base else [])}
        regrade = _regrade_of(request, submission)
        form = VerdictForm(
            request.POST if request.method == "POST" else None,
            criteria=versions.rubric.criteria,
            current=current,
        )
        if request.method == "POST" and form.is_valid():
            try:
                created = staff_verdict_create(
                    submission=submission,
                    staff=request.user,
                    criteria=form.cleaned_data["verdicts"],
                    next_step=form.cleaned_data["next_step"] or None,
                )
            except DomainError as exc:
                form.add_error(None, exc.public_message())
            else:
                self.message_user(
                    request,
                    gettext("Staff verdict recorded as attempt #%(seq)s: overall %(overall)s.")
                    % {"seq": created.attempt_seq, "overall": created.result["overall"]},
                )
                if regrade is not None:
                    return _back_to_regrades(self, request, regrade)
                return HttpResponseRedirect(
                    reverse("admin:feedback_reviewattempt_changelist") + "?decision=needs"
                )
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": gettext("Staff verdict on submission #%(seq)s") % {"seq": submission.submission_seq},
            "regrade": regrade,
            "attempt": attempt,
            "submission": submission,
            "base": base,
            "form": form,
            "criteria_html": criteria_table(base.result if base else attempt.result),
            "evidence": evidence_summary(submission.evidence),
            "evidence_html": evidence_files(submission.evidence, submission.evidence_redactions),
        }
        return TemplateResponse(request, "admin/feedback/verdict.html", context)


def _regrade_of(request, submission):
    """The open regrade request the verdict form was opened from (``?regrade=``)."""
    wanted = request.GET.get("regrade") or ""
    if not _is_uuid(wanted):
        return None
    return RegradeRequest.objects.filter(pk=wanted, submission=submission).select_related("student").first()


def _back_to_regrades(modeladmin, request, regrade):
    """After a verdict opened from a regrade request: the regrade queue, with
    what became of that request."""
    regrade.refresh_from_db(fields=["status"])
    names = {
        "criterion": regrade.rubric_id,
        "student": regrade.student.get_username(),
        "when": f"{regrade.created_at:%Y-%m-%d %H:%M}",
    }
    if regrade.status == RegradeStatus.SETTLED:
        modeladmin.message_user(
            request,
            gettext("Settled the regrade request on %(criterion)s by %(student)s (%(when)s).") % names,
        )
    else:
        modeladmin.message_user(
            request,
            gettext(
                "The regrade request on %(criterion)s by %(student)s (%(when)s) is still open: "
                "the verdict did not set %(criterion)s."
            )
            % names,
            messages.WARNING,
        )
    return HttpResponseRedirect(reverse("admin:feedback_regraderequest_changelist") + "?regrade=open")


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


from feedback import admin_regrades  # noqa: E402,F401  (registers the regrade queue and agreement pairs)
