from tutor.commands import DomainCommand
from tutor.coursefile import course_import, load_course_file, validate_course
from tutor.models import Task


class Command(DomainCommand):
    help = "Create or update a course from a JSON or YAML course file (idempotent)."

    def add_arguments(self, parser):
        parser.add_argument("file", help="path to a .json, .yaml or .yml course file")
        parser.add_argument(
            "--rereview",
            action="store_true",
            help="queue a new review attempt for every student's latest submission of each "
            "task whose rubric changed",
        )

    def handle(self, *args, file, rereview, **options):
        spec = validate_course(load_course_file(file))
        report = course_import(spec=spec, source=str(file))
        out = self.stdout
        out.write(f"course {report.course.slug}: {len(spec.tasks)} tasks")
        for label, slugs in (
            ("created", report.created_tasks),
            ("updated", report.updated_tasks),
            ("unchanged", report.unchanged_tasks),
        ):
            if slugs:
                out.write(f"  {label}: {', '.join(slugs)}")
        for task in report.rubric_changed:
            out.write(f"  new rubric version for {task.slug}: {task.current_rubric.version}")
        if rereview:
            from feedback.services.intake import rereview_latest_submissions

            # Every task, not only those bumped now: a bump imported earlier
            # without --rereview left its latest submissions outdated too.
            queued = 0
            for task in Task.objects.filter(course=report.course).select_related("course", "current_rubric"):
                count = rereview_latest_submissions(
                    task=task,
                    progress=lambda done, total, slug=task.slug: self.progress(
                        f"  re-review {slug}", done, total
                    ),
                )
                queued += count
                if count:
                    out.write(f"  re-review queued for {count} submissions of {task.slug}")
            if not queued:
                out.write("  re-review: every latest submission is reviewed under the current rules")
