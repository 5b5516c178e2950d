"""Secrets in evidence (SPEC §2, §6 redaction kinds): redacted in the review
prompt and so in the stored ModelCall request, and in the CI log quote that
reaches the tutor's prompt; the submission stores its evidence redacted, with
its redactions counted per field, and the hash of what was sent."""

from __future__ import annotations

import json

import pytest
from django.test import TestCase

from feedback.services.intake import submission_create
from tutor.models import ModelCall

API_KEY = "sk-proj-" + "A1b2C3d4E5f6G7h8J9k0L1m2"
URL_PASSWORD = "hunter2-Secret"
PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA7bq\n-----END RSA PRIVATE KEY-----"
EVIDENCE = {
    "report": f"first() returns undefined. My key is {API_KEY} for the grader.",
    "files": {
        "deploy.sh": f"git clone https://alice:{URL_PASSWORD}@git.example.org/alice/first.git\n",
        "id_rsa": PRIVATE_KEY,
    },
    "ci": {"status": "failed", "exit_code": 1, "log_tail": f"export OPENAI_API_KEY={API_KEY}\n1 failing"},
}
SECRETS = (API_KEY, URL_PASSWORD, "MIIEpAIBAAKCAQEA7bq")


def verdict_reply() -> str:
    verdict = {"rubric_id": "A3", "status": "PASS", "reason": "clear", "evidence": "quote"}
    return json.dumps({"verdicts": [verdict], "next_step": "Add a test."})


@pytest.fixture
def reviewed(fake_llm, student, task):
    fake_llm.reply(verdict_reply())
    with TestCase.captureOnCommitCallbacks(execute=True):
        submission = submission_create(
            student=student, task=task, evidence=EVIDENCE, submitted_by=student, ci_source="student"
        )
    return submission


@pytest.mark.django_db
def test_the_review_prompt_and_its_stored_request_have_the_secrets_redacted(reviewed, fake_llm):
    sent = "\n".join(m["content"] for m in fake_llm.last_messages)
    call = ModelCall.objects.get(purpose="review")
    stored = json.dumps(call.request_messages, ensure_ascii=False)

    for secret in SECRETS:
        assert secret not in sent
        assert secret not in stored
    assert "[REDACTED:api_key]" in sent
    assert "alice:[REDACTED:url_password]@git.example.org" in sent
    assert "[REDACTED:private_key]" in sent
    # What is not secret still reaches the model.
    assert "first() returns undefined." in sent and "FILE deploy.sh" in sent
    assert call.request_messages == fake_llm.last_messages


@pytest.mark.django_db
def test_the_submission_stores_its_evidence_redacted_and_counts_per_field(reviewed, student_client):
    from feedback.evidence import normalize_evidence, snapshot_hash
    from feedback.models import Submission

    body = student_client.get(f"/api/submissions/{reviewed.pk}/").json()
    row = Submission.objects.get(pk=reviewed.pk)

    stored = json.dumps([body["evidence"], row.evidence], ensure_ascii=False)
    for secret in SECRETS:
        assert secret not in stored
    assert (
        body["evidence"]["report"]
        == "first() returns undefined. My key is [REDACTED:api_key] for the grader."
    )
    assert row.evidence["ci"]["log_tail"] == "export OPENAI_API_KEY=[REDACTED:api_key]\n1 failing"
    assert row.evidence_redactions == {"report": 1, "files/deploy.sh": 1, "files/id_rsa": 1, "ci.log_tail": 1}
    # The cache key hashes what is stored; the hash of what was sent is kept, never shown.
    assert body["snapshot_hash"] == row.snapshot_hash == snapshot_hash(row.evidence)
    assert row.sent_hash == snapshot_hash(normalize_evidence(EVIDENCE)) != row.snapshot_hash
    assert "sent_hash" not in body


@pytest.mark.django_db
def test_a_commit_sha_in_head_sha_is_kept(fake_llm, student, task):
    fake_llm.reply(verdict_reply())
    sha = "3f786850e387550fdab836ed7e6dc881de23001b"
    with TestCase.captureOnCommitCallbacks(execute=True):
        submission = submission_create(
            student=student, task=task, evidence={"report": "done", "head_sha": sha},
            submitted_by=student, ci_source="student",
        )  # fmt: skip

    submission.refresh_from_db()
    assert submission.evidence["head_sha"] == sha and submission.evidence_redactions == {}


@pytest.mark.django_db
def test_the_ci_log_quote_that_reaches_the_tutor_is_redacted(reviewed, fake_llm, task, student_client):
    a1 = next(c for c in reviewed.attempts.get().result["criteria"] if c["rubric_id"] == "A1")
    assert a1["evidence"] == "export OPENAI_API_KEY=[REDACTED:api_key]\n1 failing"

    fake_llm.reply("Look at your CI log.")
    session = student_client.post("/api/tutor/sessions/", {"task": task.pk}, format="json").json()
    response = student_client.post(
        f"/api/tutor/sessions/{session['id']}/messages/", {"content": "why does A1 fail?"}, format="json"
    )

    assert response.status_code == 201
    system = fake_llm.last_messages[0]["content"]
    assert "CI failed with exit code 1" in system
    assert API_KEY not in system
    assert API_KEY not in json.dumps(ModelCall.objects.get(purpose="tutor").request_messages)


@pytest.mark.django_db
def test_evidence_that_differs_only_in_a_secret_reuses_the_review(reviewed, fake_llm, student, task):
    """The review and its cache key see the redacted text (issue 37 item 3): a
    rotated key in the same evidence is the same review, with no model call."""
    rotated = json.loads(json.dumps(EVIDENCE).replace(API_KEY, "sk-proj-" + "Z9y8X7w6V5u4T3s2R1q0P9o8"))
    with TestCase.captureOnCommitCallbacks(execute=True):
        again = submission_create(
            student=student, task=task, evidence=rotated, submitted_by=student, ci_source="student"
        )

    attempt = again.attempts.get()
    assert len(fake_llm.requests) == 1
    assert attempt.reused_from_id == reviewed.attempts.get().pk
    assert again.snapshot_hash == reviewed.snapshot_hash and again.sent_hash != reviewed.sent_hash
