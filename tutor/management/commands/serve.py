"""Serve the project: gunicorn with the shipped configuration, plus -- in the
embedded mode, where there is no Celery beat -- the periodic sweep.

Gunicorn (not the development server, whose listen backlog of 10 resets
connections under 50 concurrent clients: SPEC §10) runs as a child process
with ``tutor/ops/gunicorn_conf.py``; this process forwards Ctrl-C and SIGTERM to
it and exits with its status. Without ``REDIS_URL`` this process also runs
the sweep of SPEC §2 every ``REVIEW_SWEEP_INTERVAL`` seconds on a thread of
its own -- never inside gunicorn's workers, which are forked and restarted.
"""

from __future__ import annotations

import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time

from django.conf import settings
from django.core.management.base import CommandError

from tutor.commands import DomainCommand

log = logging.getLogger(__name__)
ADDRPORT = re.compile(r"(?P<host>[^:\s]+|\[[0-9a-fA-F:]+\]):(?P<port>\d{1,5})")


def sweep_once() -> None:
    """One round of the periodic sweep: review attempts (SPEC §2), the reply
    claims of killed web workers (SPEC §4), correction detections still in
    their outbox (SPEC §5) and LMS score retries (SPEC §12: in eager mode only
    the sweep sends them)."""
    from django.db import close_old_connections

    from corrections.services.dispatch import detections_sweep
    from feedback.services.worker import attempts_sweep
    from tutor.chat.services import sessions_release_stale
    from tutor.lti.services.scores import scores_sweep

    close_old_connections()
    # Each on its own: one that fails (a database error) does not hold the others back.
    for sweep in (attempts_sweep, sessions_release_stale, detections_sweep, scores_sweep):
        try:
            sweep()
        except Exception:
            log.exception("the sweep %s failed", sweep.__name__)


def maintain_once() -> None:
    """The hourly upkeep beat would run: the snapshots' change log pruned, SQLite planner statistics."""
    from tutor.db.snapshots import changes_prune
    from tutor.ops.maintenance import database_optimize

    changes_prune()
    database_optimize()


class Command(DomainCommand):
    help = (
        "Run the web server (gunicorn with tutor/ops/gunicorn_conf.py); in the embedded mode (no "
        "REDIS_URL) also run on a thread what beat would: the sweep of review attempts, tutor "
        "reply claims and pending correction detections, the LMS score sweep and the hourly SQLite "
        "statistics refresh."
    )

    def add_arguments(self, parser):
        parser.add_argument("addrport", nargs="?", default="127.0.0.1:8000", help="HOST:PORT to listen on")

    def handle(self, *args, addrport, **options):
        if not ADDRPORT.fullmatch(addrport) or not 0 < int(ADDRPORT.fullmatch(addrport)["port"]) < 65536:
            raise CommandError(f"addrport must be HOST:PORT, e.g. 127.0.0.1:8000; got {addrport!r}")
        stop = threading.Event()
        if not settings.REDIS_URL:
            threading.Thread(target=self._sweep_loop, args=(stop,), name="sweep", daemon=True).start()
            self.stdout.write(f"embedded mode: eager Celery, sweep every {settings.REVIEW_SWEEP_INTERVAL}s")
        self.stdout.write(
            f"Student client: http://{addrport}/  API docs: http://{addrport}/api/docs/  "
            f"admin: http://{addrport}/admin/"
        )
        self.stdout.flush()
        command = [
            sys.executable, "-m", "gunicorn", "--config", "python:tutor.ops.gunicorn_conf",
            "--bind", addrport, "tutor.wsgi:application",
        ]  # fmt: skip
        server = subprocess.Popen(command, env=os.environ.copy())

        def forward(signum, frame):
            server.send_signal(signum)

        previous = {sig: signal.signal(sig, forward) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            code = server.wait()
        finally:
            stop.set()
            for sig, handler in previous.items():
                signal.signal(sig, handler)
            if server.poll() is None:
                server.terminate()
                server.wait()
        if code not in (0, -signal.SIGINT, -signal.SIGTERM):
            raise CommandError(f"gunicorn exited with status {code}")

    def _sweep_loop(self, stop: threading.Event) -> None:
        from tutor.ops.maintenance import DATABASE_OPTIMIZE_INTERVAL

        last_upkeep = time.monotonic()
        while not stop.wait(settings.REVIEW_SWEEP_INTERVAL):
            try:
                sweep_once()
                if time.monotonic() - last_upkeep >= DATABASE_OPTIMIZE_INTERVAL:
                    maintain_once()
                    last_upkeep = time.monotonic()
            except Exception:
                log.exception("the sweep failed")
