"""``manage.py import_lessons FILE [--course SLUG]`` (SPEC §1)."""

from lessons.services.imports import lessons_import, load_lesson_file, resolve_courses, validate_lesson_rows
from tutor.commands import DomainCommand


class Command(DomainCommand):
    help = (
        "Import lessons from a JSON or YAML list (title, body, tags, symptoms, status, hit_count, "
        "last_hit, review_by, tokens, course, kind). All rows or none; statuses are kept and each "
        "row is audited as an operator import. Rows without a course get --course, else are global."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="path to a .json, .yaml or .yml lesson list")
        parser.add_argument("--course", help="course slug for rows that name none (default: global)")

    def handle(self, *args, file, course, **options):
        rows = validate_lesson_rows(load_lesson_file(file), default_course=course)
        courses = resolve_courses(rows, course)
        report = lessons_import(
            rows=rows,
            courses=courses,
            source=str(file),
            progress=lambda done, total: self.progress("importing lessons", done, total),
        )
        by_status: dict[str, int] = {}
        for lesson in report.created:
            by_status[lesson.status] = by_status.get(lesson.status, 0) + 1
        summary = ", ".join(f"{n} {status}" for status, n in sorted(by_status.items())) or "none"
        self.stdout.write(f"imported {len(report.created)} lessons ({summary})")
        if report.skipped:
            rows_text = ", ".join(f"[{i}]" for i in report.skipped)
            self.stdout.write(f"skipped {len(report.skipped)} already present: {rows_text}")
        for index, review_by in report.past_review:
            # Kept (the dates of a library are kept), but never recalled until renewed.
            self.stderr.write(
                f"warning: [{index}].review_by {review_by.isoformat()} is in the past: "
                "imported, never recalled until staff inject it with a new review_by (see lessons_review_due)"
            )
