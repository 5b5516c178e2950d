"""Evidence reads as files on the staff pages (SPEC §8, turn 3): the report
as text, each file a block with numbered lines and its size, the CI part as
status, exit code and log tail -- escaped, never raw JSON."""

from __future__ import annotations

import pytest
from django.urls import reverse

from tests.factories import enroll, make_attempt, make_course, make_submission, make_task, make_user

pytestmark = pytest.mark.django_db
EVIDENCE = {
    "report": "# REPORT\nfirst() returns undefined\nfor an empty array.\n",
    "files": {"src/first.js": "export const first = (xs) => xs[0];\n// <script>alert(1)</script>\n"},
    "ci": {"status": "failed", "exit_code": 1, "log_tail": "1 failing\n  first([]) should be undefined"},
}


@pytest.fixture
def submission():
    task = make_task(make_course("se-101"))
    submission = make_submission(enroll(task.course, "alice"), task, EVIDENCE)
    make_attempt(submission)
    return submission


def test_the_submission_page_shows_each_file_with_numbered_lines_and_its_size(submission, client):
    client.force_login(make_user("root", is_staff=True, is_superuser=True))

    page = client.get(reverse("admin:feedback_submission_change", args=[submission.pk])).content.decode()

    assert '<span class="path">REPORT</span>' in page
    assert "<li>first() returns undefined</li>" in page  # a line of its own, numbered by the list
    assert '<span class="path">src/first.js</span><span class="size">65 bytes, 2 lines</span>' in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "<script>alert(1)" not in page
    assert "<dt>CI status</dt><dd>failed</dd><dt>exit code</dt><dd>1</dd>" in page
    assert "<li>  first([]) should be undefined</li>" in page
    assert "\\n" not in page.split('class="evidence"')[1].split("</div>")[0]  # no escaped JSON


def test_the_verdict_form_shows_the_evidence_as_files(submission, client):
    client.force_login(make_user("root", is_staff=True, is_superuser=True))
    attempt = submission.attempts.get()

    page = client.get(reverse("admin:feedback_reviewattempt_verdict", args=[attempt.pk])).content.decode()

    assert '<span class="path">src/first.js</span>' in page
    assert "<li>for an empty array.</li>" in page
