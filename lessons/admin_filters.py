"""The lessons queue's filter and the admin's bulk-action runner (SPEC §8)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.utils import timezone
from django.utils.translation import gettext_lazy as _

from lessons import access
from lessons.desk import harmful_queue
from lessons.models import LessonStatus
from lessons.services.lifecycle import held_global_lessons
from tutor.admin_scoping import apply_each


def run_each(modeladmin, request, queryset, label: str, service) -> None:
    """Apply ``service`` to each selected lesson; report what moved and what was refused."""
    done, refused = apply_each(queryset, service)
    if done:
        modeladmin.message_user(request, f"{label}: {done}", messages.SUCCESS)
    for line in refused:
        modeladmin.message_user(request, line, messages.ERROR)


class QueueFilter(admin.SimpleListFilter):
    """What needs a decision, by default the pending drafts. Superusers also
    get the global lessons marked harmful often enough for the automatic
    quarantine but from too few courses (SPEC §6; the rule is
    ``lesson_quarantine_if_harmful``'s): still injected, a person decides."""

    title = "queue"
    parameter_name = "queue"
    DEFAULT = "pending"

    HARMFUL_GLOBAL = "harmful_global"
    HARMFUL = "harmful"  # the desk's card (lessons.desk.harmful_queue)

    def lookups(self, request, model_admin):
        found = [
            ("pending", _("Pending review")),
            ("approved", _("Approved, not in use")),
            (self.HARMFUL, _("Harmful (quarantined or held)")),
            ("quarantined", _("Quarantined")),
            ("review_due", _("Past review_by")),
            ("injected", _("Injected")),
            ("all", _("All")),
        ]
        if request.user.is_superuser:
            found.insert(4, (self.HARMFUL_GLOBAL, _("Harmful global lessons")))
        return found

    def choices(self, changelist):
        current = self.value() or self.DEFAULT
        for value, label in self.lookup_choices:
            yield {
                "selected": current == value,
                "query_string": changelist.get_query_string({self.parameter_name: value}),
                "display": label,
            }

    def queryset(self, request, queryset):
        value = self.value() or self.DEFAULT
        if value == "all":
            return queryset
        if value == self.HARMFUL:
            scope = None if request.user.is_superuser else access.staff_course_ids(request.user)
            return harmful_queue(queryset, course_ids=scope)
        if value == self.HARMFUL_GLOBAL:
            if not request.user.is_superuser:
                return queryset.none()
            return queryset.filter(pk__in=held_global_lessons().values("pk"))
        if value == "review_due":
            return queryset.filter(
                review_by__lt=timezone.localdate(),
                status__in=[LessonStatus.APPROVED, LessonStatus.INJECTED, LessonStatus.QUARANTINED],
            )
        return queryset.filter(status=value)
