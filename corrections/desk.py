"""The corrections app's staff queues on the desk (SPEC §8): undecided
correction cases and proposed course facts."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from corrections.models import UNDECIDED_CASE_STATUSES, CorrectionCase, Fact, FactStatus
from tutor.desk.queues import QuerysetQueue


class CasesQueue(QuerysetQueue):
    name = "correction_cases"
    label = _("Correction cases")
    position = 30
    admin_url = "admin:corrections_correctioncase_changelist"
    query = "decision=needed"

    def items(self, *, course_ids):
        qs = CorrectionCase.objects.filter(status__in=UNDECIDED_CASE_STATUSES)
        return qs if course_ids is None else qs.filter(course_id__in=course_ids)


class ProposedFactsQueue(QuerysetQueue):
    name = "proposed_facts"
    label = _("Proposed facts")
    position = 35
    admin_url = "admin:corrections_fact_changelist"
    query = "status__exact=proposed"

    def items(self, *, course_ids):
        # A student's proposal waits in its case (counted above): here the others.
        qs = Fact.objects.filter(status=FactStatus.PROPOSED, case__isnull=True)
        return qs if course_ids is None else qs.filter(course_id__in=course_ids)


QUEUES = (CasesQueue(), ProposedFactsQueue())
