"""The LMS side's staff queue on the desk (SPEC §12): scores the platform
refused or that ran out of tries; a person sends them again."""

from __future__ import annotations

from django.utils.translation import gettext_lazy as _

from tutor.desk.queues import QuerysetQueue
from tutor.lti.models import ScorePost, ScoreStatus


class FailedScoresQueue(QuerysetQueue):
    name = "lti_failed_scores"
    label = _("LTI scores that failed")
    position = 60
    admin_url = "admin:lti_scorepost_changelist"
    query = "queue=failed"

    def items(self, *, course_ids):
        qs = ScorePost.objects.filter(status=ScoreStatus.FAILED)
        return qs if course_ids is None else qs.filter(link__task__course_id__in=course_ids)


QUEUES = (FailedScoresQueue(),)
