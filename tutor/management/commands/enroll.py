import secrets
import sys

from django.contrib.auth import get_user_model, password_validation
from django.core.exceptions import ValidationError
from django.core.management.base import CommandError
from django.db import transaction

from tutor.commands import DomainCommand
from tutor.models import Course, Enrollment
from tutor.services import enrollment_set


class Command(DomainCommand):
    help = (
        "Enrol users in a course as students, staff or a service account, and issue tokens. "
        "stdout carries only the 'USERNAME TOKEN' lines of --print-token; everything else, "
        "passwords included, goes to stderr."
    )

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
        parser.add_argument(
            "--password-stdin",
            action="store_true",
            help="with --staff: read the admin password from the first line of standard input "
            "(without it, a newly created staff member gets a one-time password on stderr)",
        )

    def handle(
        self, *args, course, usernames, staff, service, create, print_token, password_stdin, **options
    ):
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
        if password_stdin and not staff:
            raise CommandError("--password-stdin sets an admin password: it needs --staff")
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
        known = set(User.objects.filter(username__in=usernames).values_list("username", flat=True))
        missing = [u for u in usernames if u not in known]
        if missing and not create:
            raise CommandError(f"unknown users: {', '.join(missing)} (pass --create to create them)")
        password = self.read_password() if password_stdin else None
        # All users or none: a failure half-way must not leave a partial enrolment.
        with transaction.atomic():
            rows = [
                enrollment_set(course=target, username=name, role=role, create=create) for name in usernames
            ]
            one_time = {}
            for user, _ in rows:
                if not staff:
                    continue
                if password is not None:
                    user.set_password(password)
                    user.save(update_fields=["password"])
                elif user.get_username() in missing or not user.has_usable_password():
                    # A new staff member, or one who never had a password (an
                    # API-only student made staff), must be able to sign in.
                    one_time[user.get_username()] = secrets.token_urlsafe(12)
                    user.set_password(one_time[user.get_username()])
                    user.save(update_fields=["password"])
        for user, token in rows:
            # Progress goes to stderr: stdout carries only the `USERNAME TOKEN` lines.
            self.stderr.write(f"enrolled {user.username} in {target.slug} as {role}")
            if user.get_username() in one_time:
                self.stderr.write(
                    f"  admin password for {user.username}: {one_time[user.get_username()]} "
                    "(shown once; change it in /admin/ or set one with --password-stdin)"
                )
            elif password is not None:
                self.stderr.write(f"  admin password for {user.username} set from standard input")
            if print_token:
                self.stdout.write(f"{user.username} {token.key}")

    def read_password(self) -> str:
        line = sys.stdin.readline()
        password = line.rstrip("\r\n")
        if not password:
            raise CommandError("--password-stdin: standard input held no password")
        try:
            password_validation.validate_password(password)
        except ValidationError as exc:
            raise CommandError("--password-stdin: " + " ".join(exc.messages)) from None
        return password
