"""What an operator sees (SPEC §1, §10): a Celery worker or beat without a
broker refuses to start with a clear message instead of consuming from an
in-memory queue; ``import_course --rereview`` reports progress as it queues."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from feedback.models import AttemptStatus, ReviewAttempt
from tests.factories import course_data, enroll, make_submission
from tests.tutor.test_settings import SETTINGS_VARIABLES
from tutor.models import Task

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("program", ["worker", "beat"])
def test_celery_without_redis_url_refuses_to_start_with_a_clear_message(program, tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in SETTINGS_VARIABLES}
    env.update(DJANGO_SETTINGS_MODULE="tutor.settings")
    extra = ["--schedule", str(tmp_path / "beat-schedule")] if program == "beat" else []

    result = subprocess.run(
        [sys.executable, "-m", "celery", "-A", "tutor", program, "--loglevel=INFO", *extra],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
    )

    assert result.returncode == 2, result.stdout + result.stderr
    assert (
        f"REDIS_URL is not set, so there is no broker: this {program} would wait"
        in result.stderr + result.stdout
    )


@pytest.mark.django_db
def test_rereview_prints_a_progress_line_per_student_on_stderr(tmp_path, settings):
    settings.TUTOR_LLM_BASE_URL = None
    settings.TUTOR_LLM_MODEL = "offline"
    path = tmp_path / "course.json"
    path.write_text(json.dumps(course_data("progress-101")))
    call_command("import_course", str(path), stdout=StringIO())
    task = Task.objects.select_related("current_rubric", "course").get(course__slug="progress-101")
    for i in range(25):
        make_submission(enroll(task.course, f"student{i:02d}"), task)
    path.write_text(json.dumps(course_data("progress-101", version="2026.2")))
    out, err = StringIO(), StringIO()

    call_command("import_course", str(path), "--rereview", stdout=out, stderr=err)

    lines = err.getvalue().splitlines()
    progress = [re.fullmatch(r"  re-review t1 \[([#.]{30})\] (\d+)/25", line) for line in lines]
    assert all(progress), lines
    done = [int(m.group(2)) for m in progress]
    assert done == list(range(1, 26))  # one line per queued re-review: 25 is under 20 lines x 2
    assert progress[-1].group(1) == "#" * 30
    assert progress[12].group(1) == "#" * 15 + "." * 15  # 13/25 of 30
    # The result goes to stdout, the progress to stderr only.
    assert "re-review queued for 25 submissions of t1" in out.getvalue()
    assert "[" not in out.getvalue()
    assert ReviewAttempt.objects.filter(rubric_version="2026.2").count() == 25
    assert set(ReviewAttempt.objects.filter(rubric_version="2026.2").values_list("status", flat=True)) <= {
        AttemptStatus.QUEUED,
        AttemptStatus.COMPLETED,
    }
