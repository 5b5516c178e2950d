from django.contrib.auth import get_user_model
from django.core.management.base import CommandError

from tutor.commands import DomainCommand
from tutor.models import Course
from tutor.rights.erasure import student_erase


class Command(DomainCommand):
    help = (
        "Erase a person from every loop (SPEC §13): delete, or where the course keeps a record "
        "pseudonymise, everything that identifies them or holds what they wrote, in one audited "
        "transaction; then scan every table for what is left. With --course only that course's data "
        "goes and the person stays. Exit status 1 when the residue check finds anything."
    )

    def add_arguments(self, parser):
        parser.add_argument("user", metavar="USER", help="username")
        parser.add_argument("--course", metavar="SLUG", help="erase this course's data only")
        parser.add_argument("--dry-run", action="store_true", help="print what would go, table by table")

    def handle(self, *args, user, course, dry_run, **options):
        person = get_user_model().objects.filter(username=user).first()
        if person is None:
            raise CommandError(f"no such user: {user!r}")
        scope = None
        if course:
            scope = Course.objects.filter(slug=course).first()
            if scope is None:
                raise CommandError(f"no such course: {course!r}")
        report = student_erase(user=person, course=scope, dry_run=dry_run)
        where = f"course {report.course}" if report.course else "every course and the account"
        verb = "would erase" if dry_run else "erased"
        self.stdout.write(
            f"{verb} {user} ({where}) as {report.pseudonym}; correlation id {report.correlation_id}"
        )
        width = max((len(label) for label in report.counts), default=0)
        for label, counts in report.counts.items():
            deleted, kept = counts["deleted"], counts["pseudonymised"]
            self.stdout.write(f"  {label:<{width}}  {deleted:>6} deleted  {kept:>6} pseudonymised")
        if dry_run:
            return
        self.stdout.write(f"residue check: {len(report.residue)} hits")
        for hit in report.residue:
            self.stdout.write(f"  {hit.line()}")
        if report.residue:
            raise CommandError("the residue check found data of the person left: see the lines above")
