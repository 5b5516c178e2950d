"""``enroll`` (SPEC §1): enrolment, roles and API tokens; stdout carries only
``USERNAME TOKEN`` lines so scripts can read it."""

import os
import re
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.authtoken.models import Token

from tests.factories import course_data, make_course, make_user
from tutor.models import Enrollment
from tutor.services import COURSE_STAFF_GROUP

ROOT = Path(__file__).resolve().parents[2]
User = get_user_model()


def run_enroll(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("enroll", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.fixture
def course(db):
    return make_course("se-101")


def test_create_enrols_new_students_and_prints_one_token_line_each(course):
    out, err = run_enroll("se-101", "alice", "bob", "--create", "--print-token")

    lines = out.splitlines()
    assert len(lines) == 2
    for line, name in zip(lines, ["alice", "bob"], strict=True):
        username, token = line.split(" ")
        assert username == name
        assert Token.objects.get(user__username=name).key == token
        assert Enrollment.objects.get(user__username=name, course=course).role == "student"
    # Progress is reported, but on stderr.
    assert "enrolled alice in se-101 as student" in err
    new = User.objects.get(username="alice")
    assert not new.has_usable_password()
    assert not new.is_staff


def test_without_print_token_stdout_stays_empty(course):
    out, err = run_enroll("se-101", "alice", "--create")

    assert out == ""
    assert "enrolled alice" in err


def test_enrolling_again_keeps_the_token_and_changes_the_role(course):
    first, _ = run_enroll("se-101", "alice", "--create", "--print-token")

    second, _ = run_enroll("se-101", "alice", "--service", "--print-token")

    assert first == second
    assert Enrollment.objects.get(user__username="alice").role == "service"
    assert Enrollment.objects.count() == 1


def test_staff_get_admin_access_but_never_superuser(course):
    run_enroll("se-101", "teacher", "--staff", "--create")

    teacher = User.objects.get(username="teacher")
    assert teacher.is_staff
    assert not teacher.is_superuser
    assert teacher.groups.filter(name=COURSE_STAFF_GROUP).exists()
    assert teacher.has_perm("tutor.view_task")
    assert not teacher.has_perm("tutor.change_task")
    assert Enrollment.objects.get(user=teacher, course=course).role == "staff"


def test_service_role_is_a_course_service_account_without_admin(course):
    run_enroll("se-101", "ci-bot", "--service", "--create")

    bot = User.objects.get(username="ci-bot")
    assert Enrollment.objects.get(user=bot, course=course).role == "service"
    assert not bot.is_staff
    assert not bot.is_superuser


def test_staff_and_service_are_exclusive(course):
    with pytest.raises(CommandError):
        run_enroll("se-101", "x", "--staff", "--service", "--create")

    assert not User.objects.filter(username="x").exists()


def test_existing_user_is_enrolled_without_create(course):
    alice = make_user("alice")

    out, _ = run_enroll("se-101", "alice", "--print-token")

    assert out == f"alice {Token.objects.get(user=alice).key}\n"
    assert alice.has_usable_password()  # an existing account is left as it was


def test_unknown_course_is_an_error_and_creates_nobody(course):
    with pytest.raises(CommandError, match="unknown course 'nope'"):
        run_enroll("nope", "alice", "--create")

    assert not User.objects.filter(username="alice").exists()


def test_unknown_user_without_create_enrols_nobody(course):
    make_user("alice")

    with pytest.raises(CommandError, match="unknown users: ghost"):
        run_enroll("se-101", "alice", "ghost")

    assert not Enrollment.objects.exists()
    assert not User.objects.filter(username="ghost").exists()


@pytest.mark.parametrize("bad", ["two words", "", "semi;colon", "x" * 151])
def test_username_that_would_break_the_output_is_refused(course, bad):
    with pytest.raises(CommandError, match="invalid username"):
        run_enroll("se-101", "alice", bad, "--create")

    assert not User.objects.exists()


def test_command_line_stdout_is_only_token_lines(tmp_path):
    # A real process: nothing else (warnings, banners, progress) may reach stdout.
    environ = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    environ.update(
        DJANGO_SETTINGS_MODULE="tutor.settings",
        SECRET_KEY="command-line-test-key",
        DATABASE_URL=f"sqlite:///{tmp_path / 'cli.sqlite3'}",
    )
    course_file = tmp_path / "course.yaml"
    course_file.write_text(yaml.safe_dump(course_data("se-101")), encoding="utf-8")

    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=environ, capture_output=True, text=True
        )

    assert run("migrate", "--verbosity", "0").returncode == 0
    assert run("import_course", str(course_file)).returncode == 0

    result = run("enroll", "se-101", "alice", "teacher", "--staff", "--create", "--print-token")

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert [line.split(" ")[0] for line in lines] == ["alice", "teacher"]
    assert all(len(line.split(" ")) == 2 and len(line.split(" ")[1]) == 40 for line in lines)
    assert "enrolled teacher in se-101 as staff" in result.stderr

    unknown = run("enroll", "se-101", "ghost", "--print-token")

    assert unknown.returncode == 1
    assert unknown.stdout == ""
    assert "unknown users: ghost" in unknown.stderr


def test_a_student_made_staff_without_a_password_gets_a_one_time_password(db):
    course = make_course("se-101")
    run_enroll("se-101", "alice", "--create")  # an API-only student: no usable password
    _, err = run_enroll("se-101", "alice", "--staff")

    password = re.search(r"admin password for alice: (\S+)", err)[1]
    alice = get_user_model().objects.get(username="alice")
    assert alice.is_staff and alice.check_password(password)
    assert Enrollment.objects.get(user=alice, course=course).role == "staff"
