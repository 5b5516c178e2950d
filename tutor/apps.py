from django.apps import AppConfig


class TutorConfig(AppConfig):
    name = "tutor"
    verbose_name = "Courses and tutor"

    def ready(self):
        from django.db.backends.signals import connection_created
        from django.db.models.signals import post_migrate

        from tutor.context.providers import register_tutor_providers
        from tutor.db.statements import use_generic_plans

        register_tutor_providers()
        # /metrics counts finished reviews (tutor.ops.monitoring; a no-op unless METRICS_ENABLED).
        from feedback.signals import attempt_finished
        from tutor.ops.monitoring import attempt_finished_counted

        attempt_finished.connect(attempt_finished_counted, dispatch_uid="tutor.metrics.attempt_finished")

        from tutor.rights.own import TutorRights
        from tutor.rights.registry import register as register_rights

        register_rights(TutorRights())  # the tutor's rows under the data rights (SPEC §13)
        connection_created.connect(use_generic_plans, dispatch_uid="tutor.use_generic_plans")
        post_migrate.connect(_refresh_course_staff_group, sender=self)
        post_migrate.connect(_optimize_sqlite, sender=self)


def _optimize_sqlite(sender, using="default", **kwargs):
    """After migrations: SQLite's planner statistics (see tutor.ops.maintenance)."""
    from tutor.ops.maintenance import database_optimize

    database_optimize(using=using)


def _refresh_course_staff_group(sender, **kwargs):
    """After migrations: the course-staff group gets the view permissions of
    every model course staff may open now (apps add models over releases), so
    existing staff need no re-enrolment."""
    from django.contrib.auth.models import Group

    from tutor.services import COURSE_STAFF_GROUP, course_staff_group

    if Group.objects.filter(name=COURSE_STAFF_GROUP).exists():
        course_staff_group()
