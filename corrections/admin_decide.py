"""The case decision page in admin (SPEC §5, §8; turn 3): what a row's
buttons cannot carry -- which proposal, staff's own wording of the fact (an
edit, or the true statement), the dispute note the tutor is told -- in one
form whose every choice calls a service (``case_accept``, ``case_reject``,
``case_dispute``). A bad choice is an error on its field (400); a refusal of
the service (held, decided) is shown above the form.
"""

from __future__ import annotations

import uuid

from django import forms
from django.http import Http404, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import path, reverse
from django.utils.translation import gettext
from django.utils.translation import gettext_lazy as _

from corrections.models import UNDECIDED_CASE_STATUSES, CaseKind
from corrections.services.cases import STAFF_TEXT_MAX_CHARS, case_accept, case_dispute, case_reject
from tutor.desk.rows import ROW_REASON_MAX_CHARS
from tutor.kernel.errors import DomainError

ACCEPT, REJECT, DISPUTE = "accept", "reject", "dispute"


class CaseDecisionForm(forms.Form):
    decision = forms.ChoiceField(
        label=_("Decision"),
        widget=forms.RadioSelect,
        choices=[
            (ACCEPT, _("Accept (the chosen proposal, or your wording below)")),
            (REJECT, _("Reject every proposal")),
            (DISPUTE, _("Dispute (the tutor is told the statements and your note)")),
        ],
    )
    proposal = forms.ChoiceField(label=_("Proposal"), required=False, widget=forms.RadioSelect)
    statement = forms.CharField(
        label=_("Your wording of the fact"),
        required=False,
        max_length=STAFF_TEXT_MAX_CHARS,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 80}),
        help_text=_("Accept only. Empty: the proposal's own words. Or write the true statement."),
    )
    note = forms.CharField(
        label=_("Note for the tutor"),
        required=False,
        max_length=STAFF_TEXT_MAX_CHARS,
        widget=forms.Textarea(attrs={"rows": 2, "cols": 80}),
        help_text=_("Dispute only: what the tutor is told about this topic."),
    )
    reason = forms.CharField(label=_("Reason (kept in the audit log)"), max_length=ROW_REASON_MAX_CHARS)

    def __init__(self, *args, case, **kwargs):
        super().__init__(*args, **kwargs)
        self.case = case
        proposals = list(case.proposals.order_by("-supporter_count", "created_at", "id"))
        self.fields["proposal"].choices = [
            (str(p.pk), f"{p.statement} ({p.supporter_count})") for p in proposals
        ]
        if proposals:
            self.fields["proposal"].initial = str(proposals[0].pk)
        if case.kind == CaseKind.PROCESS:
            self.fields["decision"].choices = self.fields["decision"].choices[:2]

    def clean(self):
        data = super().clean()
        decision = data.get("decision")
        if data.get("statement", "").strip() and decision != ACCEPT:
            self.add_error("statement", gettext("Your wording is used only when you accept."))
        if data.get("note", "").strip() and decision != DISPUTE:
            self.add_error("note", gettext("A note for the tutor goes with a dispute only."))
        return data


class CaseDecideMixin:
    """Mix into the case admin: ``<id>/decide/`` and the row's "Decide…" link."""

    def get_urls(self):
        # Before the row actions' "<id>/<...>/" patterns.
        decide = path(
            "<path:object_id>/decide/",
            self.admin_site.admin_view(self.decide_view),
            name="corrections_correctioncase_decide",
        )
        return [decide, *super().get_urls()]

    @staticmethod
    def decide_url(case) -> str:
        return reverse("admin:corrections_correctioncase_decide", args=[case.pk])

    def decide_view(self, request, object_id):
        if not self.has_decide_permission(request):
            raise Http404("no such case")
        try:
            uuid.UUID(str(object_id))
        except ValueError:
            raise Http404("no such case") from None
        case = self.get_queryset(request).filter(pk=object_id).first()
        if case is None or case.status not in UNDECIDED_CASE_STATUSES:
            raise Http404("no undecided case")
        form = CaseDecisionForm(request.POST if request.method == "POST" else None, case=case)
        status = 200
        if request.method == "POST":
            if form.is_valid():
                try:
                    said = self._decide_with(request, case, form.cleaned_data)
                except DomainError as exc:
                    field = exc.field if exc.field in form.fields else None
                    form.add_error(field, exc.public_message())
                    status = 409 if exc.status_code == 409 else 400
                else:
                    self.message_user(request, said)
                    listing = reverse("admin:corrections_correctioncase_changelist")
                    return HttpResponseRedirect(f"{listing}?decision=needed")
            else:
                status = 400
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": gettext("Decide the case on %(topic)s") % {"topic": case.topic or gettext("(no topic)")},
            "case": case,
            "form": form,
        }
        return TemplateResponse(
            request, "admin/corrections/correctioncase/decide.html", context, status=status
        )

    @staticmethod
    def _decide_with(request, case, data) -> str:
        decision, reason, topic = data["decision"], data["reason"], case.topic or gettext("(no topic)")
        if decision == ACCEPT:
            case_accept(
                case=case,
                staff=request.user,
                reason=reason,
                proposal_id=data.get("proposal") or None,
                statement=data.get("statement") or None,
            )
            return gettext("Accepted: %(topic)s") % {"topic": topic}
        if decision == REJECT:
            case_reject(case=case, staff=request.user, reason=reason)
            return gettext("Rejected: %(topic)s") % {"topic": topic}
        case_dispute(case=case, staff=request.user, reason=reason, note=data.get("note") or None)
        return gettext("Disputed: %(topic)s") % {"topic": topic}
