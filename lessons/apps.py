from django.apps import AppConfig


class LessonsConfig(AppConfig):
    name = "lessons"
    verbose_name = "Lessons and playbook"

    def ready(self):
        from django.db.models.signals import post_delete, post_save

        from feedback.signals import attempt_finished
        from lessons.desk import QUEUES
        from lessons.models import Lesson
        from lessons.providers import LessonsSection
        from lessons.receivers import capture_on_attempt_finished, lesson_saved_or_deleted
        from lessons.selectors.library import LESSONS_SCOPE, OTHER_LESSONS_SCOPE
        from tutor.context.providers import register
        from tutor.db.snapshots import register_request_scope
        from tutor.desk.queues import register as register_queue
        from tutor.services import register_staff_view_models

        # Takes the place of tutor's empty "lessons" slot.
        register(LessonsSection())
        for queue in QUEUES:  # the staff desk and /metrics (tutor.desk)
            register_queue(queue)

        from lessons.rights import LessonsRights
        from tutor.rights.registry import register as register_rights

        register_rights(LessonsRights())  # its part of erasure and export (SPEC §13)
        # Read with every tutor request's task (tutor.db.snapshots.version_subqueries).
        register_request_scope(LESSONS_SCOPE, "course")
        register_request_scope(LESSONS_SCOPE, "global")
        # A send's trace alone reads the lessons of other statuses.
        register_request_scope(OTHER_LESSONS_SCOPE, "course", sends_only=True)
        register_request_scope(OTHER_LESSONS_SCOPE, "global", sends_only=True)
        register_staff_view_models("lessons", ["lesson", "skillcandidate", "recalltrace"])
        attempt_finished.connect(capture_on_attempt_finished, dispatch_uid="lessons.capture")
        post_save.connect(lesson_saved_or_deleted, sender=Lesson, dispatch_uid="lessons.snapshot_saved")
        post_delete.connect(lesson_saved_or_deleted, sender=Lesson, dispatch_uid="lessons.snapshot_deleted")
