"""Lists of submissions carry an evidence summary -- sizes, file names, CI
status -- and the detail view the evidence itself (SPEC §7): a page of 50
submissions would otherwise carry up to 50 MiB of evidence."""

from __future__ import annotations

import importlib

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from feedback.evidence import evidence_summary, normalize_evidence
from tests.factories import make_submission

EVIDENCE = {
    "report": "first() returns undefined — 空数组",
    "files": {"src/first.js": "export const first = (xs) => xs[0];\n", "REPORT.md": "# 报告\n"},
    "ci": {"status": "failed", "exit_code": 2, "log_tail": "1 failing"},
    "head_sha": "4f2c1e9",
    "repo_url": "https://git.example.org/alice/first",
}
SUMMARY = {
    "report_chars": 31,  # characters, not bytes
    "file_count": 2,
    "files": [
        {"path": "REPORT.md", "bytes": 9},
        {"path": "src/first.js", "bytes": 36},
    ],  # UTF-8 bytes, by path
    "total_bytes": len(
        '{"report":"first() returns undefined — 空数组","files":{"src/first.js":'
        '"export const first = (xs) => xs[0];\\n","REPORT.md":"# 报告\\n"},'
        '"ci":{"status":"failed","exit_code":2,"log_tail":"1 failing"},'
        '"head_sha":"4f2c1e9","repo_url":"https://git.example.org/alice/first"}'.encode()
    ),
    "ci_status": "failed",
    "ci_exit_code": 2,
}


@pytest.fixture
def posted(student_client, task):
    response = student_client.post(
        "/api/submissions/", {"task": task.pk, "evidence": EVIDENCE}, format="json"
    )
    assert response.status_code == 201, response.content
    return response.json()


@pytest.mark.django_db
def test_the_list_shows_the_summary_and_not_the_evidence(posted, student_client):
    [row] = student_client.get("/api/submissions/").json()["results"]

    assert "evidence" not in row
    assert row["evidence_summary"] == SUMMARY
    assert row["id"] == posted["id"] and row["attempts"][0]["id"] == posted["attempts"][0]["id"]


@pytest.mark.django_db
def test_the_detail_and_the_post_answer_show_the_evidence_and_the_summary(posted, student_client):
    detail = student_client.get(f"/api/submissions/{posted['id']}/").json()

    for body in (posted, detail):
        assert body["evidence"] == normalize_evidence(EVIDENCE)
        assert body["evidence_summary"] == SUMMARY


@pytest.mark.django_db
def test_the_summary_of_missing_keys(student_client, task):
    evidence = {"report": "r"}
    response = student_client.post(
        "/api/submissions/", {"task": task.pk, "evidence": evidence}, format="json"
    )

    assert response.json()["evidence_summary"] == {
        "report_chars": 1,
        "file_count": 0,
        "files": [],
        "total_bytes": len(b'{"report":"r","files":{},"ci":null,"head_sha":"","repo_url":""}'),
        "ci_status": None,
        "ci_exit_code": None,
    }


@pytest.mark.django_db
@pytest.mark.parametrize("count", [1, 30])
def test_the_list_never_reads_the_evidence_column_and_its_queries_are_constant(
    student, task, student_client, django_assert_num_queries, count
):
    for _ in range(count):
        make_submission(student, task, EVIDENCE)

    # token auth, the page of submissions (with student and task), their attempts
    # (with their rubric), their regrade requests
    with CaptureQueriesContext(connection) as captured, django_assert_num_queries(4):
        response = student_client.get("/api/submissions/")

    assert len(response.json()["results"]) == count
    page_query = next(q["sql"] for q in captured.captured_queries if 'FROM "feedback_submission"' in q["sql"])
    assert '"feedback_submission"."evidence"' not in page_query
    assert '"feedback_submission"."evidence_summary"' in page_query


def test_the_migrations_frozen_summary_matches_the_current_one():
    migration = importlib.import_module("feedback.migrations.0005_evidence_summary_and_delete_guard")
    for evidence in (EVIDENCE, {}, {"files": {"a": "é" * 10}, "ci": {"status": "passed", "exit_code": 0}}):
        normalized = normalize_evidence(evidence)
        assert migration.summary(normalized) == evidence_summary(normalized)
