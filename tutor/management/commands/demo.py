import secrets
from pathlib import Path

from django.contrib.auth import get_user_model

from tutor.commands import DomainCommand
from tutor.coursefile import course_import, load_course_file, validate_course
from tutor.models import Course, Enrollment
from tutor.services import enrollment_set

DEMO_FILE = Path(__file__).resolve().parents[2] / "demo" / "course.yaml"
DEMO_STUDENTS = ("alice", "bob")
DEMO_STAFF = "staff"
DEMO_SERVICE = "ci-bot"


class Command(DomainCommand):
    help = (
        "Load the demo course and demo users, and print their API tokens. Only what is missing "
        "is created: an existing demo course (and any rubric an operator bumped since) and an "
        "existing staff password are kept."
    )

    def handle(self, *args, **options):
        spec = validate_course(load_course_file(DEMO_FILE))
        course = Course.objects.filter(slug=spec.slug).first()
        if course is None:
            course = course_import(spec=spec, source=str(DEMO_FILE)).course
            self.stdout.write(f"Demo course '{course.slug}' loaded ({course.tasks.count()} tasks).")
        else:
            self.stdout.write(
                f"Demo course '{course.slug}' exists ({course.tasks.count()} tasks): kept as it is."
            )
        roles = [(name, Enrollment.Role.STUDENT) for name in DEMO_STUDENTS]
        roles += [(DEMO_STAFF, Enrollment.Role.STAFF), (DEMO_SERVICE, Enrollment.Role.SERVICE)]
        rows = []
        for name, role in roles:
            existing = Enrollment.objects.filter(user__username=name, course=course).first()
            rows.append(
                enrollment_set(
                    course=course, username=name, role=existing.role if existing else role, create=True
                )
            )
        staff = get_user_model().objects.get(username=DEMO_STAFF)
        password = None
        if not staff.has_usable_password():
            # A fresh password for a new staff user: the demo never ships a known credential.
            password = secrets.token_urlsafe(12)
            staff.set_password(password)
            staff.save(update_fields=["password"])

        self.stdout.write("API tokens (send as 'Authorization: Token <token>'):")
        for user, token in rows:
            role = Enrollment.objects.get(user=user, course=course).role
            self.stdout.write(f"  {user.username:<8} {role:<8} {token.key}")
        if password is not None:
            self.stdout.write(f"Admin login at /admin/: username '{DEMO_STAFF}', password '{password}'")
        else:
            self.stdout.write(
                f"Admin login at /admin/: username '{DEMO_STAFF}' with the password set earlier "
                "(set a new one: manage.py changepassword staff)"
            )
