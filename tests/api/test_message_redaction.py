"""Secrets never reach the model or the database, and what students must
discuss reaches the tutor unchanged (SPEC §2, §6; redaction of messages,
replies and their history): through the API, on the stored row and on the
exact request the model receives."""

from __future__ import annotations

import json

import pytest
from django.core.cache import cache

from tutor.models import ModelCall, TutorMessage

SESSIONS = "/api/tutor/sessions/"


@pytest.fixture(autouse=True)
def _fresh_throttle_counters():
    cache.clear()
    yield
    cache.clear()


def send(client, task, content):
    session = client.post(SESSIONS, {"task": task.pk}, format="json").json()["id"]
    response = client.post(f"{SESSIONS}{session}/messages/", {"content": content}, format="json")
    assert response.status_code == 201, response.content
    return session, response.json()


def sent_to_model(fake_llm) -> str:
    return json.dumps(fake_llm.last_messages, ensure_ascii=False)


def stored_rows() -> str:
    rows = list(TutorMessage.objects.values_list("content", flat=True))
    rows += [
        json.dumps(c, ensure_ascii=False)
        for c in ModelCall.objects.values_list("request_messages", flat=True)
    ]
    rows += list(ModelCall.objects.values_list("response_text", flat=True))
    return "\n".join(rows)


# Each defect an outside check found, as a student would write it: (message, the secret).
DEFECTS = {
    "cjk-password-space": ("数据库 密码 Pg#2024rootX 怎么改？", "Pg#2024rootX"),
    "cjk-passphrase-space": ("登录口令 Zx9!qwerty88", "Zx9!qwerty88"),
    "mysql-p": ("I ran mysql -u root -pS3cretRootPw and it failed", "S3cretRootPw"),
    "docker-login-p": ("docker login -u alice -p dckr_SecretPw99 registry.example.org", "dckr_SecretPw99"),
    "yaml-pass": ("db:\n  user: app\n  pass: hunter2hunter2\n", "hunter2hunter2"),
    "url-password-with-at": ("REDIS_URL=redis://:p@ssw0rd-x@redis.internal:6379/0", "ssw0rd-x"),
    "token-with-equals": ("token=abcDEF123==ghiJKL456==mno789", "ghiJKL456"),
    "long-value": ("password=" + "Ab1" * 100, "Ab1Ab1Ab1" + "Ab1" * 80),
    "jwt-header": (
        "my cookie eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9",
    ),
    "sendgrid": (
        "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",
        "ngeVfQFYQlKU0ufo8x5d1A",
    ),
    "gitlab-deploy": ("clone with gldt-" + "Xy12Ab34Cd56Ef78Gh90", "Xy12Ab34Cd56Ef78Gh90"),
    "gitlab-runner": ("glrt-" + "t3_Kq8xZ2mN5vB7cL1pR4sT6", "Kq8xZ2mN5vB7cL1pR4sT6"),
    "telegram": (
        "bot 7123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0 stopped",
        "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0",
    ),
    "discord": (
        "Nzk5MjgxNDk0NDc2NDU1OTg3.YABS5g.2lmzECVlZv3vv6miVnUaKPQi2wI is the bot token",
        "2lmzECVlZv3vv6miVnUaKPQi2wI",
    ),
    "huggingface-org": (
        "api_org_" + "kFpQzRtYxWvUsNmLoKjIhGfEdCbAzyXwVu",
        "kFpQzRtYxWvUsNmLoKjIhGfEdCbAzyXwVu",
    ),
    "planetscale": ("pscale_tkn_" + "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7cF0hJ", "aB3dE6gH9jK2mN5pQ8sT1vW4yZ7cF0hJ"),
    "databricks": (
        "DATABRICKS_HOST ok, dapi" + "0123456789abcdef0123456789abcdef",
        "0123456789abcdef0123456789abcdef",
    ),
    "atlassian": (
        "jira ATATT3xFfGF0" + "Tk9Lm2Np4Qr6St8Uv0Wx2Yz4Ab6Cd8Ef0Gh2Ij4Kl6Mn8",
        "Tk9Lm2Np4Qr6St8Uv0Wx2Yz4Ab6",
    ),
    "bare-random-key": (
        "这个 key 为什么不行：x9Kq2Lm7Pz4Rt8Vw3Ns6Bd1Fh5Jc0Yg",
        "x9Kq2Lm7Pz4Rt8Vw3Ns6Bd1Fh5Jc0Yg",
    ),
}


@pytest.mark.django_db
@pytest.mark.parametrize("name", DEFECTS)
def test_each_defect_is_redacted_in_the_stored_row_and_the_model_request(
    name, task, student_client, fake_llm
):
    message, secret = DEFECTS[name]
    fake_llm.default = "ok"

    _, body = send(student_client, task, message)

    assert secret not in json.dumps(body, ensure_ascii=False)
    assert secret not in sent_to_model(fake_llm)
    assert secret not in stored_rows()
    assert "[REDACTED:" in TutorMessage.objects.get(role="user").content


UNCHANGED = {
    "commit-sha": "CI ran on commit 3f786850e387550fdab836ed7e6dc881de23001b, my fix is in the next one",
    "git-log": "$ git log -1\ncommit 9c1185a5c5e9fc54612808977ee8f548b2258d31\nAuthor: Li Wei",
    "lockfile": "first==1.0.0 --hash=sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae",
    "go-sum": "github.com/stretchr/testify v1.8.4 h1:CcVxjf3Q8PM0mHUKJCdn+eZZtm5yQwehR5yeSVQQcUk=",
    "image-digest": "FROM python:3.11-slim@sha256:2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae",
    "hashing-exercise": "$ sha256sum report.md\n2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae  report.md",
    "question-en": "Is my API key still valid? The server keeps answering 401.",
    "question-zh": "my api key 是不是过期了？",
    "base64-data": 'assert base64.b64encode(b"hello world") == b"aGVsbG8gd29ybGQ="',
}


@pytest.mark.django_db
@pytest.mark.parametrize("name", UNCHANGED)
def test_what_students_must_discuss_reaches_the_tutor_unchanged(name, task, student_client, fake_llm):
    fake_llm.default = "ok"

    send(student_client, task, UNCHANGED[name])

    assert TutorMessage.objects.get(role="user").content == UNCHANGED[name]
    assert fake_llm.last_messages[-1]["content"].endswith(UNCHANGED[name])


@pytest.mark.django_db
def test_a_reply_echoing_a_key_is_stored_and_resent_redacted(task, student_client, fake_llm):
    key = "sk-proj-" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4"
    fake_llm.reply(f"Your key {key} looks fine.", "Next answer.")

    session, _ = send(student_client, task, "why 401?")
    reply = TutorMessage.objects.get(role="assistant")
    student_client.post(f"{SESSIONS}{session}/messages/", {"content": "and now?"}, format="json")

    assert key not in reply.content and "[REDACTED:api_key]" in reply.content
    history = sent_to_model(fake_llm)
    assert key not in history and "Your key [REDACTED:api_key] looks fine." in history
    assert key not in stored_rows()
