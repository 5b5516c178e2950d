"""The lessons work queue in Django admin (SPEC §8): pending drafts with their
redaction marks, source and similar lessons, approved or rejected with a
reason; quarantined lessons; lessons past review; skill candidates; recall
traces (``admin_usage``). Every action goes through a service, which checks
the permission and writes the audit event. Course staff see their courses
(and, read-only, global lessons)."""

from __future__ import annotations

from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.db.models.functions import Substr
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import mark_safe
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from lessons import (
    access,
    admin_usage,  # noqa: F401 -- registers the candidate and trace admins
)
from lessons.admin_filters import QueueFilter, run_each
from lessons.admin_forms import DraftEditForm, LessonAddForm, RejectForm
from lessons.models import (
    Lesson,
    LessonKind,
    LessonRevision,
    LessonStatus,
    RejectReason,
)
from lessons.selectors import similar_lessons
from lessons.services.lifecycle import (
    lesson_approve,
    lesson_approve_and_use,
    lesson_create,
    lesson_inject,
    lesson_keep,
    lesson_quarantine,
    lesson_reject,
    lesson_retire,
)
from lessons.services.revisions import lesson_edit
from tutor.admin_scoping import ActionIdsChecked, CappedCountPaginator, ScopedFilter
from tutor.desk.rows import QueueRowsAdmin, RowAction
from tutor.kernel.errors import DomainError
from tutor.models import AuditEvent

# The start of a lesson's body the queue shows (the list never loads the whole text).
BODY_HEAD_CHARS = 160


@admin.register(Lesson)
class LessonAdmin(ActionIdsChecked, QueueRowsAdmin, admin.ModelAdmin):
    paginator = CappedCountPaginator  # no full COUNT over a big table
    # Fits 1366 px (SPEC §8): the buttons first, then the lesson as staff judge it.
    list_display = ["act", "title", "body_head", "course_label", "status", "redaction_marks", "marks"]
    list_filter = [QueueFilter, ("course", ScopedFilter), "kind", "source"]
    list_select_related = ["course"]
    search_fields = ["title"]
    ordering = ["created_at", "id"]  # a queue: oldest first
    show_full_result_count = False
    actions = ["approve", "reject_with_reason", "inject", "quarantine", "keep_injected", "retire"]
    readonly_fields = [
        "title",
        "body",
        "course",
        "status",
        "kind",
        "tags",
        "symptoms",
        "redaction_marks",
        "source_details",
        "similar",
        "hit_count",
        "last_hit",
        "review_by",
        "tokens",
        "helpful",
        "harmful",
        "harmful_kept",
        "reject_reason",
        "reject_note",
        "created_by",
        "created_at",
        "injected_at",
        "revisions",
        "history",
    ]

    def get_queryset(self, request):
        qs = super().get_queryset(request)
        if not request.user.is_superuser:
            qs = qs.filter(Q(course__isnull=True) | Q(course_id__in=access.staff_course_ids(request.user)))
        match = request.resolver_match
        if match is not None and match.url_name.endswith("changelist"):
            # Heavy text stays out of the list; the body's start is shown.
            qs = qs.defer("body", "shingles").annotate(body_start=Substr("body", 1, BODY_HEAD_CHARS + 1))
        return qs

    def has_decide_permission(self, request) -> bool:
        return access.is_lessons_staff(request.user)

    def get_row_actions(self, request):
        def status_in(*statuses):
            return lambda lesson: lesson.status in statuses

        pending = status_in(LessonStatus.PENDING)
        codes = [(c, lbl) for c, lbl in RejectReason.choices if c != RejectReason.OTHER]
        actions = [
            RowAction(
                "approve_use", _("Approve and use"), run=self._approve_and_use, applies=pending, primary=True
            ),
            RowAction("approve", _("Approve"), run=self._approve, applies=pending),
            RowAction("reject", _("Reject"), run=self._reject, reason=codes, applies=pending),
            RowAction(
                "use",
                _("Use"),
                run=self._use,
                applies=status_in(LessonStatus.APPROVED, LessonStatus.QUARANTINED),
                primary=True,
            ),
            RowAction(
                "retire",
                _("Retire"),
                run=self._retire,
                applies=status_in(LessonStatus.QUARANTINED),
            ),
        ]
        if request.user.is_superuser:  # held global lessons are a superuser's
            held = lambda lesson: lesson.course_id is None and lesson.status == LessonStatus.INJECTED  # noqa: E731
            actions += [
                RowAction("keep", _("Keep in use"), run=self._keep, applies=held),
                RowAction("quarantine", _("Quarantine"), run=self._quarantine, applies=held),
            ]
        return tuple(actions)

    def get_urls(self):
        edit = path(
            "<path:object_id>/edit/",
            self.admin_site.admin_view(self.edit_view),
            name="lessons_lesson_edit",
        )
        return [edit, *super().get_urls()]

    def edit_view(self, request, object_id):
        """Edit a pending draft (SPEC §6): a new revision through ``lesson_edit``."""
        lesson = self.get_object(request, object_id)
        if lesson is None:
            raise Http404("no such lesson")
        if not (self.has_decide_permission(request) and access.can_manage(request.user, lesson.course_id)):
            raise PermissionDenied
        page = reverse("admin:lessons_lesson_change", args=[lesson.pk])
        if lesson.status != LessonStatus.PENDING:
            self.message_user(request, gettext("Only a pending draft can be edited."), messages.ERROR)
            return HttpResponseRedirect(page)
        form = DraftEditForm(request.POST or None, initial=DraftEditForm.initial_for(lesson))
        if request.method == "POST" and form.is_valid():
            data = form.cleaned_data
            try:
                revision = lesson_edit(
                    lesson=lesson,
                    actor=request.user,
                    title=data["title"],
                    body=data["body"],
                    tags=data["tags_text"],
                    symptoms=data["symptoms_text"],
                    note=data["note"],
                )
            except DomainError as exc:
                self.message_user(request, exc.public_message(), messages.ERROR)
                return HttpResponseRedirect(page)
            if revision is None:
                self.message_user(request, gettext("Nothing changed."), messages.INFO)
            else:
                said = gettext("Saved as revision %(number)s") % {"number": revision.number}
                self.message_user(request, f"{said}: {lesson.title}", messages.SUCCESS)
            return HttpResponseRedirect(page)
        context = {
            **self.admin_site.each_context(request),
            "title": gettext("Edit draft"),
            "form": form,
            "lesson": lesson,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/lessons/lesson/edit.html", context)

    def _said(self, verb, lesson) -> str:
        return f"{verb}: {lesson.title}"

    def _approve_and_use(self, request, lesson, reason):
        lesson_approve_and_use(lesson=lesson, actor=request.user)
        return self._said(gettext("Approved and in use"), lesson)

    def _approve(self, request, lesson, reason):
        lesson_approve(lesson=lesson, actor=request.user)
        return self._said(gettext("Approved"), lesson)

    def _reject(self, request, lesson, reason):
        lesson_reject(lesson=lesson, actor=request.user, reason=reason)
        return self._said(gettext("Rejected (%(reason)s)") % {"reason": reason}, lesson)

    def _use(self, request, lesson, reason):
        lesson_inject(lesson=lesson, actor=request.user)
        return self._said(gettext("In use"), lesson)

    def _retire(self, request, lesson, reason):
        lesson_retire(lesson=lesson, actor=request.user)
        return self._said(gettext("Retired"), lesson)

    def _keep(self, request, lesson, reason):
        lesson_keep(lesson=lesson, actor=request.user)
        return self._said(gettext("Kept in use"), lesson)

    def _quarantine(self, request, lesson, reason):
        lesson_quarantine(lesson=lesson, actor=request.user)
        return self._said(gettext("Quarantined"), lesson)

    @admin.display(description=_("lesson"))
    def body_head(self, lesson: Lesson) -> str:
        start = getattr(lesson, "body_start", None)
        if start is None:
            return ""
        start = " ".join(start.split())
        return start if len(start) <= BODY_HEAD_CHARS else start[: BODY_HEAD_CHARS - 1] + "…"

    @admin.display(description=_("marks"))
    def marks(self, lesson: Lesson) -> str:
        """helpful / harmful marks and hits: what says a lesson works."""
        return f"+{lesson.helpful} −{lesson.harmful} · {lesson.hit_count}×"

    def get_actions(self, request):
        actions = super().get_actions(request)
        if not request.user.is_superuser:
            actions.pop("keep_injected", None)  # global lessons are a superuser's
        return actions

    # --- permissions: records change only through the actions' services ------------

    def has_add_permission(self, request):
        return access.is_lessons_staff(request.user)

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def get_form(self, request, obj=None, change=False, **kwargs):
        if obj is None:
            form = LessonAddForm

            class RequestForm(form):
                def __init__(self, *args, **kw):
                    super().__init__(*args, request=request, **kw)

            kwargs["form"] = RequestForm
            kwargs["fields"] = None
        return super().get_form(request, obj, change, **kwargs)

    def get_fields(self, request, obj=None):
        if obj is None:
            return ["course", "title", "body", "tags_text", "symptoms_text", "kind", "review_by"]
        return self.readonly_fields

    def get_readonly_fields(self, request, obj=None):
        return [] if obj is None else self.readonly_fields

    def save_model(self, request, obj, form, change):
        data = form.cleaned_data
        created = lesson_create(
            actor=request.user,
            course=data.get("course"),
            title=data["title"],
            body=data["body"],
            tags=data["tags_text"],
            symptoms=data["symptoms_text"],
            kind=data.get("kind") or LessonKind.NOTE,
            review_by=data.get("review_by"),
        )
        # The admin logs and redirects with the object it saved.
        obj.pk, obj._state.adding = created.pk, False

    # --- columns and read-only fields ------------------------------------------------

    @admin.display(description="course", ordering="course__slug")
    def course_label(self, lesson: Lesson) -> str:
        return lesson.course.slug if lesson.course_id else "(global)"

    @admin.display(description="redactions", ordering="redactions")
    def redaction_marks(self, lesson: Lesson) -> str:
        if not lesson.redactions:
            return "-"
        kinds = ", ".join(f"{kind} ×{n}" for kind, n in sorted((lesson.redaction_kinds or {}).items()))
        return f"{lesson.redactions} ({kinds})" if kinds else str(lesson.redactions)

    @admin.display(description="source")
    def source_details(self, lesson: Lesson) -> str:
        parts = [lesson.get_source_display()]
        if lesson.source_rubric_id:
            parts.append(f"criterion {lesson.source_rubric_id}")
        if lesson.source_attempt_id:
            url = reverse("admin:feedback_reviewattempt_change", args=[lesson.source_attempt_id])
            return format_html(
                "{} — <a href='{}'>attempt {}</a>", ", ".join(parts), url, lesson.source_attempt_id
            )
        return ", ".join(parts)

    @admin.display(description="similar existing lessons")
    def similar(self, lesson: Lesson):
        found = similar_lessons(lesson)
        if not found:
            return "none"
        return format_html_join(
            mark_safe("<br>"),
            "<a href='{}'>{}</a> ({}, similarity {})",
            (
                (
                    reverse("admin:lessons_lesson_change", args=[other.pk]),
                    other.title,
                    other.status,
                    f"{score:.2f}",
                )
                for other, score in found
            ),
        )

    @admin.display(description="revisions")
    def revisions(self, lesson: Lesson):
        """The draft's text as captured and as each edit left it; the edit link while pending."""
        found = LessonRevision.objects.filter(lesson=lesson).select_related("author")

        def by(r: LessonRevision) -> str:
            if r.author_id:
                return r.author.username
            return lesson.get_source_display() if r.number == 1 else "-"

        rows = format_html_join(
            "",
            "<details><summary>{}. {} by {}: {}</summary><pre>{}</pre></details>",
            ((r.number, r.created_at.strftime("%Y-%m-%d %H:%M"), by(r), r.title, r.body) for r in found),
        )
        edit = ""
        if lesson.status == LessonStatus.PENDING:
            url = reverse("admin:lessons_lesson_edit", args=[lesson.pk])
            edit = format_html("<a class='button' href='{}'>{}</a>", url, gettext("Edit draft"))
        if not rows and not edit:
            return "-"
        return format_html("{}{}", rows, edit)

    @admin.display(description="audit trail")
    def history(self, lesson: Lesson):
        events = AuditEvent.objects.filter(
            Q(event__startswith="lesson_") | Q(event=AuditEvent.Event.DELTA_APPLIED), target_id=str(lesson.pk)
        )
        rows = [
            (
                e.created_at.strftime("%Y-%m-%d %H:%M"),
                e.event,
                e.actor_label,
                e.from_state or "-",
                e.to_state or "-",
                e.reason,
            )
            for e in events.order_by("created_at", "id")[:50]
        ]
        if not rows:
            return "-"
        return format_html_join(mark_safe("<br>"), "{} {} by {}: {} → {} {}", rows)

    # --- actions: each a service call ------------------------------------------------

    @admin.action(description="Approve selected pending lessons")
    def approve(self, request, queryset):
        run_each(
            self,
            request,
            queryset,
            "approved",
            lambda lesson: lesson_approve(lesson=lesson, actor=request.user),
        )

    @admin.action(description="Reject selected pending lessons with a reason…")
    def reject_with_reason(self, request, queryset):
        form = RejectForm(request.POST if "apply" in request.POST else None)
        if "apply" in request.POST and form.is_valid():
            reason, note = form.cleaned_data["reason"], form.cleaned_data["note"]
            run_each(
                self,
                request,
                queryset,
                "rejected",
                lambda lesson: lesson_reject(lesson=lesson, actor=request.user, reason=reason, note=note),
            )
            return None
        context = {
            **self.admin_site.each_context(request),
            "title": "Reject lessons",
            "form": form,
            "lessons": queryset,
            "action_checkbox_name": admin.helpers.ACTION_CHECKBOX_NAME,
            "opts": self.model._meta,
        }
        return TemplateResponse(request, "admin/lessons/lesson/reject.html", context)

    @admin.action(description="Inject selected approved or quarantined lessons")
    def inject(self, request, queryset):
        run_each(
            self,
            request,
            queryset,
            "injected",
            lambda lesson: lesson_inject(lesson=lesson, actor=request.user),
        )

    @admin.action(description="Quarantine selected injected lessons")
    def quarantine(self, request, queryset):
        run_each(
            self,
            request,
            queryset,
            "quarantined",
            lambda lesson: lesson_quarantine(lesson=lesson, actor=request.user),
        )

    @admin.action(description="Keep selected held global lessons injected (until a new harmful mark)")
    def keep_injected(self, request, queryset):
        run_each(
            self,
            request,
            queryset,
            "kept injected",
            lambda lesson: lesson_keep(lesson=lesson, actor=request.user),
        )

    @admin.action(description="Retire selected lessons")
    def retire(self, request, queryset):
        run_each(
            self,
            request,
            queryset,
            "retired",
            lambda lesson: lesson_retire(lesson=lesson, actor=request.user),
        )
