"""The correction review queue in Django admin (SPEC §8).

Course staff see what needs a decision first: undecided cases with their
topic, the active fact, each proposed statement with its supporters and their
own words, and the case's age. The actions call the services (which check
the staff member's course, the lease and the case's state, and write the
audit rows) and end with ``message_user``. Facts and cases show their whole
history: who proposed, who supported, who decided, why and when. The
changelists keep a constant number of queries (related rows selected or
prefetched, no per-row query). The read-only records are in ``admin_records``.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.contenttypes.models import ContentType
from django.db.models import Prefetch
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.timesince import timesince
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from corrections import admin_records  # noqa: F401 -- registers the read-only record admins
from corrections.admin_decide import CaseDecideMixin
from corrections.admin_display import short
from corrections.models import (
    UNDECIDED_CASE_STATUSES,
    CorrectionCase,
    Fact,
    FactStatus,
    FactSupporter,
    Proposal,
    ProposalSupporter,
)
from corrections.services.cases import case_accept, case_claim, case_dispute, case_reject
from corrections.services.facts import fact_reject, fact_set_pinned, fact_verify
from tutor import access
from tutor.admin_scoping import CappedCountPaginator, CourseScopedAdmin, ScopedFilter, apply_each
from tutor.desk.rows import QueueRowsAdmin, RowAction
from tutor.models import AuditEvent


def _undecided(case) -> bool:
    return case.status in UNDECIDED_CASE_STATUSES


def history_table(obj):
    """Every audit row whose target is ``obj``, oldest first."""
    events = AuditEvent.objects.filter(
        target_type=ContentType.objects.get_for_model(obj), target_id=str(obj.pk)
    ).order_by("created_at", "id")
    rows = format_html_join(
        "",
        "<tr><td>{}</td><td>{}</td><td>{}</td><td>{} → {}</td><td>{}</td></tr>",
        (
            (
                f"{e.created_at:%Y-%m-%d %H:%M:%S}",
                e.actor_label,
                e.event,
                e.from_state or "–",
                e.to_state,
                e.reason,
            )
            for e in events
        ),
    )
    return format_html(
        "<table><tr><th>when</th><th>who</th><th>event</th><th>change</th><th>why</th></tr>{}</table>", rows
    )


class DecisionForm(helpers.ActionForm):
    reason = forms.CharField(
        required=False,
        max_length=2000,
        widget=forms.TextInput(attrs={"placeholder": "reason (required to decide)", "size": 40}),
    )


class NeedsDecisionFilter(admin.SimpleListFilter):
    """The queue opens on what needs a decision."""

    title = _("decision")
    parameter_name = "decision"

    def lookups(self, request, model_admin):
        return [("needed", _("Needs a decision")), ("decided", _("Decided")), ("all", _("All"))]

    def choices(self, changelist):
        value = self.value() or "needed"
        for lookup, title in self.lookup_choices:
            yield {
                "selected": value == lookup,
                "query_string": changelist.get_query_string({self.parameter_name: lookup}),
                "display": title,
            }

    def queryset(self, request, queryset):
        value = self.value() or "needed"
        if value == "needed":
            return queryset.filter(status__in=UNDECIDED_CASE_STATUSES)
        if value == "decided":
            return queryset.exclude(status__in=UNDECIDED_CASE_STATUSES)
        return queryset


class DecidingAdmin(CourseScopedAdmin):
    """Decisions are made through actions that call the services; records are read-only."""

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    def has_decide_permission(self, request) -> bool:
        return bool(request.user.is_superuser or access.staff_course_ids(request.user).exists())

    def _apply(self, request, queryset, verb: str, service) -> None:
        done, refused = apply_each(queryset, service)
        if done:
            self.message_user(request, f"{verb} {done} item(s).", messages.SUCCESS)
        elif not refused:
            self.message_user(
                request, f"Nothing {verb.lower()}: no selected item is in this list.", messages.WARNING
            )
        for line in refused:
            self.message_user(request, f"Not {verb.lower()}: {line}", messages.ERROR)

    def _reason(self, request) -> str | None:
        reason = (request.POST.get("reason") or "").strip()
        if not reason:
            self.message_user(
                request, "Give a reason for the decision (the field next to the action).", messages.ERROR
            )
            return None
        return reason


@admin.register(CorrectionCase)
class CorrectionCaseAdmin(CaseDecideMixin, QueueRowsAdmin, DecidingAdmin):
    paginator = CappedCountPaginator  # no full COUNT over a big table
    show_full_result_count = False
    # Fits 1366 px (SPEC §8): the buttons first; the topic, what is active and what is proposed.
    list_display = ["act", "topic_display", "active_fact_display", "proposals_display", "age"]
    list_filter = [NeedsDecisionFilter, "kind", "status", ("course", ScopedFilter)]
    list_select_related = ["course", "active_fact", "claimed_by", "decided_by"]
    search_fields = ["topic"]
    ordering = ["created_at"]
    action_form = DecisionForm
    actions = ["claim_cases", "accept_cases", "reject_cases", "dispute_cases"]
    fields = [
        "course",
        "kind",
        "topic",
        "status",
        "active_fact",
        "claimed_by",
        "claimed_until",
        "decided_by",
        "decided_at",
        "reason",
        "result_fact",
        "created_at",
        "proposals_table",
        "history",
    ]
    readonly_fields = fields

    def get_queryset(self, request):
        supporters = ProposalSupporter.objects.select_related("user", "correction").order_by(
            "created_at", "id"
        )
        proposals = Proposal.objects.order_by("-supporter_count", "created_at").prefetch_related(
            Prefetch("supporters", queryset=supporters)
        )
        return super().get_queryset(request).prefetch_related(Prefetch("proposals", queryset=proposals))

    def get_row_actions(self, request):
        return (
            # Which proposal, staff's own wording, a dispute note: the decision page.
            RowAction("decide", _("Decide…"), href=self.decide_url, applies=_undecided, primary=True),
            RowAction("accept", _("Accept"), run=self._case(case_accept, _("Accepted")), reason="text"),
            RowAction("reject", _("Reject"), run=self._case(case_reject, _("Rejected")), reason="text"),
            RowAction("dispute", _("Dispute"), run=self._case(case_dispute, _("Disputed")), reason="text"),
        )

    @staticmethod
    def _case(service, verb):
        def run(request, case, reason):
            service(case=case, staff=request.user, reason=reason)
            return f"{verb}: {case.topic or gettext('(no topic)')}"

        return run

    @admin.display(description=_("topic"), ordering="topic")
    def topic_display(self, case):
        topic = case.topic or gettext("(no topic)")
        return f"{topic} · {case.kind} · {case.course}"

    @admin.display(description="status", ordering="status")
    def status_display(self, case):
        status = case.effective_status(timezone.now())
        if status == "claimed" and case.claimed_by:
            return f"claimed by {case.claimed_by.username} until {case.claimed_until:%Y-%m-%d %H:%M}"
        return status

    @admin.display(description=_("active fact"))
    def active_fact_display(self, case):
        fact = case.active_fact
        return f"{short(fact.statement)} ({fact.status})" if fact else "–"

    @admin.display(description=_("proposed statements (supporters: their words)"))
    def proposals_display(self, case):
        items = []
        for proposal in case.proposals.all():
            words = "; ".join(
                f"{s.user.username}: “{short(s.correction.content if s.correction else '')}”"
                for s in proposal.supporters.all()
            )
            items.append((short(proposal.statement), proposal.supporter_count, words))
        return format_html("<ul>{}</ul>", format_html_join("", "<li>{} ({}) — {}</li>", items))

    @admin.display(description="supporters")
    def supporters_display(self, case):
        return sum(p.supporter_count for p in case.proposals.all())

    @admin.display(description=_("age"), ordering="created_at")
    def age(self, case):
        return timesince(case.created_at)

    @admin.display(description="proposals")
    def proposals_table(self, case):
        rows = [
            (
                p.statement,
                s.user.username,
                s.correction.content if s.correction else "",
                f"{s.created_at:%Y-%m-%d %H:%M}",
            )
            for p in case.proposals.all()
            for s in p.supporters.all()
        ]
        body = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>", rows)
        return format_html(
            "<table><tr><th>statement</th><th>supporter</th><th>their words</th><th>when</th></tr>{}</table>",
            body,
        )

    @admin.display(description="history")
    def history(self, case):
        return history_table(case)

    @admin.action(description="Claim (lease) the selected cases", permissions=["decide"])
    def claim_cases(self, request, queryset):
        self._apply(request, queryset, "Claimed", lambda case: case_claim(case=case, staff=request.user))

    @admin.action(description="Accept the top proposal (reason required)", permissions=["decide"])
    def accept_cases(self, request, queryset):
        reason = self._reason(request)
        if reason:
            self._apply(
                request,
                queryset,
                "Accepted",
                lambda case: case_accept(case=case, staff=request.user, reason=reason),
            )

    @admin.action(description="Reject the proposals (reason required)", permissions=["decide"])
    def reject_cases(self, request, queryset):
        reason = self._reason(request)
        if reason:
            self._apply(
                request,
                queryset,
                "Rejected",
                lambda case: case_reject(case=case, staff=request.user, reason=reason),
            )

    @admin.action(description="Mark disputed (reason required)", permissions=["decide"])
    def dispute_cases(self, request, queryset):
        reason = self._reason(request)
        if reason:
            self._apply(
                request,
                queryset,
                "Disputed",
                lambda case: case_dispute(case=case, staff=request.user, reason=reason),
            )


@admin.register(Fact)
class FactAdmin(QueueRowsAdmin, DecidingAdmin):
    paginator = CappedCountPaginator  # no full COUNT over a big table
    show_full_result_count = False
    list_display = ["act", "topic", "statement_short", "status", "supporter_count", "confirmed_at"]
    list_filter = ["status", "pinned", ("course", ScopedFilter)]
    list_select_related = ["course"]
    search_fields = ["topic", "statement"]
    action_form = DecisionForm
    actions = ["pin_facts", "unpin_facts"]
    fields = [
        "course",
        "topic",
        "statement",
        "status",
        "pinned",
        "valid_from",
        "valid_to",
        "confirmed_at",
        "supporter_count",
        "disputed_with",
        "staff_note",
        "proposed_by",
        "supersedes",
        "successor",
        "case",
        "decided_by",
        "decision_reason",
        "created_at",
        "supporters_table",
        "history",
    ]
    readonly_fields = fields

    def get_row_actions(self, request):
        # A student's proposal is decided in its case, with every statement on its topic.
        in_case = lambda fact: fact.status == FactStatus.PROPOSED and fact.case_id is not None  # noqa: E731
        alone = lambda fact: fact.status == FactStatus.PROPOSED and fact.case_id is None  # noqa: E731
        return (
            RowAction(
                "case",
                _("Decide in its case…"),
                href=lambda fact: reverse("admin:corrections_correctioncase_decide", args=[fact.case_id]),
                applies=in_case,
                primary=True,
            ),
            RowAction("verify", _("Verify"), run=self._verify, reason="text", applies=alone, primary=True),
            RowAction("reject", _("Reject"), run=self._reject, reason="text", applies=alone),
        )

    def _verify(self, request, fact, reason):
        fact_verify(fact=fact, staff=request.user, reason=reason)
        return gettext("Verified: %(fact)s") % {"fact": short(fact.statement, 80)}

    def _reject(self, request, fact, reason):
        fact_reject(fact=fact, staff=request.user, reason=reason)
        return gettext("Rejected: %(fact)s") % {"fact": short(fact.statement, 80)}

    @admin.display(description=_("statement"))
    def statement_short(self, fact):
        return short(fact.statement, 80)

    @admin.display(description="superseded by")
    def successor(self, fact):
        following = Fact.objects.filter(supersedes=fact).first()
        return str(following) if following else "–"

    @admin.display(description="supporters")
    def supporters_table(self, fact):
        supporters = FactSupporter.objects.filter(fact=fact).select_related("user", "correction")
        rows = [
            (s.user.username, s.correction.content if s.correction else "", f"{s.created_at:%Y-%m-%d %H:%M}")
            for s in supporters
        ]
        body = format_html_join("", "<tr><td>{}</td><td>{}</td><td>{}</td></tr>", rows)
        return format_html(
            "<table><tr><th>supporter</th><th>their words</th><th>when</th></tr>{}</table>", body
        )

    @admin.display(description="history")
    def history(self, fact):
        return history_table(fact)

    @admin.action(description="Pin (exempt from the TTL)", permissions=["decide"])
    def pin_facts(self, request, queryset):
        reason = (request.POST.get("reason") or "").strip()
        self._apply(
            request,
            queryset,
            "Pinned",
            lambda f: fact_set_pinned(fact=f, staff=request.user, pinned=True, reason=reason),
        )

    @admin.action(description="Unpin", permissions=["decide"])
    def unpin_facts(self, request, queryset):
        reason = (request.POST.get("reason") or "").strip()
        self._apply(
            request,
            queryset,
            "Unpinned",
            lambda f: fact_set_pinned(fact=f, staff=request.user, pinned=False, reason=reason),
        )
