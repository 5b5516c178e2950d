from django.apps import AppConfig


class FeedbackConfig(AppConfig):
    name = "feedback"
    verbose_name = "Submissions and reviews"

    def ready(self):
        from feedback.desk import QUEUES
        from feedback.providers import FeedbackSection
        from tutor.context.providers import register
        from tutor.desk.queues import register as register_queue
        from tutor.services import register_staff_view_models

        register(FeedbackSection())
        for queue in QUEUES:  # the staff desk and /metrics (tutor.desk)
            register_queue(queue)

        # Its part of erasure and export (SPEC §13).
        from feedback.rights import FeedbackRights
        from tutor.rights.registry import register as register_rights

        register_rights(FeedbackRights())
        register_staff_view_models("feedback", ["regraderequest", "criterionagreement"])
        # The review queue's gauges on /metrics (read at each scrape).
        from feedback.monitoring import ReviewQueueGauges
        from tutor.ops.monitoring import register_collector

        register_collector(ReviewQueueGauges())
