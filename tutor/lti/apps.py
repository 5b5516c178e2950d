from django.apps import AppConfig


class LtiConfig(AppConfig):
    name = "tutor.lti"
    label = "lti"
    verbose_name = "LMS integration (LTI 1.3)"

    def ready(self):
        from feedback.signals import attempt_finished
        from tutor.desk.queues import register as register_queue
        from tutor.lti.desk import QUEUES
        from tutor.lti.receivers import attempt_finished_received
        from tutor.services import register_staff_view_models

        # Course staff read their courses' registrations, LMS courses, links and the score outbox.
        register_staff_view_models(
            "lti", ["registration", "deployment", "context", "resourcelink", "scorepost"]
        )
        attempt_finished.connect(attempt_finished_received, dispatch_uid="lti-grade-passback")
        # Embedded mode: score posts wait until the response is sent (tutor.lti.after_response).
        from django.core.signals import request_finished, request_started

        from tutor.lti import after_response

        request_started.connect(after_response.request_started_received, dispatch_uid="lti-after-response")
        request_finished.connect(after_response.request_finished_received, dispatch_uid="lti-after-response")
        for queue in QUEUES:  # the staff desk and /metrics (tutor.desk)
            register_queue(queue)

        from tutor.lti.rights import LtiRights
        from tutor.rights.registry import register as register_rights

        register_rights(LtiRights())  # its part of erasure and export (SPEC §13)
        # The score outbox's depth on /metrics (read at each scrape).
        from tutor.lti.models import ScorePost, ScoreStatus
        from tutor.ops.monitoring import register_outbox

        def score_outbox_depth() -> int:
            return ScorePost.objects.filter(status__in=[ScoreStatus.QUEUED, ScoreStatus.POSTING]).count()

        register_outbox("lti_scores", score_outbox_depth)
