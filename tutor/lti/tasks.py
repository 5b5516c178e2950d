"""Celery tasks of the LTI app: thin wrappers that take an id (STYLE)."""

from celery import shared_task
from django.conf import settings


@shared_task(
    name="lti.tasks.post_score",
    acks_late=True,
    reject_on_worker_lost=True,
    soft_time_limit=settings.LTI_SCORE_SOFT_TIME_LIMIT,
    time_limit=settings.LTI_SCORE_HARD_TIME_LIMIT,
    ignore_result=True,
)
def post_score(score_id: str) -> str | None:
    from tutor.lti.services.scores import score_send

    return score_send(score_id=score_id)


@shared_task(name="lti.tasks.sweep_scores", ignore_result=True)
def sweep_scores() -> dict:
    from tutor.lti.services.scores import scores_sweep

    return scores_sweep()
