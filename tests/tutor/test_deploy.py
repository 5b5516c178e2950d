"""The deployment recipe (deploy/, SPEC §10): the example env file names every
variable the settings read, and the units' command lines are the ones the
project documents. ``.ci/deploy.py`` starts them against PostgreSQL and Redis."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def variables_read() -> set[str]:
    names = set()
    sources = sorted((ROOT / "tutor/settings").glob("*.py"))
    assert sources, "the settings package moved"
    for source in (*sources, ROOT / "tutor/ops/gunicorn_conf.py"):
        names |= set(re.findall(r'env_[a-z]+\(\s*"([A-Z][A-Z0-9_]+)"', source.read_text()))
        names |= set(re.findall(r'_samesite\(\s*"([A-Z][A-Z0-9_]+)"', source.read_text()))
    return names


def test_the_example_env_file_names_every_variable_the_settings_read():
    example = (DEPLOY / "tutor.env.example").read_text()
    named = set(re.findall(r"^#? ?([A-Z][A-Z0-9_]+)=", example, re.MULTILINE))

    assert variables_read() - named == set()
    assert named - variables_read() == set()


def test_the_example_env_file_is_what_systemd_reads():
    """KEY=value lines: no quotes, no comment after a value, no shell expansion."""
    for line in (DEPLOY / "tutor.env.example").read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            assert re.fullmatch(r"[A-Z][A-Z0-9_]*=[^\s#'\"$`]*", line), line


def test_each_unit_runs_from_the_code_directory_with_the_env_file():
    commands = {}
    for unit in ("tutor-web", "tutor-worker", "tutor-beat"):
        text = (DEPLOY / "systemd" / f"{unit}.service").read_text()
        assert "EnvironmentFile=/etc/tutor/tutor.env" in text
        assert "WorkingDirectory=/srv/tutor" in text
        assert "RestartPreventExitStatus=2" in text  # a start-up problem is not restarted
        [commands[unit]] = re.findall(r"^ExecStart=(.+)$", text, re.MULTILINE)

    assert commands["tutor-web"].endswith(
        "gunicorn --config python:tutor.ops.gunicorn_conf tutor.wsgi:application"
    )
    assert " -A tutor worker " in commands["tutor-worker"]
    assert "beat --schedule /var/lib/tutor/celerybeat-schedule" in commands["tutor-beat"]
