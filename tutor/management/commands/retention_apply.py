from django.core.management.base import CommandError

from tutor.commands import DomainCommand
from tutor.rights.retention import retention_apply


class Command(DomainCommand):
    help = (
        "Delete (audit events: pseudonymise) what is past its retention, per kind of data: "
        "RETENTION_<KIND>_DAYS or a course's override; in batches, one audited run (SPEC §13)."
    )

    def add_arguments(self, parser):
        parser.add_argument("--dry-run", action="store_true", help="count what would go, change nothing")
        parser.add_argument("--batch", type=int, default=None, metavar="ROWS", help="rows per transaction")

    def handle(self, *args, dry_run, batch, **options):
        if batch is not None and batch < 1:
            raise CommandError("--batch must be at least 1")
        counts = retention_apply(dry_run=dry_run, batch=batch, progress=lambda line: self.stderr.write(line))
        verb = "would remove" if dry_run else "removed"
        if not counts:
            self.stdout.write(f"{verb} nothing: no data is past its retention")
        for kind, per_course in counts.items():
            for course, count in per_course.items():
                self.stdout.write(f"{kind} {course}: {verb} {count}")
