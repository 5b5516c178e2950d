import secrets
from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from tutor.coursefile import course_import, load_course_file, validate_course
from tutor.models import Enrollment
from tutor.services import enrollment_set

DEMO_FILE = Path(__file__).resolve().parents[2] / "demo" / "course.yaml"
DEMO_STUDENTS = ("alice", "bob")
DEMO_STAFF = "staff"
DEMO_SERVICE = "ci-bot"


class Command(BaseCommand):
    help = "Load the demo course and demo users, and print their API tokens."

    def handle(self, *args, **options):
        report = course_import(spec=validate_course(load_course_file(DEMO_FILE)))
        course = report.course
        rows = []
        for name in DEMO_STUDENTS:
            rows.append(
                enrollment_set(course=course, username=name, role=Enrollment.Role.STUDENT, create=True)
            )
        rows.append(
            enrollment_set(course=course, username=DEMO_STAFF, role=Enrollment.Role.STAFF, create=True)
        )
        rows.append(
            enrollment_set(course=course, username=DEMO_SERVICE, role=Enrollment.Role.SERVICE, create=True)
        )
        # A fresh password on every load: the demo never ships a known credential.
        password = secrets.token_urlsafe(12)
        staff = get_user_model().objects.get(username=DEMO_STAFF)
        staff.set_password(password)
        staff.save(update_fields=["password"])

        self.stdout.write(f"Demo course '{course.slug}' loaded ({course.tasks.count()} tasks).")
        self.stdout.write("API tokens (send as 'Authorization: Token <token>'):")
        for user, token in rows:
            role = Enrollment.objects.get(user=user, course=course).role
            self.stdout.write(f"  {user.username:<8} {role:<8} {token.key}")
        self.stdout.write(f"Admin login at /admin/: username '{DEMO_STAFF}', password '{password}'")
