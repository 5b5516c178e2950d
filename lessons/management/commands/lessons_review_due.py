"""``manage.py lessons_review_due [--course SLUG]``: lessons past their review date."""

from lessons.maintenance import lessons_review_due
from tutor.commands import DomainCommand
from tutor.kernel.errors import InvalidInput
from tutor.models import Course


class Command(DomainCommand):
    help = (
        "List the approved, injected and quarantined lessons whose review_by has passed. Recall "
        "leaves them out until staff inject them with a new review_by or retire them; this "
        "command changes nothing. Exit status 0 whether or not any are due."
    )

    def add_arguments(self, parser):
        parser.add_argument("--course", help="only this course's lessons (slug)")

    def handle(self, *args, course, **options):
        course_ids = None
        if course:
            found = Course.objects.filter(slug=course).values_list("pk", flat=True).first()
            if found is None:
                raise InvalidInput(f"no course with slug {course!r}")
            course_ids = [found]
        due = lessons_review_due(course_ids=course_ids)
        if not due:
            self.stdout.write("no lessons past review_by")
            return
        self.stdout.write(f"{'course':<20} {'review_by':<10} {'days':>5} {'status':<12} {'id':<36} title")
        for item in due:
            self.stdout.write(
                f"{item.course:<20} {item.review_by.isoformat():<10} {item.days_over:>5} {item.status:<12} "
                f"{item.lesson_id:<36} {item.title}"
            )
        self.stderr.write(f"{len(due)} lessons past review_by")
