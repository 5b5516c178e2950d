"""The Celery application. Settings come from Django's (``CELERY_*``).

Two rules for every task, whichever app defines it:

- the correlation id of the code that sent a task travels with it, as a
  message header, and is current while the task runs -- so its log lines,
  model calls and audit rows carry the request's id (SPEC §10);
- a worker or beat started without ``REDIS_URL`` refuses to start: it
  would consume from an in-memory broker that nothing ever publishes to.
"""

import os
import sys

from celery import Celery, signals

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tutor.settings")

app = Celery("tutor")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

# Not "correlation_id": Celery already uses that name for the task id (AMQP property).
CORRELATION_HEADER = "tutor_correlation_id"
NO_BROKER_MESSAGE = (
    "REDIS_URL is not set, so there is no broker: this {role} would wait on an in-memory queue that "
    "nothing publishes to. Set REDIS_URL (e.g. redis://127.0.0.1:6379/0) for the web processes and "
    "the workers alike; without it the web process runs reviews itself and needs no worker."
)


@signals.before_task_publish.connect
def _send_correlation_id(headers=None, **kwargs):
    from tutor.kernel.correlation import current_or_none

    correlation_id = current_or_none()
    if correlation_id and headers is not None:
        headers.setdefault(CORRELATION_HEADER, correlation_id)


@signals.task_prerun.connect
def _enter_correlation_id(task=None, **kwargs):
    from tutor.kernel.correlation import current_or_none, set_correlation_id

    # The header of a published task; in eager mode (no publish) the task
    # runs inside its sender and keeps the sender's id.
    sent = getattr(task.request, CORRELATION_HEADER, None) or current_or_none()
    task.request.correlation_token = set_correlation_id(sent)


@signals.task_postrun.connect
def _leave_correlation_id(task=None, **kwargs):
    from tutor.kernel.correlation import reset_correlation_id

    token = getattr(task.request, "correlation_token", None)
    if token is not None:
        task.request.correlation_token = None
        reset_correlation_id(token)


def _refuse_without_broker(role: str) -> None:
    from django.conf import settings

    if not settings.REDIS_URL:
        sys.stderr.write(NO_BROKER_MESSAGE.format(role=role) + "\n")
        # SystemExit, not an exception: Celery logs and ignores what a signal handler raises.
        raise SystemExit(2)


@signals.worker_init.connect
def _worker_needs_a_broker(sender=None, **kwargs):
    _refuse_without_broker("worker")
    # A pool of threads or one process: the tasks run here (tutor.ops.telemetry).
    pool = getattr(sender, "pool_cls", None)
    if "prefork" not in (pool if isinstance(pool, str) else getattr(pool, "__module__", "prefork")):
        _start_telemetry()


@signals.worker_process_init.connect
def _start_telemetry(**kwargs):
    """Error reports and traces in each process that runs tasks, where configured."""
    from tutor.ops.telemetry import telemetry_start

    telemetry_start("worker")


@signals.beat_init.connect
def _beat_needs_a_broker(**kwargs):
    _refuse_without_broker("beat")
