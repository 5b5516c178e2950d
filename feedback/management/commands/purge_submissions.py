from datetime import timedelta

from django.core.management.base import CommandError
from django.utils import timezone

from feedback.services.retention import histories_past_retention, histories_purge
from tutor.commands import DomainCommand
from tutor.models import Course


class Command(DomainCommand):
    help = (
        "Retention purge: delete the submissions and review attempts of every student's task history "
        "whose newest submission is older than --older-than-days, course by course, in audited batches "
        "(one attempts_purged audit event per batch). Histories with an attempt still queued or running "
        "are kept. Feedback of a purged history reads as 'none'."
    )

    def add_arguments(self, parser):
        parser.add_argument("--older-than-days", type=int, required=True, metavar="DAYS", help="at least 1")
        parser.add_argument("--course", action="append", metavar="SLUG", help="only this course (repeatable)")
        parser.add_argument(
            "--batch",
            type=int,
            default=100,
            metavar="HISTORIES",
            help="histories per transaction (default 100)",
        )
        parser.add_argument("--dry-run", action="store_true", help="count what would go, delete nothing")

    def handle(self, *args, older_than_days, course, batch, dry_run, **options):
        if older_than_days < 1:
            raise CommandError("--older-than-days must be at least 1")
        if batch < 1:
            raise CommandError("--batch must be at least 1")
        courses = Course.objects.order_by("slug")
        if course:
            courses = courses.filter(slug__in=course)
            missing = sorted(set(course) - set(courses.values_list("slug", flat=True)))
            if missing:
                raise CommandError(f"no such course: {', '.join(missing)}")
        before = timezone.now() - timedelta(days=older_than_days)
        reason = f"retention: newest submission older than {older_than_days} days"
        totals = [0, 0, 0]
        for each in courses:
            histories = histories_past_retention(course=each, before=before)
            submissions = sum(h.submissions for h in histories)
            self.stderr.write(
                f"{each.slug}: {len(histories)} histories ({submissions} submissions) last submitted "
                f"before {before:%Y-%m-%d %H:%M} UTC"
            )
            totals[0] += len(histories)
            if dry_run or not histories:
                totals[1] += submissions
                continue
            for start in range(0, len(histories), batch):
                purged = histories_purge(
                    course=each, histories=histories[start : start + batch], reason=reason
                )
                totals[1] += purged.submissions
                totals[2] += purged.attempts
                self.progress(f"{each.slug} histories", min(start + batch, len(histories)), len(histories))
        if dry_run:
            self.stdout.write(f"would purge {totals[0]} histories: {totals[1]} submissions (dry run)")
        else:
            self.stdout.write(f"purged {totals[0]} histories: {totals[1]} submissions, {totals[2]} attempts")
