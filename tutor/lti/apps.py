from django.apps import AppConfig


class LtiConfig(AppConfig):
    name = "tutor.lti"
    label = "lti"
    verbose_name = "LMS integration (LTI 1.3)"

    def ready(self):
        from feedback.signals import attempt_finished
        from tutor.lti.receivers import attempt_finished_received
        from tutor.services import register_staff_view_models

        # Course staff read their courses' registrations, LMS courses, links and the score outbox.
        register_staff_view_models(
            "lti", ["registration", "deployment", "context", "resourcelink", "scorepost"]
        )
        attempt_finished.connect(attempt_finished_received, dispatch_uid="lti-grade-passback")
