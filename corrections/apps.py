from django.apps import AppConfig


class CorrectionsConfig(AppConfig):
    name = "corrections"
    verbose_name = "Corrections and memory"

    def ready(self):
        from corrections.providers import register_providers
        from corrections.receivers import connect_receivers
        from tutor.services import register_staff_view_models

        register_providers()
        connect_receivers()
        # Course staff open the review queue and its records; querysets stay
        # scoped to their courses. Memory items are the students' own: not listed.
        register_staff_view_models("corrections", ["correctioncase", "fact", "correction", "processrule"])
