"""Serve the embedded default: the development server plus the review sweep.

With no broker there is no Celery beat, so the sweep of SPEC §2 runs here on a
background thread every ``REVIEW_SWEEP_INTERVAL`` seconds.
"""

import logging
import threading

from django.conf import settings
from django.core.management import call_command

from tutor.commands import DomainCommand

log = logging.getLogger(__name__)


class Command(DomainCommand):
    help = "Run the web server; in the embedded mode (no REDIS_URL) also run the review sweep."

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000")

    def handle(self, *args, addrport, **options):
        if not settings.REDIS_URL:
            stop = threading.Event()
            thread = threading.Thread(target=self._sweep_loop, args=(stop,), daemon=True)
            thread.start()
            self.stdout.write(
                f"embedded mode: eager Celery, review sweep every {settings.REVIEW_SWEEP_INTERVAL}s"
            )
        self.stdout.write(f"API docs: http://{addrport}/api/docs/  admin: http://{addrport}/admin/")
        call_command("runserver", addrport, use_reloader=False)

    def _sweep_loop(self, stop: threading.Event) -> None:
        from django.db import close_old_connections

        from feedback.services.worker import attempts_sweep
        from tutor.lti.services.scores import scores_sweep

        while not stop.wait(settings.REVIEW_SWEEP_INTERVAL):
            try:
                close_old_connections()
                attempts_sweep()
                # LMS score retries: in eager mode only the sweep sends them.
                scores_sweep()
            except Exception:
                log.exception("review sweep failed")
