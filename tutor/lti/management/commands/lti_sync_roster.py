from django.core.management.base import CommandError

from tutor.commands import DomainCommand
from tutor.lti.services.roster import roster_sync
from tutor.models import Course


class Command(DomainCommand):
    help = (
        "Enrol a course's LMS members (LTI NRPS) with their roles; members who left lose the enrolment "
        "but keep their history. Idempotent. A roster not read whole, or one removing more than "
        "LTI_ROSTER_MAX_REMOVAL_SHARE of the course, changes nothing and exits 1."
    )

    def add_arguments(self, parser):
        parser.add_argument("course", help="course slug")
        parser.add_argument(
            "--allow-mass-removal",
            action="store_true",
            help="apply a roster that removes more than LTI_ROSTER_MAX_REMOVAL_SHARE of the course at once",
        )

    def handle(self, *args, course, allow_mass_removal=False, **options):
        target = Course.objects.filter(slug=course).first()
        if target is None:
            raise CommandError(f"unknown course {course!r}")
        result = roster_sync(
            course=target,
            allow_mass_removal=allow_mass_removal,
            progress=lambda done, total: self.progress("roster", done, total),
        )
        self.stdout.write(
            f"roster of {target.slug}: {result.members} members, {result.enrolled} enrolled, "
            f"{result.changed} changed role, {result.unchanged} unchanged, {result.removed} removed, "
            f"{len(result.skipped)} skipped"
        )
        kind = "membership differences" if result.differences else "the whole roster"
        self.stderr.write(f"read {kind} in {result.pages} page(s)")
        if result.skipped:
            self.stderr.write("skipped (no learner or staff role): " + ", ".join(result.skipped[:20]))
