"""The browser tests are skipped only when a browser binary is missing, and
then they say which one and how to get it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_missing_chromium_skips_the_browser_tests_naming_the_binary_and_the_package():
    env = {**os.environ, "CHROMIUM_BIN": "/nonexistent/chromium"}
    env.pop("BROWSER_ARTIFACTS", None)

    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rs",
            "-p",
            "no:cacheprovider",
            "tests/browser/test_sign_in.py",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )

    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 skipped" in run.stdout  # every test of the file
    assert "browser tests need /nonexistent/chromium" in run.stdout
    assert "chromium-driver" in run.stdout
