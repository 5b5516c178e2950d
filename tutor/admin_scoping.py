"""Admin helpers shared by the apps: course scoping, read-only records, the
"needs a decision" default filter and lists that stay cheap on big tables."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.utils.functional import cached_property

from tutor import access
from tutor.kernel.errors import DomainError

# Lists on big tables count at most this many rows (SPEC §8: no full counts).
ADMIN_COUNT_CAP = 10_000


class ScopedFilter(admin.RelatedOnlyFieldListFilter):
    """A related-object filter offering only objects that occur in the rows the
    user may see, so another course's name never shows in the sidebar."""


class ActionIdsChecked:
    """Mix into a ``ModelAdmin``: an action posted with an id no row of the
    list can have (not a number, a NUL, out of range: the database would
    raise) changes nothing and says so, never a server error (SPEC §7)."""

    def response_action(self, request, queryset):
        for value in request.POST.getlist(admin.helpers.ACTION_CHECKBOX_NAME):
            try:
                self.model._meta.pk.clean(value, None)
            except ValidationError:
                self.message_user(request, f"{value!r} is not an item of this list.", messages.ERROR)
                return None
        return super().response_action(request, queryset)


class CourseScopedAdmin(ActionIdsChecked, admin.ModelAdmin):
    """Non-superuser staff see only rows of courses they are staff of (SPEC §8).

    ``course_path`` is the lookup from the model to its course id.
    """

    course_path = "course_id"

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        if request.user.is_superuser:
            return qs
        return qs.filter(**{f"{self.course_path}__in": access.staff_course_ids(request.user)})

    def has_decide_permission(self, request) -> bool:
        """Queue actions (verdicts, re-reviews, case and lesson decisions) are
        for superusers and course staff; the rows they act on are scoped."""
        return request.user.is_superuser or access.staff_course_ids(request.user).exists()


class ReadOnlyAdmin(admin.ModelAdmin):
    """History is never edited in admin: no add, change or delete."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


class CappedCountPaginator(Paginator):
    """Counts at most ``ADMIN_COUNT_CAP`` + 1 rows: a changelist of 100k
    attempts must not count them all on every page view."""

    @cached_property
    def count(self):
        return self.object_list[: ADMIN_COUNT_CAP + 1].count()


class DefaultChoiceFilter(admin.SimpleListFilter):
    """A list filter with a default choice other than "All": a work queue
    opens on what needs a decision (healthchecks' admin), and "all" is one
    click away. Subclasses set ``default`` and list it in ``lookups``."""

    default = "needs"
    all_value = "all"

    def value(self):
        return super().value() or self.default

    def choices(self, changelist):
        for lookup, title in self.lookup_choices:
            yield {
                "selected": self.value() == str(lookup),
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }


def apply_each(queryset, service) -> tuple[int, list[str]]:
    """Run a queue action's ``service`` on each selected row: how many moved,
    and one "row: reason" line per row the service refused."""
    done, refused = 0, []
    for obj in queryset:
        try:
            service(obj)
        except DomainError as exc:
            refused.append(f"{obj}: {exc.public_message()}")
        else:
            done += 1
    return done, refused
