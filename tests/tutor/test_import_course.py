"""``import_course`` (SPEC §1, §9): validated, idempotent, all or nothing, and a
rubric version is never edited in place."""

import copy
import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from tests.factories import DEFAULT_CRITERIA, course_data
from tutor.models import Course, Rubric, Task

ROOT = Path(__file__).resolve().parents[2]


def write(path: Path, data) -> Path:
    if path.suffix == ".json":
        path.write_text(json.dumps(data), encoding="utf-8")
    else:
        path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def run_import(path: Path, *args: str) -> str:
    out = StringIO()
    call_command("import_course", str(path), *args, stdout=out)
    return out.getvalue()


def normalised(criteria: list[dict]) -> list[dict]:
    """Criteria as stored: every criterion has a ``check``, ``None`` when absent."""
    return [{"check": None, **c} for c in criteria]


def stored_rows() -> tuple[int, int, int]:
    return Course.objects.count(), Task.objects.count(), Rubric.objects.count()


def db_snapshot() -> list:
    """Every stored value an import may touch, to prove a refused one changed nothing."""
    return [
        list(Course.objects.order_by("pk").values()),
        list(Task.objects.order_by("pk").values()),
        list(Rubric.objects.order_by("pk").values()),
    ]


# --- happy path ---------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".json", ".yaml", ".yml"])
def test_import_creates_course_tasks_and_current_rubrics(db, tmp_path, suffix):
    data = course_data("se-101", tasks=2)
    data["tasks"][1]["rubric"]["criteria"] = DEFAULT_CRITERIA[:1]

    out = run_import(write(tmp_path / f"course{suffix}", data))

    course = Course.objects.get(slug="se-101")
    assert course.title == "Course se-101"
    t1, t2 = Task.objects.filter(course=course).order_by("position")
    assert (t1.slug, t1.title, t1.goal) == ("t1", "Task 1", "Goal of task 1")
    assert t1.steps == ["Read", "Write", "Check"]
    assert t1.tags == ["javascript", "docs"]
    assert t1.materials == "Some materials"
    assert t1.current_rubric.version == "2026.1"
    assert t1.current_rubric.criteria == normalised(DEFAULT_CRITERIA)
    assert t2.current_rubric.criteria == normalised(DEFAULT_CRITERIA[:1])
    assert t1.current_rubric.content_hash != t2.current_rubric.content_hash
    assert "course se-101: 2 tasks" in out
    assert "created: t1, t2" in out


def test_yaml_file_in_the_spec_format_is_read_with_its_inline_mappings(db, tmp_path):
    # The exact notation of SPEC §9: flow mappings, a quoted version, a learning
    # criterion without a check.
    path = tmp_path / "course.yaml"
    path.write_text(
        """
slug: se-101
title: Software Engineering Studio
tasks:
  - slug: t1-explain
    title: Explain a function
    goal: Write a report explaining first()
    steps: [Read the source, Write the report]
    tags: [javascript, docs]
    rubric:
      version: "2026.1"
      criteria:
        - {id: A1, kind: acceptance, text: CI passes, check: {type: ci_passed}}
        - {id: A2, kind: acceptance, text: Names first, check: {type: contains, field: report, all: [first]}}
        - {id: L1, kind: learning, text: Reflects on edge cases}
""",
        encoding="utf-8",
    )

    run_import(path)

    task = Task.objects.get(slug="t1-explain")
    assert task.materials == ""
    assert task.current_rubric.criteria == [
        {"id": "A1", "kind": "acceptance", "text": "CI passes", "check": {"type": "ci_passed"}},
        {
            "id": "A2",
            "kind": "acceptance",
            "text": "Names first",
            "check": {"type": "contains", "field": "report", "all": ["first"]},
        },
        {"id": "L1", "kind": "learning", "text": "Reflects on edge cases", "check": None},
    ]


def test_reimporting_the_same_file_writes_nothing_and_says_unchanged(db, tmp_path):
    path = write(tmp_path / "course.yaml", course_data("se-101", tasks=2))
    run_import(path)
    before = db_snapshot()

    with CaptureQueriesContext(connection) as queries:
        out = run_import(path)

    writes = [
        q["sql"] for q in queries if q["sql"].lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))
    ]
    assert writes == []
    assert db_snapshot() == before
    assert "unchanged: t1, t2" in out
    assert "created" not in out
    assert "updated" not in out


def test_changed_task_text_updates_the_task_in_place(db, tmp_path):
    data = course_data("se-101")
    run_import(write(tmp_path / "v1.json", data))
    task_id = Task.objects.get().pk
    data["tasks"][0]["goal"] = "A sharper goal"

    out = run_import(write(tmp_path / "v2.json", data))

    task = Task.objects.get()
    assert task.pk == task_id
    assert task.goal == "A sharper goal"
    assert Rubric.objects.count() == 1
    assert "updated: t1" in out


def test_new_rubric_version_keeps_the_old_rubric_and_becomes_current(db, tmp_path):
    data = course_data("se-101")
    run_import(write(tmp_path / "v1.yaml", data))
    old = Task.objects.get().current_rubric
    data["tasks"][0]["rubric"] = {"version": "2026.2", "criteria": DEFAULT_CRITERIA[:2]}

    out = run_import(write(tmp_path / "v2.yaml", data))

    task = Task.objects.get()
    assert task.current_rubric.version == "2026.2"
    assert task.current_rubric.criteria == normalised(DEFAULT_CRITERIA[:2])
    assert task.current_rubric_id != old.pk
    kept = Rubric.objects.get(pk=old.pk)
    assert (kept.version, kept.criteria, kept.content_hash) == ("2026.1", old.criteria, old.content_hash)
    assert "new rubric version for t1: 2026.2" in out


def test_changed_criteria_under_the_same_version_are_refused_and_nothing_changes(db, tmp_path):
    data = course_data("se-101", tasks=2)
    run_import(write(tmp_path / "v1.yaml", data))
    before = db_snapshot()
    # In one file: a course title change, a task update that comes first, a new
    # task, and the refused rubric edit. All or nothing: none of it may land.
    changed = copy.deepcopy(data)
    changed["title"] = "Renamed course"
    changed["tasks"][0]["title"] = "Renamed task"
    changed["tasks"][1]["rubric"]["criteria"] = DEFAULT_CRITERIA[:3]
    changed["tasks"].append({**copy.deepcopy(data["tasks"][0]), "slug": "t3"})

    with pytest.raises(CommandError, match="criteria changed: bump the rubric version") as excinfo:
        run_import(write(tmp_path / "v2.yaml", changed))

    assert "tasks[1].rubric" in str(excinfo.value)
    assert db_snapshot() == before


def test_unquoted_decimal_rubric_version_is_refused(db, tmp_path):
    # YAML reads 2026.10 as the float 2026.1, which would collide with "2026.1".
    path = tmp_path / "course.yaml"
    path.write_text(
        yaml.safe_dump(course_data("se-101")).replace("version: '2026.1'", "version: 2026.10"),
        encoding="utf-8",
    )
    assert "version: 2026.10" in path.read_text()

    with pytest.raises(CommandError, match=r"tasks\[0\]\.rubric\.version"):
        run_import(path)

    assert stored_rows() == (0, 0, 0)


# --- malformed files ------------------------------------------------------------


def _criteria(data) -> list:
    # Break the second task: a partial import would already have stored the
    # course and the first task, so "nothing stored" really is checked.
    return data["tasks"][1]["rubric"]["criteria"]


def _missing_course_slug(data):
    del data["slug"]


def _missing_task_slug(data):
    del data["tasks"][1]["slug"]


def _bad_kind(data):
    _criteria(data)[0]["kind"] = "bonus"


def _long_id(data):
    _criteria(data)[0]["id"] = "A" * 65


def _duplicate_id(data):
    _criteria(data)[1]["id"] = _criteria(data)[0]["id"]


def _bad_check_type(data):
    _criteria(data)[0]["check"] = {"type": "lint_passed"}


def _contains_without_terms(data):
    _criteria(data)[1]["check"] = {"type": "contains", "field": "report"}


def _file_exists_without_path(data):
    _criteria(data)[0]["check"] = {"type": "file_exists"}


def _tasks_not_a_list(data):
    data["tasks"] = {"slug": "t1"}


def _missing_rubric_version(data):
    del data["tasks"][1]["rubric"]["version"]


def _empty_criteria(data):
    data["tasks"][1]["rubric"]["criteria"] = []


def _duplicate_task_slug(data):
    data["tasks"][1]["slug"] = data["tasks"][0]["slug"]


def _too_many_tags(data):
    data["tasks"][1]["tags"] = [f"tag-{i}" for i in range(21)]


def _long_tag(data):
    data["tasks"][1]["tags"] = ["ok", "t" * 65]


def _blank_tag(data):
    data["tasks"][1]["tags"] = ["ok", "  "]


def _tag_not_a_string(data):
    data["tasks"][1]["tags"] = ["ok", 7]


@pytest.mark.parametrize(
    ("breaks", "field", "reason"),
    [
        (_missing_course_slug, "slug", "is required"),
        (_too_many_tags, "tasks[1].tags", "at most 20 tags; got 21"),
        (_long_tag, "tasks[1].tags[1]", "at most 64 characters"),
        (_blank_tag, "tasks[1].tags[1]", "must not be empty"),
        (_tag_not_a_string, "tasks[1].tags[1]", "must be a string (got int: quote it)"),
        (_missing_task_slug, "tasks[1].slug", "is required"),
        (_bad_kind, "tasks[1].rubric.criteria[0].kind", "must be 'acceptance' or 'learning'"),
        (_long_id, "tasks[1].rubric.criteria[0].id", "at most 64 characters"),
        (_duplicate_id, "tasks[1].rubric.criteria[1].id", "duplicate criterion id 'A1'"),
        (_bad_check_type, "tasks[1].rubric.criteria[0].check.type", "must be one of"),
        (_contains_without_terms, "tasks[1].rubric.criteria[1].check", "needs 'all' or 'any'"),
        (_file_exists_without_path, "tasks[1].rubric.criteria[0].check.path", "is required"),
        (_tasks_not_a_list, "tasks", "must be a non-empty list"),
        (_missing_rubric_version, "tasks[1].rubric.version", "is required"),
        (_empty_criteria, "tasks[1].rubric.criteria", "must be a non-empty list"),
        (_duplicate_task_slug, "tasks[1].slug", "duplicate task slug 't1'"),
    ],
)
@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_malformed_file_names_the_field_and_stores_nothing(db, tmp_path, breaks, field, reason, suffix):
    data = course_data("se-101", tasks=2)
    breaks(data)

    with pytest.raises(CommandError) as excinfo:
        run_import(write(tmp_path / f"course{suffix}", data))

    assert f"invalid course file: {field}: " in str(excinfo.value)
    assert reason in str(excinfo.value)
    assert stored_rows() == (0, 0, 0)


def test_malformed_update_leaves_the_existing_course_as_it_was(db, tmp_path):
    data = course_data("se-101", tasks=2)
    run_import(write(tmp_path / "v1.json", data))
    before = db_snapshot()
    data["title"] = "Renamed"
    _bad_kind(data)

    with pytest.raises(CommandError, match=r"tasks\[1\]\.rubric\.criteria\[0\]\.kind"):
        run_import(write(tmp_path / "v2.json", data))

    assert db_snapshot() == before


def test_unreadable_file_is_reported_with_its_path(db, tmp_path):
    missing = tmp_path / "nope.yaml"

    with pytest.raises(CommandError, match="FILE: cannot read") as excinfo:
        run_import(missing)

    assert str(missing) in str(excinfo.value)
    assert stored_rows() == (0, 0, 0)


@pytest.mark.parametrize(
    ("name", "text"),
    [("course.yaml", "slug: se-101\ntasks: [unclosed\n"), ("course.json", '{"slug": "se-101",')],
)
def test_invalid_yaml_or_json_is_reported(db, tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")

    with pytest.raises(CommandError, match="FILE: .* is not valid JSON/YAML"):
        run_import(path)

    assert stored_rows() == (0, 0, 0)


# MATERIALS (line 7) and TEXT (line 11) stand for an unquoted value of a text field.
IMPOSSIBLE_DATE_COURSE = """\
slug: se-202
title: Software Engineering Studio II
tasks:
  - slug: t1
    title: Explain a function
    goal: Write a report
    materials: MATERIALS
    rubric:
      version: "2026.1"
      criteria:
        - {id: A1, kind: acceptance, text: TEXT, check: {type: ci_passed}}
"""


@pytest.mark.parametrize(
    ("field", "value", "line", "problem"),
    [
        ("MATERIALS", "2027-13-01", 7, "'2027-13-01' is not a date: month must be in 1..12"),
        ("MATERIALS", "2027-02-30", 7, "'2027-02-30' is not a date: day is out of range for month"),
        ("TEXT", "2027-02-29 10:00:00", 11, "'2027-02-29 10:00:00' is not a date: day is out of range"),
        ("MATERIALS", "0x_", 7, "'0x_' cannot be read as an integer"),
        ("TEXT", "1_000_" + "0" * 4400, 11, "cannot be read as an integer"),
    ],
    ids=["month-13", "30-february", "29-february-2027", "hex-without-digits", "4400-digit-integer"],
)
def test_an_unquoted_impossible_yaml_date_is_refused_with_its_line(db, tmp_path, field, value, line, problem):
    # PyYAML's safe loader builds a date from any scalar shaped like one, and
    # datetime refuses month 13 or 30 February while the file is being read.
    path = tmp_path / "course.yaml"
    path.write_text(IMPOSSIBLE_DATE_COURSE.replace(field, "Plain words"), encoding="utf-8")
    run_import(path)
    before = db_snapshot()
    path.write_text(IMPOSSIBLE_DATE_COURSE.replace(field, value), encoding="utf-8")

    with pytest.raises(CommandError) as excinfo:
        run_import(path)

    message = str(excinfo.value)
    assert message.startswith(f"invalid course file: FILE: {path} is not valid JSON/YAML: ")
    assert problem in message and f"line {line}, column" in message
    assert db_snapshot() == before


def test_a_yaml_scalar_instead_of_a_mapping_is_refused(db, tmp_path):
    path = tmp_path / "course.yaml"
    path.write_text("just a sentence\n", encoding="utf-8")

    with pytest.raises(CommandError, match=r"\(top level\): must be a mapping"):
        run_import(path)


# --- the real command line ------------------------------------------------------


@pytest.fixture
def cli(tmp_path):
    """Run ``manage.py`` against a fresh migrated SQLite file (committed data,
    the real exit code and streams)."""
    environ = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    environ.update(
        DJANGO_SETTINGS_MODULE="tutor.settings",
        SECRET_KEY="command-line-test-key",
        DATABASE_URL=f"sqlite:///{tmp_path / 'cli.sqlite3'}",
    )

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", *args],
            cwd=ROOT,
            env=environ,
            capture_output=True,
            text=True,
            timeout=120,
        )

    migrated = run("migrate", "--verbosity", "0")
    assert migrated.returncode == 0, migrated.stderr
    return run


def test_an_unquoted_yaml_tag_that_is_not_text_is_named_with_its_type(db, tmp_path):
    data = course_data("se-101", tasks=1)
    data["tasks"][0]["tags"] = ["TAGS"]
    path = tmp_path / "course.yaml"
    text = yaml.safe_dump(data, default_flow_style=None)
    assert text.count("[TAGS]") == 1
    path.write_text(text.replace("[TAGS]", "[python, 3.10, on]"), encoding="utf-8")

    with pytest.raises(
        CommandError, match=r"tasks\[0\]\.tags\[1\]: must be a string \(got float: quote it\)"
    ):
        run_import(path)

    assert stored_rows() == (0, 0, 0)


def test_twenty_tags_of_64_characters_are_taken_as_they_are(db, tmp_path):
    data = course_data("se-101", tasks=1)
    tags = [f"{i:02d}" + "t" * 62 for i in range(20)]
    data["tasks"][0]["tags"] = tags

    run_import(write(tmp_path / "course.json", data))

    assert Task.objects.get(slug="t1").tags == tags


def test_task_tags_are_stored_as_a_lessons_are_cleaned_and_each_tag_once(db, tmp_path):
    data = course_data("se-101", tasks=1)
    # Spaces around and inside, and the same tag again in another case or width.
    data["tasks"][0]["tags"] = [
        "  Week   1 ",
        "python",
        "PYTHON",
        "ｐｙｔｈｏｎ",
        "week 1",
        " " + "t" * 64 + "  ",
    ]

    run_import(write(tmp_path / "course.json", data))

    assert Task.objects.get(slug="t1").tags == ["Week 1", "python", "t" * 64]


def test_command_line_exit_codes(cli, tmp_path):
    data = course_data("se-101")
    first = cli("import_course", str(write(tmp_path / "v1.yaml", data)))
    assert first.returncode == 0, first.stderr
    assert "created: t1" in first.stdout

    again = cli("import_course", str(write(tmp_path / "v1.yaml", data)))
    assert again.returncode == 0, again.stderr
    assert "unchanged: t1" in again.stdout

    data["tasks"][0]["rubric"]["criteria"] = DEFAULT_CRITERIA[:1]
    refused = cli("import_course", str(write(tmp_path / "v2.yaml", data)))
    assert refused.returncode == 1
    assert "criteria changed: bump the rubric version" in refused.stderr

    malformed = cli("import_course", str(tmp_path / "missing.yaml"))
    assert malformed.returncode == 1
    assert "FILE: cannot read" in malformed.stderr

    impossible = tmp_path / "impossible.yaml"
    impossible.write_text(yaml.safe_dump(data).replace("Some materials", "2027-13-01"), encoding="utf-8")
    refused_date = cli("import_course", str(impossible))
    assert refused_date.returncode == 1
    assert "Traceback" not in refused_date.stderr
    assert "'2027-13-01' is not a date: month must be in 1..12" in refused_date.stderr
