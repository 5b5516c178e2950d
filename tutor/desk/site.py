"""The admin site that opens on the staff desk (SPEC §8, turn 3).

``/admin/`` is the desk: one card per registered work queue with its count
of waiting work and the age of its oldest item, scoped to the courses the
signed-in person is staff of (superusers: every course). The stock index
with every admin page moves to ``/admin/all/`` and stays listed under the
cards, so nothing the admin offered before is further than a click away.
"""

from __future__ import annotations

from django.contrib import admin
from django.template.response import TemplateResponse
from django.urls import path
from django.utils.timezone import now
from django.utils.translation import gettext_lazy as _

from tutor import access
from tutor.desk.queues import desk_counts


def staff_scope(user):
    """The course ids a person's desk counts (None: every course)."""
    return None if user.is_superuser else access.staff_course_ids(user)


class DeskAdminSite(admin.AdminSite):
    site_header = _("Tutor staff desk")
    site_title = _("Tutor admin")
    index_title = _("Work waiting for you")
    # The desk is the way around; the sidebar would take 1366 px lists' room.
    enable_nav_sidebar = False

    def get_urls(self):
        return [path("all/", self.admin_view(self.all_pages), name="all_pages"), *super().get_urls()]

    def index(self, request, extra_context=None):
        """The desk: one query per queue (``desk_counts``), then the admin pages."""
        cards = desk_counts(course_ids=staff_scope(request.user))
        context = {
            **self.each_context(request),
            "title": self.index_title,
            "subtitle": None,
            "cards": cards,
            "waiting": sum(card.count for card in cards),
            "now": now(),
            "app_list": self.get_app_list(request),
            **(extra_context or {}),
        }
        request.current_app = self.name
        return TemplateResponse(request, "admin/desk.html", context)

    def all_pages(self, request):
        """The stock admin index: every model page, grouped by app."""
        return super().index(request, extra_context={"title": _("All admin pages")})
