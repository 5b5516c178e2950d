"""manage.py compile_messages [--check]: the project's .po catalogs to .mo
in pure Python (``tutor.ops.messages``; GNU gettext is not needed)."""

from __future__ import annotations

from django.conf import settings
from django.core.management.base import CommandError

from tutor.commands import DomainCommand
from tutor.ops.messages import catalogs, compile_catalog


class Command(DomainCommand):
    help = "Compile the project's translation catalogs (.po -> .mo) without GNU gettext."

    def add_arguments(self, parser):
        parser.add_argument(
            "--check", action="store_true", help="write nothing; exit 1 if a .mo is missing or stale"
        )

    def handle(self, *args, check: bool = False, **options):
        found = catalogs(settings.BASE_DIR)
        if not found:
            raise CommandError(f"no locale/*/LC_MESSAGES/*.po under {settings.BASE_DIR}")
        stale = []
        for po in found:
            mo = po.with_suffix(".mo")
            compiled = compile_catalog(po)
            if mo.exists() and mo.read_bytes() == compiled:
                continue
            stale.append(mo)
            if not check:
                mo.write_bytes(compiled)
                self.stdout.write(f"compiled {mo.relative_to(settings.BASE_DIR)}")
        if check and stale:
            names = ", ".join(str(p.relative_to(settings.BASE_DIR)) for p in stale)
            raise CommandError(f"stale or missing: {names} (run manage.py compile_messages)")
        if not stale:
            self.stdout.write(f"{len(found)} catalog(s) up to date")
