"""The corrections' read-only records in Django admin (SPEC §5, §8): corrections,
process rules, the detection outbox (with the action that sends given-up
detections again) and memory items."""

from __future__ import annotations

from django.contrib import admin, messages

from corrections.admin_display import short
from corrections.conf import setting
from corrections.models import Correction, MemoryItem, PendingDetection, ProcessRule
from corrections.services.dispatch import detections_send_again
from tutor.admin_scoping import CappedCountPaginator, CourseScopedAdmin, ReadOnlyAdmin, ScopedFilter


@admin.register(Correction)
class CorrectionAdmin(CourseScopedAdmin, ReadOnlyAdmin):
    paginator = CappedCountPaginator  # no full COUNT over a big table
    list_display = ["created_at", "user", "type", "confidence", "topic", "statement_short", "tiers", "case"]
    list_filter = ["type", "source", "classifier", ("course", ScopedFilter)]
    list_select_related = ["user", "case"]
    search_fields = ["user__username", "topic"]
    show_full_result_count = False  # a big table: no second COUNT over all rows

    def get_queryset(self, request):
        return super().get_queryset(request).defer("content", "original_statement")

    @admin.display(description="corrected statement")
    def statement_short(self, correction):
        return short(correction.corrected_statement, 80)


@admin.register(ProcessRule)
class ProcessRuleAdmin(CourseScopedAdmin, ReadOnlyAdmin):
    paginator = CappedCountPaginator  # no full COUNT over a big table
    show_full_result_count = False
    list_display = ["statement", "course", "approved_by", "created_at"]
    list_filter = [("course", ScopedFilter)]
    list_select_related = ["course", "approved_by"]


class GivenUpFilter(admin.SimpleListFilter):
    """Rows the sweep sent ``CORRECTIONS_DETECTION_MAX_SENDS`` times: it sends them no more."""

    title = "sweep"
    parameter_name = "given_up"

    def lookups(self, request, model_admin):
        return [("yes", "Given up (sent the most times)"), ("no", "Still sent by the sweep")]

    def queryset(self, request, queryset):
        most = setting("CORRECTIONS_DETECTION_MAX_SENDS")
        if self.value() == "yes":
            return queryset.filter(sends__gte=most)
        if self.value() == "no":
            return queryset.filter(sends__lt=most)
        return queryset


@admin.register(PendingDetection)
class PendingDetectionAdmin(ReadOnlyAdmin):
    """The detection outbox: user messages whose detection has not run yet.
    An operator's view (superusers): a row normally lives for the seconds the
    worker takes; rows that stay, refused publishes or many sends mean the
    broker or the workers are down, beat is not running the sweep, or the
    task fails on that message."""

    paginator = CappedCountPaginator
    list_display = ["message_id", "due_at", "failures", "sends", "created_at", "correlation_id"]
    list_filter = [GivenUpFilter]
    ordering = ["due_at"]
    show_full_result_count = False
    actions = ["send_again"]

    def has_view_permission(self, request, obj=None):
        return request.user.is_superuser

    def has_resend_permission(self, request):
        return request.user.is_superuser

    @admin.action(description="Send the selected detections again", permissions=["resend"])
    def send_again(self, request, queryset):
        count = detections_send_again(message_ids=queryset.values_list("message_id", flat=True))
        self.message_user(
            request, f"{count} detection(s) due now; the next sweep sends them.", messages.SUCCESS
        )


@admin.register(MemoryItem)
class MemoryItemAdmin(ReadOnlyAdmin):
    """Students' own memory: superusers only (course staff decide facts, not memories)."""

    paginator = CappedCountPaginator  # no full COUNT over a big table
    list_display = ["created_at", "user", "tier", "kind", "content", "expires_at"]
    list_filter = ["tier", "kind"]
    list_select_related = ["user"]
    show_full_result_count = False

    def has_view_permission(self, request, obj=None):
        return request.user.is_superuser
