"""Queue rows that act (SPEC §8, turn 3): every queue row carries its
decisions as buttons -- first in the row, so they never hide behind a
horizontal scrollbar -- and the row's page carries the same buttons and a
"next item" link, so a TA walks a queue without going back to the list.

A ``RowAction`` names a decision and the service call behind it; the mixin
renders it in the list (a button of the changelist's own form, which holds
the CSRF token: ``formaction`` sends it to the row's action URL) and on the
change page, and answers ``POST <pk>/act/<name>/`` by calling the service,
telling the result with ``message_user`` and going back to the queue (or on
to the next item). Records stay read-only: the services write and audit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.http import Http404, HttpResponseNotAllowed, HttpResponseRedirect, QueryDict
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.http import url_has_allowed_host_and_scheme
from django.utils.safestring import mark_safe
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from tutor.kernel.errors import DomainError

# How far "next item" looks along a queue (one query of ids).
NEXT_ITEM_WINDOW = 500
# A reason typed in a row: what the decision services keep at most.
ROW_REASON_MAX_CHARS = 2000


@dataclass(frozen=True)
class RowAction:
    """One decision on a queue row.

    ``run(request, obj, reason)`` calls the service and returns the message
    for staff; a ``DomainError`` is shown as the refusal. ``reason``: None
    (no reason), ``"text"`` (a required short text) or a list of
    ``(code, label)`` choices (a reason code). ``href(obj)`` makes the action
    a link to a page of its own (the verdict form) instead of a POST.
    ``applies(obj)`` hides it on rows it cannot apply to."""

    name: str
    label: Any
    run: Callable | None = None
    reason: Any = None
    href: Callable | None = None
    applies: Callable = field(default=lambda obj: True)
    primary: bool = False


class QueueRowsAdmin:
    """Mix into a ``ModelAdmin`` before it; set ``row_actions`` (or override
    ``get_row_actions``) and put ``"act"`` first in ``list_display``."""

    row_actions: tuple[RowAction, ...] = ()
    change_form_template = "admin/queue_change_form.html"
    change_list_template = "admin/queue_change_list.html"

    def get_row_actions(self, request) -> tuple[RowAction, ...]:
        return self.row_actions

    # --- the list's first column ----------------------------------------------------

    def get_list_display(self, request):
        """``"act"`` in ``list_display`` becomes the row's buttons, bound to
        this request's permissions (a ModelAdmin serves every thread)."""
        actions = self.get_row_actions(request) if self.has_decide_permission(request) else ()
        # The decision returns to this list as it is filtered now.
        filters = request.GET.urlencode()

        def act(obj):
            return self.action_buttons(obj, actions, scope=f"-{obj.pk}", filters=filters)

        act.short_description = _("act")
        return [act if column == "act" else column for column in super().get_list_display(request)]

    @admin.display(description=_("act"))
    def act(self, obj):
        """Stands for the column in checks; ``get_list_display`` renders it."""
        return ""

    def get_list_display_links(self, request, list_display):
        # The buttons are not a link to the item: the next column is.
        links = super().get_list_display_links(request, list_display)
        if links and callable(links[0]) and links[0].__name__ == "act":
            return list(list_display[1:2])
        return links

    def action_buttons(self, obj, actions, *, scope: str = "", filters: str = "") -> str:
        """The buttons of ``obj``'s actions; a reason field (``reason<scope>``)
        before the buttons that need one. ``scope`` keeps the rows of one
        list form apart."""
        usable = [a for a in actions if a.applies(obj)]
        if not usable:
            return mark_safe('<span class="row-acts-none">–</span>')
        parts = []
        choices = next((a.reason for a in usable if isinstance(a.reason, list | tuple)), None)
        wants_text = any(a.reason == "text" for a in usable)
        if choices:
            options = format_html_join("", '<option value="{}">{}</option>', ((c, lbl) for c, lbl in choices))
            parts.append(
                format_html(
                    '<select name="reason{}" class="row-reason" aria-label="{}">{}</select>',
                    scope,
                    gettext("reason"),
                    options,
                )
            )
        elif wants_text:
            parts.append(
                format_html(
                    '<input name="reason{}" class="row-reason" maxlength="{}" placeholder="{}"'
                    ' aria-label="{}">',
                    scope,
                    ROW_REASON_MAX_CHARS,
                    gettext("reason"),
                    gettext("reason"),
                )
            )
        for action in usable:
            css = "button row-act" + (" default" if action.primary else "")
            if action.href is not None:
                parts.append(
                    format_html(
                        '<a class="{}" data-act="{}" href="{}">{}</a>',
                        css,
                        action.name,
                        action.href(obj),
                        action.label,
                    )
                )
            else:
                url = reverse(f"admin:{self._url_prefix()}_act", args=[obj.pk, action.name])
                if filters:
                    url += f"?_changelist_filters={_quote(filters)}"
                parts.append(
                    format_html(
                        '<button type="submit" class="{}" data-act="{}" formaction="{}" formmethod="post"'
                        ' name="row" value="{}">{}</button>',
                        css,
                        action.name,
                        url,
                        scope,
                        action.label,
                    )
                )
        buttons = format_html_join("", "{}", ((p,) for p in parts))
        return format_html('<div class="row-acts">{}</div>', buttons)

    # --- urls: act and next -----------------------------------------------------------

    def _url_prefix(self) -> str:
        return f"{self.model._meta.app_label}_{self.model._meta.model_name}"

    def get_urls(self):
        prefix = self._url_prefix()
        return [
            path(
                "<path:object_id>/act/<str:name>/",
                self.admin_site.admin_view(self.act_view),
                name=f"{prefix}_act",
            ),
            path("<path:object_id>/next/", self.admin_site.admin_view(self.next_view), name=f"{prefix}_next"),
            *super().get_urls(),
        ]

    def act_view(self, request, object_id, name):
        if request.method != "POST":
            return HttpResponseNotAllowed(["POST"])
        action = next((a for a in self.get_row_actions(request) if a.name == name and a.run), None)
        if action is None or not self.has_decide_permission(request):
            raise Http404("no such action")
        obj = self.get_object(request, object_id)
        if obj is None:
            raise Http404("no such item")
        scope = request.POST.get("row", "")
        reason = (request.POST.get(f"reason{scope}") or "").strip()[:ROW_REASON_MAX_CHARS]
        if action.reason and not reason:
            self.message_user(request, gettext("Give a reason for this decision."), messages.ERROR)
            return HttpResponseRedirect(self._back(request, obj, after=False))
        try:
            said = action.run(request, obj, reason)
        except DomainError as exc:
            self.message_user(request, f"{obj}: {exc.public_message()}", messages.ERROR)
            return HttpResponseRedirect(self._back(request, obj, after=False))
        self.message_user(request, said, messages.SUCCESS)
        return HttpResponseRedirect(self._back(request, obj, after=True))

    def _queue_filters(self, request) -> str:
        """The list's query string this item was opened from (Django keeps
        it in ``_changelist_filters``); the queue's default without one."""
        return request.GET.get("_changelist_filters") or request.POST.get("_changelist_filters") or ""

    def _back(self, request, obj, *, after: bool) -> str:
        """Where a decision returns: the next item when it was made on an
        item's page (``go=next``), else the list it came from."""
        wanted = request.POST.get("next") or ""
        if wanted and url_has_allowed_host_and_scheme(wanted, {request.get_host()}, request.is_secure()):
            return wanted
        filters = self._queue_filters(request)
        if request.POST.get("go") == "next" and after:
            return self.next_url(obj, filters)
        listing = reverse(f"admin:{self._url_prefix()}_changelist")
        return f"{listing}?{filters}" if filters else listing

    def next_url(self, obj, filters: str) -> str:
        url = reverse(f"admin:{self._url_prefix()}_next", args=[obj.pk])
        return f"{url}?_changelist_filters={_quote(filters)}" if filters else url

    def queue_rows(self, request, filters: str):
        """The rows of the list ``filters`` selects, in the list's order."""
        listing = request.GET.copy()
        listing.clear()
        listing.update(QueryDict(filters))
        original = request.GET
        request.GET = listing
        try:
            cl: ChangeList = self.get_changelist_instance(request)
            return cl.get_queryset(request)
        finally:
            request.GET = original

    def next_view(self, request, object_id):
        """The item after ``object_id`` in its queue, or the first one still
        waiting when it left the queue; the list when none is left."""
        filters = self._queue_filters(request)
        ids = [
            str(pk)
            for pk in self.queue_rows(request, filters).values_list("pk", flat=True)[:NEXT_ITEM_WINDOW]
        ]
        current = str(object_id)
        following = ids[ids.index(current) + 1 :] if current in ids else ids
        following = [pk for pk in following if pk != current]
        listing = reverse(f"admin:{self._url_prefix()}_changelist")
        if not following:
            self.message_user(request, gettext("Nothing else waits in this queue."), messages.INFO)
            return HttpResponseRedirect(f"{listing}?{filters}" if filters else listing)
        url = reverse(f"admin:{self._url_prefix()}_change", args=[following[0]])
        return HttpResponseRedirect(f"{url}?_changelist_filters={_quote(filters)}" if filters else url)

    # --- the item's page: the same buttons, and "next item" ---------------------------

    def change_view(self, request, object_id, form_url="", extra_context=None):
        extra = dict(extra_context or {})
        obj = self.get_object(request, object_id)
        if obj is not None:
            actions = self.get_row_actions(request) if self.has_decide_permission(request) else ()
            extra["queue_actions"] = self.action_buttons(obj, actions)
            extra["queue_filters"] = self._queue_filters(request)
            extra["queue_next_url"] = self.next_url(obj, extra["queue_filters"])
        return super().change_view(request, object_id, form_url, extra)


def _quote(text: str) -> str:
    return quote(text, safe="")
