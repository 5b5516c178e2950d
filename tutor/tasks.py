"""Periodic maintenance tasks of the tutor app."""

from celery import shared_task


@shared_task(name="tutor.tasks.purge_model_calls")
def purge_model_calls() -> int:
    from tutor.llm import model_calls_purge

    return model_calls_purge()


@shared_task(name="tutor.tasks.optimize_database", ignore_result=True)
def optimize_database() -> bool:
    from tutor.db.snapshots import changes_prune
    from tutor.ops.maintenance import database_optimize

    changes_prune()
    return database_optimize()


@shared_task(name="tutor.tasks.release_stale_replies")
def release_stale_replies() -> int:
    from tutor.chat.services import sessions_release_stale

    return sessions_release_stale()


@shared_task(name="tutor.tasks.apply_retention")
def apply_retention() -> dict:
    from tutor.rights.retention import retention_apply

    return retention_apply()
