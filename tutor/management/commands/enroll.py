from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from tutor.models import Course, Enrollment
from tutor.services import EnrollError, enrollment_set


class Command(BaseCommand):
    help = "Enrol users in a course as students, staff or a service account, and issue tokens."

    def add_arguments(self, parser):
        parser.add_argument("course", help="course slug")
        parser.add_argument("usernames", nargs="+", metavar="USERNAME")
        role = parser.add_mutually_exclusive_group()
        role.add_argument("--staff", action="store_true", help="course staff with admin access")
        role.add_argument(
            "--service", action="store_true", help="a service account (CI) submitting for students"
        )
        parser.add_argument("--create", action="store_true", help="create missing users")
        parser.add_argument(
            "--print-token", action="store_true", help="print 'USERNAME TOKEN' per user on stdout"
        )

    def handle(self, *args, course, usernames, staff, service, create, print_token, **options):
        target = Course.objects.filter(slug=course).first()
        if target is None:
            raise CommandError(f"unknown course {course!r}")
        role = (
            Enrollment.Role.STAFF
            if staff
            else Enrollment.Role.SERVICE
            if service
            else Enrollment.Role.STUDENT
        )
        User = get_user_model()
        # A name with a space would break the one-line `USERNAME TOKEN` output.
        for name in usernames:
            try:
                User.username_validator(name)
            except ValidationError:
                raise CommandError(
                    f"invalid username {name!r}: use letters, digits and @ . + - _ only"
                ) from None
            if len(name) > 150:
                raise CommandError(f"invalid username {name!r}: at most 150 characters")
        # Check every name before changing anything, so a typo enrols nobody.
        if not create:
            known = set(User.objects.filter(username__in=usernames).values_list("username", flat=True))
            missing = [u for u in usernames if u not in known]
            if missing:
                raise CommandError(f"unknown users: {', '.join(missing)} (pass --create to create them)")
        # All users or none: a failure half-way must not leave a partial enrolment.
        try:
            with transaction.atomic():
                rows = [
                    enrollment_set(course=target, username=name, role=role, create=create)
                    for name in usernames
                ]
        except EnrollError as exc:
            raise CommandError(str(exc)) from None
        for user, token in rows:
            # Progress goes to stderr: stdout carries only the `USERNAME TOKEN` lines.
            self.stderr.write(f"enrolled {user.username} in {target.slug} as {role}")
            if print_token:
                self.stdout.write(f"{user.username} {token.key}")
