from django.apps import AppConfig


class CorrectionsConfig(AppConfig):
    name = "corrections"
    verbose_name = "Corrections and memory"

    def ready(self):
        from corrections.desk import QUEUES
        from corrections.providers import register_providers
        from corrections.receivers import connect_receivers
        from corrections.selectors.course_snapshot import CORRECTIONS_SCOPE
        from corrections.selectors.memory_snapshot import MEMORY_SCOPE
        from tutor.db.snapshots import register_request_scope
        from tutor.desk.queues import register as register_queue
        from tutor.services import register_staff_view_models

        register_providers()
        for queue in QUEUES:  # the staff desk and /metrics (tutor.desk)
            register_queue(queue)

        from corrections.rights import CorrectionsRights
        from tutor.rights.registry import register as register_rights

        register_rights(CorrectionsRights())  # its part of erasure and export (SPEC §13)
        connect_receivers()
        # Read with every tutor request's task (tutor.db.snapshots.version_subqueries).
        register_request_scope(CORRECTIONS_SCOPE, "course")
        register_request_scope(MEMORY_SCOPE, "user")
        # Course staff open the review queue and its records; querysets stay
        # scoped to their courses. Memory items are the students' own: not listed.
        register_staff_view_models("corrections", ["correctioncase", "fact", "correction", "processrule"])
        # The detection outbox's depth on /metrics (read at each scrape).
        from corrections.models import PendingDetection
        from tutor.ops.monitoring import register_outbox

        register_outbox("correction_detections", PendingDetection.objects.count)
