"""The feedback app's staff queues on the desk (SPEC §8): reviews that need
a decision and open regrade requests. Each is the default view of its admin
list, so the card's count and the list it opens agree."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from feedback.models import RegradeRequest, RegradeStatus, ReviewAttempt
from feedback.selectors import attempts_needing_decision
from tutor.desk.queues import QuerysetQueue


class ReviewsQueue(QuerysetQueue):
    name = "reviews"
    label = _("Reviews needing a decision")
    position = 10
    admin_url = "admin:feedback_reviewattempt_changelist"
    query = "decision=needs"

    def items(self, *, course_ids):
        qs = ReviewAttempt.objects.all()
        if course_ids is not None:
            qs = qs.filter(submission__task__course_id__in=course_ids)
        return attempts_needing_decision(qs)


class RegradesQueue(QuerysetQueue):
    name = "regrades"
    label = _("Regrade requests")
    position = 20
    admin_url = "admin:feedback_regraderequest_changelist"
    query = "regrade=open"

    def items(self, *, course_ids):
        qs = RegradeRequest.objects.filter(status=RegradeStatus.OPEN)
        if course_ids is not None:
            qs = qs.filter(submission__task__course_id__in=course_ids)
        return qs


QUEUES = (ReviewsQueue(), RegradesQueue())
