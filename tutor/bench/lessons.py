"""The lessons seeder of ``manage.py bench_context`` (SPEC §10: ≥ 10k lessons).

Follows the seeder protocol of ``tutor.bench.seeding`` (``size``, ``count``,
``seed``, ``delete``). Every seeded lesson is ``injected`` in the bench
course, with tags and symptoms drawn from a vocabulary in which the bench
task's own tags and the words of its feedback and message are common but
not universal -- so the measured context really recalls, and the recall
query has real candidates to find among the rest.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING

from django.db import connection, transaction
from django.utils import timezone

from lessons.models import Lesson, LessonKey, LessonKind, LessonSource, LessonStatus
from lessons.selectors.library import lessons_changed
from lessons.services.store import lesson_keys
from lessons.text import estimate_tokens, render_lesson
from tutor.models import Course

if TYPE_CHECKING:
    from tutor.bench.seeding import Bench

# Rows per transaction, as the other seeders (tutor.bench.seeding imports this module).
BATCH_ROWS = 2000

BENCH_LESSONS = 10_000
# Words of the bench's feedback and message (tutor.bench.seeding): a lesson
# carrying one of them is a real candidate for the measured context.
BENCH_SYMPTOMS = ["CI failed with exit code 1", "1 failing", "should be undefined", "empty-array test"]
COMMON_TAGS = ["javascript", "docs", "testing", "ci", "arrays", "edge-cases", "async", "node"]
TOPIC_TAGS = [f"topic-{i:03d}" for i in range(300)]
WEEK_TAGS = [f"week-{n}" for n in range(1, 13)]
OTHER_SYMPTOMS = [f"error E{i:04d} in module m{i % 50:02d}" for i in range(2000)]
BODY = (
    "When this happens, read the failing assertion before changing code: reproduce it locally with the "
    "same input, then fix the smallest thing that makes the check pass and run the whole suite again."
)


class LessonsSeeder:
    size = "lessons"
    default = 10_000
    option_help = "injected lessons of the bench course (default 10000)"

    def count(self, course: Course) -> int:
        return Lesson.objects.filter(course=course).count()

    def seed(self, bench: Bench) -> None:
        from tutor.bench.seeding import BENCH_RANDOM_SEED, Progress

        rng = random.Random(BENCH_RANDOM_SEED + 2)
        total = bench.sizes.get(self.size, BENCH_LESSONS)
        today = timezone.localdate()
        now = timezone.now()
        progress = Progress(bench.write, "lessons", total)
        for start in range(0, total, BATCH_ROWS):
            lessons = [
                self.lesson(rng, i, bench.course, today, now)
                for i in range(start, min(start + BATCH_ROWS, total))
            ]
            with transaction.atomic():
                Lesson.objects.bulk_create(lessons)
                LessonKey.objects.bulk_create(key for lesson in lessons for key in lesson_keys(lesson))
                lessons_changed(bench.course.pk)  # bulk_create sends no post_save
            progress.update(start + len(lessons))
        if connection.vendor == "postgresql":
            with connection.cursor() as cursor:
                for model in (Lesson, LessonKey):
                    cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")

    @staticmethod
    def lesson(rng: random.Random, i: int, course: Course, today, now) -> Lesson:
        # About 3% of lessons share a bench tag, 2% a bench symptom.
        tags = rng.sample(TOPIC_TAGS, rng.randint(1, 3)) + [rng.choice(WEEK_TAGS)]
        if rng.random() < 0.03:
            tags.append(rng.choice(COMMON_TAGS))
        symptoms = [rng.choice(OTHER_SYMPTOMS)]
        if rng.random() < 0.02:
            symptoms.append(rng.choice(BENCH_SYMPTOMS))
        title = f"Lesson {i + 1}: {symptoms[-1]}"
        body = BODY[: rng.randint(80, len(BODY))]
        return Lesson(
            course=course,
            title=title,
            body=body,
            tags=tags,
            symptoms=symptoms,
            status=LessonStatus.INJECTED,
            kind=rng.choice([LessonKind.GUARDRAIL, LessonKind.STRATEGY]),
            source=LessonSource.IMPORT,
            hit_count=rng.randint(0, 2),
            last_hit=today - timedelta(days=rng.randint(0, 120)),
            review_by=today + timedelta(days=rng.randint(1, 180)),
            tokens=estimate_tokens(render_lesson(title, body)),
            injected_at=now,
        )

    def delete(self, course: Course, write: Callable[[str], None]) -> None:
        from tutor.bench.seeding import Progress

        ids = list(Lesson.objects.filter(course=course).values_list("pk", flat=True))
        progress = Progress(write, "deleting lessons", len(ids))
        for start in range(0, len(ids), BATCH_ROWS):
            batch = ids[start : start + BATCH_ROWS]
            with transaction.atomic():
                Lesson.objects.filter(pk__in=batch).delete()  # keys, hits, traces' links cascade
            progress.update(start + len(batch))
