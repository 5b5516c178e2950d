"""LTI in the admin (SPEC §8, §12): registrations (course staff read their
course's, superusers edit), the links and the score outbox as a work queue,
the tool's keys for superusers -- public half only."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.db import models
from django.urls import reverse
from django.utils.html import format_html
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from tutor.admin_scoping import CappedCountPaginator, CourseScopedAdmin, ReadOnlyAdmin, ScopedFilter
from tutor.audit import audit_record
from tutor.desk.rows import QueueRowsAdmin, RowAction
from tutor.kernel.errors import Conflict, DomainError
from tutor.lti.models import (
    Context,
    Deployment,
    Identity,
    Registration,
    ResourceLink,
    ScorePost,
    ScoreStatus,
    ToolKey,
)
from tutor.lti.selectors import bound_context_ids
from tutor.lti.services.registrations import (
    check_audience,
    check_endpoint_url,
    check_role_map,
    contexts_bound_set,
)
from tutor.lti.services.scores import score_requeue
from tutor.models import AuditEvent


class SuperuserEditsMixin:
    """Course staff may look; only superusers add, change or delete."""

    def has_add_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_change_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_delete_permission(self, request, obj=None):
        return request.user.is_superuser


class DeploymentInline(SuperuserEditsMixin, admin.TabularInline):
    model = Deployment
    fields = ["deployment_id", "created_at"]
    readonly_fields = ["created_at"]
    extra = 0


class ContextAdmin(CourseScopedAdmin, ReadOnlyAdmin):
    """The LMS courses seen in launches (or named by lti_register), one row
    each however many an LMS account has; superusers bind or unbind them
    with the actions (``contexts_bound_set``). Once one is bound, launches
    and rosters from the others are refused."""

    paginator = CappedCountPaginator  # no full COUNT over a big table
    show_full_result_count = False
    course_path = "registration__course_id"
    list_display = ["context_id", "title", "bound", "has_roster", "registration", "updated_at"]
    list_filter = ["bound", ("registration__course", ScopedFilter)]
    list_select_related = ["registration", "registration__course"]
    search_fields = ["context_id", "title", "registration__issuer"]
    actions = ["bind", "unbind"]

    @admin.display(boolean=True, description="roster URL")
    def has_roster(self, obj) -> bool:
        return bool(obj.memberships_url)

    def has_bind_permission(self, request) -> bool:
        return request.user.is_superuser

    @admin.action(description="Bind the selected LMS courses to their registration", permissions=["bind"])
    def bind(self, request, queryset):
        self._flag(request, queryset, bound=True)

    @admin.action(description="Unbind the selected LMS courses", permissions=["bind"])
    def unbind(self, request, queryset):
        self._flag(request, queryset, bound=False)

    def _flag(self, request, queryset, *, bound: bool) -> None:
        chosen: dict[int, list[str]] = {}
        for registration_id, context_id in queryset.values_list("registration_id", "context_id"):
            chosen.setdefault(registration_id, []).append(context_id)
        for registration in Registration.objects.filter(pk__in=chosen).select_related("course"):
            result = contexts_bound_set(
                registration=registration,
                context_ids=chosen[registration.pk],
                bound=bound,
                actor=request.user,
            )
            name = f"{registration.issuer} ({registration.course.slug})"
            verb = "bound" if bound else "unbound"
            self.message_user(
                request, f"{name}: {len(result.changed)} LMS course(s) {verb}.", messages.SUCCESS
            )
            if result.outside_launchers:
                self.message_user(
                    request,
                    f"{name}: still enrolled after launches from other LMS courses only: "
                    + ", ".join(result.outside_launchers[:20])
                    + (" …" if len(result.outside_launchers) > 20 else "")
                    + f". Run lti_sync_roster {registration.course.slug} (or remove them under enrolments).",
                    messages.WARNING,
                )
            if not result.all_bound:
                self.message_user(
                    request,
                    f"{name}: no LMS course is bound now, so launches from any LMS course of its "
                    f"deployments enrol into {registration.course.slug} (instructors as its staff).",
                    messages.WARNING,
                )


def _https_first(field, **kwargs):
    # A URL typed without a scheme is taken as https (Django 6's default).
    if isinstance(field, models.URLField):
        kwargs["assume_scheme"] = "https"
    return field.formfield(**kwargs)


class RegistrationForm(forms.ModelForm):
    class Meta:
        model = Registration
        formfield_callback = _https_first
        fields = [
            "course",
            "issuer",
            "client_id",
            "auth_url",
            "token_url",
            "jwks_url",
            "auth_audience",
            "role_map",
            "pending_scores",
            "active",
        ]

    def clean(self):
        cleaned = super().clean()
        for name, check in (("role_map", check_role_map), ("auth_audience", check_audience)):
            try:
                cleaned[name] = check(cleaned.get(name) or "")
            except DomainError as exc:
                self.add_error(name, exc.message.removeprefix(f"{name}: "))
        for name in ("auth_url", "token_url", "jwks_url"):
            if cleaned.get(name):
                try:
                    cleaned[name] = check_endpoint_url(cleaned[name], field_name=name)
                except DomainError as exc:
                    self.add_error(name, exc.message)
        if self.instance.pk and "course" in self.changed_data:
            self.add_error("course", "A registration belongs to one course: register the other course anew.")
        return cleaned


@admin.register(Registration)
class RegistrationAdmin(SuperuserEditsMixin, CourseScopedAdmin):
    paginator = CappedCountPaginator  # no full COUNT over a big table
    show_full_result_count = False
    form = RegistrationForm
    formfield_overrides = {models.URLField: {"assume_scheme": "https"}}
    list_display = ["issuer", "client_id", "course", "active", "updated_at"]
    list_filter = [("course", ScopedFilter), "active"]
    list_select_related = ["course"]
    search_fields = ["issuer", "client_id"]
    inlines = [DeploymentInline]
    readonly_fields = ["lms_courses"]

    @admin.display(description="bound LMS courses")
    def lms_courses(self, obj):
        if obj is None or obj.pk is None:
            return "-"
        bound = sorted(bound_context_ids(obj))
        url = reverse("admin:lti_context_changelist") + f"?registration__id__exact={obj.pk}"
        return format_html(
            '{} <a href="{}">(all LMS courses seen)</a>', ", ".join(bound) or "none: any LMS course", url
        )

    # Admin runs each save and delete in one transaction: the audit row commits with it.
    def save_model(self, request, obj, form, change):
        super().save_model(request, obj, form, change)
        audit_record(
            actor=request.user,
            event=AuditEvent.Event.LTI_REGISTERED,
            target=obj,
            course=obj.course_id,
            to_state="updated" if change else "created",
            extra={"changed": list(form.changed_data), "via": "admin"},
        )

    def save_formset(self, request, form, formset, change):
        super().save_formset(request, form, formset, change)
        if formset.has_changed():
            audit_record(
                actor=request.user,
                event=AuditEvent.Event.LTI_REGISTERED,
                target=form.instance,
                course=form.instance.course_id,
                to_state="updated",
                extra={
                    "deployments": sorted(form.instance.deployments.values_list("deployment_id", flat=True)),
                },
            )

    def delete_model(self, request, obj):
        audit_record(
            actor=request.user,
            event=AuditEvent.Event.LTI_REGISTERED,
            target=obj,
            course=obj.course_id,
            to_state="deleted",
            extra={"issuer": obj.issuer, "client_id": obj.client_id, "via": "admin"},
        )
        super().delete_model(request, obj)

    def delete_queryset(self, request, queryset):
        for registration in queryset:
            self.delete_model(request, registration)


admin.site.register(Context, ContextAdmin)


@admin.register(ResourceLink)
class ResourceLinkAdmin(CourseScopedAdmin, ReadOnlyAdmin):
    paginator = CappedCountPaginator  # no full COUNT over a big table
    show_full_result_count = False
    course_path = "registration__course_id"
    list_display = ["resource_link_id", "title", "task", "has_line_item", "updated_at"]
    list_filter = [("task__course", ScopedFilter)]
    list_select_related = ["task", "task__course"]
    search_fields = ["resource_link_id", "title"]

    @admin.display(boolean=True, description="grades back")
    def has_line_item(self, link):
        return bool(link.lineitem_url)


class ScoreQueueFilter(admin.SimpleListFilter):
    """Default to what needs a look: scores not (yet) accepted by the LMS."""

    title = "queue"
    parameter_name = "queue"

    def lookups(self, request, model_admin):
        return [("open", "not posted yet"), ("failed", "failed"), ("all", "all")]

    def choices(self, changelist):
        for lookup, title in self.lookup_choices:
            yield {
                "selected": (self.value() or "open") == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request, queryset):
        value = self.value() or "open"
        if value == "open":
            return queryset.filter(status__in=[ScoreStatus.QUEUED, ScoreStatus.POSTING, ScoreStatus.FAILED])
        if value == "failed":
            return queryset.filter(status=ScoreStatus.FAILED)
        return queryset


@admin.register(ScorePost)
class ScorePostAdmin(QueueRowsAdmin, CourseScopedAdmin, ReadOnlyAdmin):
    paginator = CappedCountPaginator  # no full COUNT over a big table
    course_path = "link__task__course_id"
    list_display = [
        "act",
        "student",
        "task",
        "score",
        "grading_progress",
        "status",
        "confirmed_by_refusal",
        "tries",
        "last_http_status",
        "created_at",
    ]
    list_filter = [ScoreQueueFilter, "status", ("link__task__course", ScopedFilter)]
    list_select_related = ["identity__user", "link__task"]
    search_fields = ["identity__user__username", "identity__subject"]
    actions = ["requeue_failed"]
    show_full_result_count = False

    def get_row_actions(self, request):
        failed = lambda row: row.status == ScoreStatus.FAILED  # noqa: E731
        return (RowAction("resend", _("Send again"), run=self._resend, applies=failed, primary=True),)

    def _resend(self, request, row, reason):
        if not score_requeue(score=row, actor=request.user):
            raise Conflict(
                gettext("left as it was: not failed, or a newer score of the student is on its way or posted")
            )
        return gettext("Queued again: %(score)s") % {"score": row}

    @admin.display(description="student", ordering="identity__user__username")
    def student(self, row):
        return row.identity.user.get_username()

    @admin.display(description="task")
    def task(self, row):
        return row.link.task.slug

    @admin.display(description="score")
    def score(self, row):
        return f"{row.score_given}/{row.score_maximum}"

    @admin.action(description="Send the selected failed scores again (with a fresh timestamp)")
    def requeue_failed(self, request, queryset):
        rows = list(queryset.select_related("link__task"))
        sent = sum(score_requeue(score=row, actor=request.user) for row in rows)
        self.message_user(
            request, f"{sent} score(s) queued again.", messages.SUCCESS if sent else messages.WARNING
        )
        if sent < len(rows):
            self.message_user(
                request,
                f"{len(rows) - sent} left as they were: not failed, or a newer score of the same student "
                "and line item is on its way or posted.",
                messages.WARNING,
            )


@admin.register(Identity)
class IdentityAdmin(ReadOnlyAdmin):
    paginator = CappedCountPaginator  # no full COUNT over a big table
    show_full_result_count = False
    list_display = ["subject", "issuer", "user", "name", "last_seen_at"]
    list_select_related = ["user"]
    search_fields = ["subject", "user__username", "name"]

    def has_view_permission(self, request, obj=None):
        # People of every course and platform: superusers only.
        return request.user.is_superuser


@admin.register(ToolKey)
class ToolKeyAdmin(ReadOnlyAdmin):
    paginator = CappedCountPaginator  # no full COUNT over a big table
    show_full_result_count = False
    # The private half is never shown: it is not a field here.
    fields = ["kid", "status", "created_at", "retired_at", "public_pem"]
    list_display = ["kid", "status", "created_at", "retired_at"]

    def has_view_permission(self, request, obj=None):
        return request.user.is_superuser
