"""Gunicorn's configuration (SPEC §10 Production), derived from the settings.

``gunicorn.conf.py`` at the project root imports it, so ``gunicorn
tutor.wsgi`` run from there uses it; ``manage.py serve`` names it itself.

Timeouts nest: a tutor turn's worst case (``TUTOR_REQUEST_BUDGET``: every
model try timing out, plus backoff and the request's own work) is below the
worker timeout ``WEB_TIMEOUT``, which ``tutor.settings`` checks at start-up --
a hung model ends as the promised JSON 503, never as gunicorn killing the
worker mid-request. Threads (gthread) keep a request that waits on the model
from holding a whole process; the listen backlog holds the clients beyond
workers x threads. Access lines name the path without its query string (a
draft tutor message would otherwise be logged) and carry the correlation id.
"""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tutor.settings")

from django.conf import settings  # noqa: E402

from tutor.ops.entrypoints import web_preflight  # noqa: E402

# Bad settings, no SECRET_KEY, no database: one line and exit 2, before listening.
web_preflight()

from tutor.ops import metrics  # noqa: E402
from tutor.ops.env import env_int, env_str  # noqa: E402
from tutor.ops.logs import logging_config  # noqa: E402

wsgi_app = "tutor.wsgi:application"
bind = [env_str("WEB_BIND", "127.0.0.1:8000")]
# gthread, with its own refusals (414, 431, ...) answered as JSON (tutor.ops.gunicorn_worker).
worker_class = "tutor.ops.gunicorn_worker.JsonErrorThreadWorker"
workers = env_int("WEB_CONCURRENCY", 2, minimum=1)
threads = env_int("WEB_THREADS", 8, minimum=1)
backlog = 2048
timeout = settings.WEB_TIMEOUT
graceful_timeout = 30
keepalive = 5
# The longest request line gunicorn accepts (a longer one is its own 414):
# a long draft belongs in the body of POST /api/tutor/context/.
limit_request_line = 8190
accesslog = "-"
errorlog = "-"
access_log_format = '%(h)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(M)sms'
logconfig_dict = logging_config(env_str("LOG_LEVEL", "INFO"))
# gunicorn's control socket (gunicornc) is one path per user: two servers on a
# machine would share it. Nothing here uses it.
control_socket_disable = True


def child_exit(server, worker):
    """A worker that ended leaves the metrics' live sums (tutor.ops.metrics)."""
    metrics.worker_exited(worker.pid)
