"""The base of the project's management commands.

- A DomainError raised by a service ends the command with exit status 1 and
  its message: the one mapping for commands (tutor.kernel.errors has the API's).
- Each run gets a correlation id, so its log lines and audit rows can be
  followed like a request's (SPEC §10).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from tutor.kernel.correlation import reset_correlation_id, set_correlation_id
from tutor.kernel.errors import DomainError


class DomainCommand(BaseCommand):
    def execute(self, *args, **options):
        token = set_correlation_id(None)
        try:
            return super().execute(*args, **options)
        except DomainError as exc:
            raise CommandError(exc.message) from None
        finally:
            reset_correlation_id(token)

    def progress(self, label: str, done: int, total: int, *, every: int = 0) -> None:
        """One progress line on stderr every ``every`` items (about 20 lines a
        run by default) and at the end; stdout stays for the results."""
        step = every or max(total // 20, 1)
        if done == total or done % step == 0:
            width = 30
            filled = int(width * done / total) if total else width
            self.stderr.write(f"{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
