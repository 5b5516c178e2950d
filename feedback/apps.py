from django.apps import AppConfig


class FeedbackConfig(AppConfig):
    name = "feedback"
    verbose_name = "Submissions and reviews"

    def ready(self):
        from feedback.providers import FeedbackSection
        from tutor.context.providers import register
        from tutor.services import register_staff_view_models

        register(FeedbackSection())
        register_staff_view_models("feedback", ["regraderequest", "criterionagreement"])
