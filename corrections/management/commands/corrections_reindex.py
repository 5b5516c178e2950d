from corrections.services.relevance import relevance_rebuild
from tutor.commands import DomainCommand
from tutor.kernel.errors import InvalidInput
from tutor.models import Course


class Command(DomainCommand):
    help = (
        "Write the relevance index of course facts again (the facts' keys and token rows, the tasks' "
        "tokens and their overlap with the facts): after CORRECTIONS_QUERY_MAX_TOKENS or the word lists "
        "changed, or after loading tasks or facts from a fixture."
    )

    def add_arguments(self, parser):
        parser.add_argument("--course", action="append", default=[], metavar="SLUG", help="only this course")

    def handle(self, *args, **options):
        courses = None
        if options["course"]:
            courses = Course.objects.filter(slug__in=options["course"])
            missing = sorted(set(options["course"]) - set(courses.values_list("slug", flat=True)))
            if missing:
                raise InvalidInput(f"no such course: {', '.join(missing)}", field="course")
        written = relevance_rebuild(courses=courses, progress=self.progress)
        self.stdout.write(
            f"reindexed {written['courses']} courses: {written['facts']} facts ({written['keys']} keys), "
            f"{written['tasks']} tasks ({written['overlaps']} task-fact overlaps)"
        )
