from datetime import timedelta

from django.core.management.base import CommandError
from django.db import IntegrityError
from django.utils import timezone

from feedback.services.retention import HISTORIES_MAX_BATCH, histories_past_retention, histories_purge
from tutor.commands import DomainCommand
from tutor.models import Course

MAX_DAYS = 36500  # a hundred years: beyond, the cut falls before any date there is


def _histories(n: int) -> str:
    return f"{n} {'history' if n == 1 else 'histories'}"


class Command(DomainCommand):
    help = (
        "Retention purge: delete the submissions and review attempts of every student's task history "
        "whose newest submission is older than --older-than-days, course by course, in audited batches "
        "(one attempts_purged audit event per batch). Histories with an attempt still queued or running "
        "are kept, and so is one its student submitted to while the purge ran. Feedback of a purged "
        "history reads as 'none'."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--older-than-days", type=int, required=True, metavar="DAYS", help=f"1 to {MAX_DAYS}"
        )
        parser.add_argument("--course", action="append", metavar="SLUG", help="only this course (repeatable)")
        parser.add_argument(
            "--batch",
            type=int,
            default=100,
            metavar="HISTORIES",
            help=f"histories per transaction (default 100, at most {HISTORIES_MAX_BATCH})",
        )
        parser.add_argument("--dry-run", action="store_true", help="count what would go, delete nothing")

    def handle(self, *args, older_than_days, course, batch, dry_run, **options):
        if not 1 <= older_than_days <= MAX_DAYS:
            raise CommandError(f"--older-than-days must be between 1 and {MAX_DAYS}")
        if not 1 <= batch <= HISTORIES_MAX_BATCH:
            raise CommandError(f"--batch must be between 1 and {HISTORIES_MAX_BATCH}")
        courses = Course.objects.order_by("slug")
        if course:
            courses = courses.filter(slug__in=course)
            missing = sorted(set(course) - set(courses.values_list("slug", flat=True)))
            if missing:
                raise CommandError(f"no such course: {', '.join(repr(slug) for slug in missing)}")
        before = timezone.now() - timedelta(days=older_than_days)
        reason = f"retention: newest submission older than {older_than_days} days"
        histories_total = submissions_total = attempts_total = 0
        for each in courses:
            histories = histories_past_retention(course=each, before=before)
            submissions = sum(h.submissions for h in histories)
            self.stderr.write(
                f"{each.slug}: {_histories(len(histories))} ({submissions} submissions) last submitted "
                f"before {before:%Y-%m-%d %H:%M} UTC"
            )
            if dry_run:
                histories_total += len(histories)
                submissions_total += submissions
                continue
            for start in range(0, len(histories), batch):
                part = histories[start : start + batch]
                try:
                    purged = histories_purge(course=each, histories=part, before=before, reason=reason)
                except IntegrityError as exc:
                    # A student submitted to one of them meanwhile, or a row outside
                    # the purge still refers to one (PROTECT): nothing of it went.
                    reason_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                    self.stderr.write(
                        f"{each.slug}: kept a batch of {_histories(len(part))}, the database refused "
                        f"it ({reason_line}); run the purge again"
                    )
                    continue
                histories_total += purged.histories
                submissions_total += purged.submissions
                attempts_total += purged.attempts
                self.progress(f"{each.slug} histories", min(start + batch, len(histories)), len(histories))
        if dry_run:
            self.stdout.write(
                f"would purge {_histories(histories_total)}: {submissions_total} submissions (dry run)"
            )
        else:
            counts = f"{submissions_total} submissions, {attempts_total} attempts"
            self.stdout.write(f"purged {_histories(histories_total)}: {counts}")
