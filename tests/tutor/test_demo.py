"""The demo command behind the README's run command, and the demo course file."""

import re
from io import StringIO

from django.contrib.auth import get_user_model
from django.core.management import call_command
from rest_framework.authtoken.models import Token

from tutor.coursefile import load_course_file, validate_course
from tutor.kernel.rubrics import CheckType
from tutor.management.commands.demo import DEMO_FILE
from tutor.models import Course, Enrollment, Rubric, Task

TOKEN_LINE = re.compile(r"^\s+(\S+)\s+(student|staff|service)\s+([0-9a-f]{40})$")


def run_demo() -> str:
    out = StringIO()
    call_command("demo", stdout=out)
    return out.getvalue()


def printed_tokens(out: str) -> dict[str, tuple[str, str]]:
    return {m[1]: (m[2], m[3]) for line in out.splitlines() if (m := TOKEN_LINE.match(line))}


def test_demo_loads_two_tasks_and_prints_working_tokens(db):
    out = run_demo()

    course = Course.objects.get(slug="se-101")
    assert list(Task.objects.filter(course=course).values_list("slug", flat=True)) == [
        "t1-explain",
        "t2-test",
    ]
    assert "Demo course 'se-101' loaded (2 tasks)." in out
    tokens = printed_tokens(out)
    assert set(tokens) == {"alice", "bob", "staff", "ci-bot"}
    for username, (role, key) in tokens.items():
        assert Token.objects.get(key=key).user.username == username
        assert Enrollment.objects.get(user__username=username, course=course).role == role
    assert tokens["alice"][0] == "student"
    assert tokens["ci-bot"][0] == "service"


def test_demo_staff_password_is_fresh_and_works(db):
    out = run_demo()

    password = re.search(r"username 'staff', password '([^']+)'", out)[1]
    staff = get_user_model().objects.get(username="staff")
    assert staff.check_password(password)
    assert staff.is_staff
    assert not staff.is_superuser


def test_loading_the_demo_twice_keeps_rows_and_tokens(db):
    first = printed_tokens(run_demo())

    second = printed_tokens(run_demo())

    assert first == second
    assert Task.objects.count() == 2
    assert Rubric.objects.count() == 2
    assert Enrollment.objects.count() == 4


def test_demo_course_exercises_every_check_type_and_a_learning_criterion():
    spec = validate_course(load_course_file(DEMO_FILE))

    criteria = [c for task in spec.tasks for c in task.criteria]
    assert {c["check"]["type"] for c in criteria if c["check"]} == set(CheckType.values)
    assert set(CheckType.values) == {"ci_passed", "file_exists", "contains", "semantic"}
    assert any(c["kind"] == "learning" for c in criteria)
    # Both forms of `contains`: against the report and against a file.
    contains = [c["check"] for c in criteria if c["check"] and c["check"]["type"] == "contains"]
    assert {"field" in check for check in contains} == {True, False}
