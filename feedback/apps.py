from django.apps import AppConfig


class FeedbackConfig(AppConfig):
    name = "feedback"
    verbose_name = "Submissions and reviews"

    def ready(self):
        from feedback.providers import FeedbackSection
        from tutor.providers import register

        register(FeedbackSection())
