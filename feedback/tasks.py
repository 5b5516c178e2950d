"""Celery tasks of the feedback app: thin wrappers that take an id (STYLE)."""

from celery import shared_task
from django.conf import settings


@shared_task(
    name="feedback.tasks.review_attempt",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=settings.REVIEW_SOFT_TIME_LIMIT,
    time_limit=settings.REVIEW_HARD_TIME_LIMIT,
    ignore_result=True,
)
def review_attempt(attempt_id: str) -> str | None:
    from feedback.pipeline import run_review

    return run_review(attempt_id)


@shared_task(name="feedback.tasks.sweep_attempts", ignore_result=True)
def sweep_attempts() -> dict:
    from feedback.services.worker import attempts_sweep

    return attempts_sweep()
