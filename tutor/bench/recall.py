"""The lesson recall figure of ``manage.py bench_context`` (SPEC §6, §10:
under 5 ms with 10k lessons)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

from tutor.bench.seeding import CONTEXT_MESSAGE
from tutor.models import Task


def recall_figure(student, task: Task, lessons: int, write: Callable[[str], None], runs: int = 200) -> None:
    """How long the measured context's lesson recall takes (SPEC §6, §10:
    under 5 ms with 10k lessons): from the process's snapshot, as every
    warm request recalls, and by its statement, as a request inside a
    transaction that changed the course's lessons does."""
    from lessons.providers import symptom_texts
    from lessons.selectors import lessons_recall
    from lessons.selectors.library import lessons_preview_recall
    from tutor.chat.assembler import assemble_context
    from tutor.chat.selectors import student_task_and_open_session

    read = student_task_and_open_session(student, task.pk)
    request = assemble_context(
        student=student, task=read.task, message=CONTEXT_MESSAGE, earlier=read.history,
        correlation_id="bench-recall", session_id=read.session_id, preview=True,
        snapshot_versions=read.versions, feedback=read.feedback,
    ).request  # fmt: skip
    tags, texts = read.task.tags or [], symptom_texts(request)

    def timed(recall) -> tuple[float, int]:
        recall()  # a warm snapshot, a prepared statement
        durations, recalled = [], 0
        for _ in range(runs):
            began = time.perf_counter()
            recalled = len(recall().recalled)
            durations.append(time.perf_counter() - began)
        return statistics.median(durations), recalled

    snapshot, recalled = timed(
        lambda: lessons_preview_recall(
            course_id=task.course_id, tags=tags, texts=texts, versions=request.snapshot_versions
        )
    )
    statement, _ = timed(
        lambda: lessons_recall(
            course_ids=[task.course_id], tags=tags, texts=texts, with_counts=False, lines=False
        )
    )
    write(
        f"lessons recall: {snapshot * 1000:.2f} ms from the snapshot, {statement * 1000:.2f} ms by its "
        f"statement (median of {runs}; {lessons} lessons, {recalled} recalled)"
    )
