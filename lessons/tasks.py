"""Celery tasks of the lessons app: thin wrappers (STYLE)."""

from celery import shared_task


@shared_task(name="lessons.tasks.report_review_due", ignore_result=True)
def report_review_due() -> dict:
    """Periodic (CELERY_BEAT_SCHEDULE): log the lessons past review_by per course."""
    from lessons.maintenance import log_review_due

    return log_review_due()
