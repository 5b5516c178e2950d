"""``manage.py import_lessons FILE [--course SLUG]`` (SPEC §1): validated with
field paths, all or nothing, statuses and given tokens kept, each row audited
as an operator import, progress on stderr."""

from __future__ import annotations

import json
from datetime import date
from io import StringIO

import pytest
import yaml
from django.core.management import call_command
from django.core.management.base import CommandError

from lessons.models import Lesson
from lessons.services.store import default_review_by
from lessons.text import estimate_tokens, render_lesson
from tutor.models import AuditEvent

LIBRARY = [
    {
        "title": "[parse-escape] unexpected token in the comparison output",
        "body": "Escape the output before comparing.",
        "tags": ["adaptor", "parsing"],
        "symptoms": ["unexpected token", "escape"],
        "status": "injected",
        "hit_count": 2,
        "last_hit": "2026-10-10",
        "review_by": "2027-12-01",
        "tokens": 320,
    },
    {
        "title": "[draft] gateway timeout",
        "body": "Probably infrastructure.",
        "status": "pending",
        "course": "other-101",
    },
    {"title": "[old] export drift", "body": "Old format.", "status": "rejected"},
]


def run(tmp_path, rows, *args, name="lessons.json"):
    path = tmp_path / name
    path.write_text(json.dumps(rows) if name.endswith(".json") else yaml.safe_dump(rows), encoding="utf-8")
    out, err = StringIO(), StringIO()
    call_command("import_lessons", str(path), *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.mark.django_db
def test_an_import_keeps_statuses_counts_dates_and_given_tokens(tmp_path, course, other_course):
    out, err = run(tmp_path, LIBRARY, "--course", "se-101")

    assert "imported 3 lessons (1 injected, 1 pending, 1 rejected)" in out
    assert "importing lessons [" in err and "3/3" in err
    first = Lesson.objects.get(title__startswith="[parse-escape]")
    assert (first.course, first.status, first.hit_count, first.tokens) == (course, "injected", 2, 320)
    assert (first.last_hit, first.review_by) == (date(2026, 10, 10), date(2027, 12, 1))
    assert first.injected_at is not None and first.source == "import"
    draft = Lesson.objects.get(title__startswith="[draft]")
    assert draft.course == other_course  # its own course wins over --course
    assert draft.tokens == estimate_tokens(render_lesson(draft.title, draft.body))  # estimated when absent
    assert draft.review_by == default_review_by()
    rejected = Lesson.objects.get(status="rejected")
    assert rejected.reject_reason == "other" and rejected.reject_note
    events = AuditEvent.objects.filter(event="lesson_imported").order_by("id")
    assert [(e.actor, e.actor_label, e.to_state) for e in events] == [
        (None, "operator", "injected"),
        (None, "operator", "pending"),
        (None, "operator", "rejected"),
    ]
    assert events[0].extra["row"] == 0 and events[0].correlation_id


@pytest.mark.django_db
def test_rows_without_a_course_are_global_without_the_option(tmp_path):
    run(tmp_path, [{"title": "g", "body": "b"}], name="lessons.yaml")

    assert Lesson.objects.get().course is None


@pytest.mark.django_db
def test_yaml_dates_are_read_as_dates(tmp_path, course):
    (tmp_path / "l.yaml").write_text("- {title: t, body: b, review_by: 2027-01-31, last_hit: 2026-11-01}\n")

    call_command("import_lessons", str(tmp_path / "l.yaml"), stdout=StringIO(), stderr=StringIO())

    assert Lesson.objects.get().review_by == date(2027, 1, 31)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("row", "problem"),
    [
        ("review_by: 2027-13-01", "'2027-13-01' is not a date: month must be in 1..12"),
        ("last_hit: 2027-02-30", "'2027-02-30' is not a date: day is out of range for month"),
        # Other scalars the safe loader builds and Python refuses.
        ("tags: [0b_]", "'0b_' cannot be read as an integer"),
        ("hit_count: " + "7" * 5000, "cannot be read as an integer"),
        ("title: !!bool maybe", "'maybe' cannot be read as true or false"),
        ("title: !!timestamp soon", "'soon' is not a date"),
    ],
    ids=[
        "month-13",
        "30-february",
        "binary-without-digits",
        "5000-digit-integer",
        "bool-tag",
        "timestamp-tag",
    ],
)
def test_an_unquoted_impossible_yaml_date_is_refused_with_its_line(tmp_path, course, row, problem):
    # PyYAML's safe loader builds a date from any scalar shaped like one, and
    # datetime refuses month 13 or 30 February while the file is being read.
    path = tmp_path / "lessons.yaml"
    path.write_text(f"- {{title: fine, body: fine}}\n- {{title: t, body: b, {row}}}\n", encoding="utf-8")

    with pytest.raises(CommandError) as excinfo:
        call_command("import_lessons", str(path), stdout=StringIO(), stderr=StringIO())

    message = str(excinfo.value)
    assert message.startswith(f"invalid lesson file: FILE: {path} is not valid JSON/YAML: ")
    assert problem in message and "line 2, column" in message
    assert Lesson.objects.count() == 0
    assert not AuditEvent.objects.filter(event="lesson_imported").exists()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("suffix", "text"),
    [(".yaml", "[" * 5000), (".json", "[" * 5000), (".json", "7" * 5000)],
    ids=["yaml-5000-deep", "json-5000-deep", "json-5000-digit-integer"],
)
def test_a_file_python_cannot_nest_or_count_that_deep_is_refused(tmp_path, course, suffix, text):
    path = tmp_path / f"lessons{suffix}"
    path.write_text(text, encoding="utf-8")

    with pytest.raises(CommandError, match=r"invalid lesson file: FILE: .* is not valid JSON/YAML: "):
        call_command("import_lessons", str(path), stdout=StringIO(), stderr=StringIO())
    assert Lesson.objects.count() == 0


@pytest.mark.django_db
def test_importing_the_same_file_twice_imports_it_once(tmp_path, course, other_course):
    run(tmp_path, LIBRARY, "--course", "se-101")
    out, _ = run(tmp_path, LIBRARY, "--course", "se-101")

    assert "imported 0 lessons" in out and "skipped 3 already present: [0], [1], [2]" in out
    assert Lesson.objects.count() == 3


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ({"title": "t"}, "FILE: must be a list of lessons"),
        ([{"title": "t", "body": "b"}, "text"], r"\[1\]: must be a mapping"),
        ([{"body": "b"}], r"\[0\]\.title: must be a string"),
        ([{"title": "t", "body": "b", "status": "live"}], r"\[0\]\.status: must be one of pending"),
        ([{"title": "t", "body": "b", "review_by": "31/12/2027"}], r"\[0\]\.review_by: must be an ISO date"),
        ([{"title": "t", "body": "b", "last_hit": "2027-02-30"}], r"\[0\]\.last_hit: must be an ISO date"),
        ([{"title": "t", "body": "b", "hit_count": -1}], r"\[0\]\.hit_count: must be a whole number >= 0"),
        ([{"title": "t", "body": "b", "tokens": "many"}], r"\[0\]\.tokens: must be a whole number >= 1"),
        ([{"title": "t", "body": "b", "tags": "a,b"}], r"\[0\]\.tags: must be a list of tags"),
        ([{"title": "t", "body": "b", "symptoms": ["ok", "..."]}], r"\[0\]\.symptoms\.1: needs at least one"),
        ([{"title": "t", "body": "b", "helpful": 9}], r"\[0\]\.helpful: unknown key"),
        ([{"title": "t", "body": "b", "course": "nowhere"}], r"\[0\]\.course: no course with slug 'nowhere'"),
    ],
)
def test_a_bad_file_names_the_field_and_imports_nothing(tmp_path, course, rows, message):
    if isinstance(rows, list):  # a valid row first: nothing of the file is imported all the same
        rows = [{"title": "fine", "body": "fine"}, *rows]
        message = message.replace(r"\[1\]", r"\[2\]").replace(r"\[0\]", r"\[1\]")
    with pytest.raises(CommandError, match=message):
        run(tmp_path, rows)

    assert Lesson.objects.count() == 0
    assert not AuditEvent.objects.filter(event="lesson_imported").exists()


@pytest.mark.django_db
def test_an_unknown_course_option_or_an_unreadable_file_is_refused(tmp_path):
    with pytest.raises(CommandError, match="--course: no course with slug 'nope'"):
        run(tmp_path, [{"title": "t", "body": "b"}], "--course", "nope")
    (tmp_path / "bad.json").write_text("[{", encoding="utf-8")
    with pytest.raises(CommandError, match="is not valid JSON/YAML"):
        call_command("import_lessons", str(tmp_path / "bad.json"), stdout=StringIO(), stderr=StringIO())
    with pytest.raises(CommandError, match="cannot read"):
        call_command("import_lessons", str(tmp_path / "missing.json"), stdout=StringIO(), stderr=StringIO())


@pytest.mark.django_db
def test_an_imported_library_is_recalled_with_its_own_last_hit(tmp_path, course):
    from lessons.selectors import lessons_recall

    run(tmp_path, LIBRARY[:1], "--course", "se-101")

    result = lessons_recall(
        course_ids=[course.pk],
        tags=["adaptor", "parsing", "e2e"],
        symptoms=["unexpected token", "escape"],
        today=date(2026, 10, 13),
    )

    assert [round(s.score, 2) for s in result.recalled] == [0.81]  # the seed's lesson-2026-001


@pytest.mark.django_db
def test_a_past_review_by_is_imported_with_a_warning_naming_the_row(tmp_path, course, staff_client):
    from datetime import timedelta

    from django.utils import timezone

    overdue = (timezone.localdate() - timedelta(days=3)).isoformat()
    rows = [
        {"title": "current", "body": "b1", "status": "injected", "review_by": "2099-01-01", "tags": ["x"]},
        {"title": "overdue", "body": "b2", "status": "injected", "review_by": overdue, "tags": ["x"]},
        {"title": "overdue draft", "body": "b3", "status": "pending", "review_by": overdue},
    ]

    out, err = run(tmp_path, rows, "--course", "se-101")

    assert "imported 3 lessons (2 injected, 1 pending)" in out
    warnings = [line for line in err.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: [{i}].review_by {overdue} is in the past: imported, never recalled until staff "
        "inject it with a new review_by (see lessons_review_due)"
        for i in (1, 2)
    ]
    assert "warning" not in out
    stored = Lesson.objects.get(title="overdue")
    assert (stored.status, stored.review_by.isoformat()) == ("injected", overdue)
    # Kept, and filtered out of recall as SPEC §6 says.
    trace = staff_client.get("/api/lessons/recall/", {"tags": "x", "course": "se-101"}).json()["trace"]
    decisions = {line["title"]: line["decision"] for line in trace}
    # Every filtered lesson leaves its line, the pending one too.
    assert decisions == {
        "current": "recalled",
        "overdue": "filtered_expired",
        "overdue draft": "filtered_status",
    }
