from django.apps import AppConfig


class TutorConfig(AppConfig):
    name = "tutor"
    verbose_name = "Courses and tutor"

    def ready(self):
        from tutor.providers import register_tutor_providers

        register_tutor_providers()
