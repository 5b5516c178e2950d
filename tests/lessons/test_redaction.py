"""Redaction before storage (SPEC §6): every secret kind, in English and in
Chinese text, never reaches a stored lesson -- not its text, its recall keys
nor its shingles -- whichever door it came in by; the count is kept and
shown to staff."""

from __future__ import annotations

import json

import pytest

from lessons.models import Lesson, LessonKey
from tests.lessons.conftest import make_lesson

PRIVATE_KEY = (
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1b2c3d4e5f6g7h8i9j0kLmNoPqRsTuVwXyZ\n"
    "-----END RSA PRIVATE KEY-----"
)
SECRETS = {
    "openai_key": ("sk-proj-AbCdEfGhIjKlMnOpQrStUvWx1234", "api_key"),
    "aws_key": ("AKIAIOSFODNN7EXAMPLE", "api_key"),
    "github_token": ("ghp_16C7e42F292c6912E7710c838347Ae178B4a", "api_key"),
    "bearer": ("Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abc", "bearer_token"),
    "url_password": ("postgres://admin:hunter2pass@db.internal/app", "url_password"),
    "password_pair": ("password=S3cr3t!Value", "password"),
    "private_key": (PRIVATE_KEY, "private_key"),
    "email": ("li.wei@example.edu.cn", "email"),
    "ipv4": ("192.168.31.207", "ip_address"),
    "ipv6": ("2001:0db8:85a3:0000:0000:8a2e:0370:7334", "ip_address"),
    "long_hex": ("9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", "secret"),
    "long_base64": ("QWxhZGRpbjpvcGVuIHNlc2FtZUFsYWRkaW46b3BlbiBzZXNhbWU5OQ", "secret"),
}
TEMPLATES = {
    "en": "The CI job failed because the config contained {} in plain text.",
    "zh": "构建失败了，因为配置文件里明文写着{}，请先轮换。",
}
# The part of each secret that must not survive (a URL keeps its user and host).
NEVER = {
    "url_password": "hunter2pass",
    "bearer": "eyJhbGciOiJIUzI1NiJ9",
    "password_pair": "S3cr3t!Value",
    "private_key": "MIIEowIBAAKCAQEA",
}


def stored_text() -> str:
    rows = list(Lesson.objects.values()) + list(LessonKey.objects.values())
    return json.dumps(rows, default=str, ensure_ascii=False)


@pytest.mark.django_db
@pytest.mark.parametrize("language", TEMPLATES)
@pytest.mark.parametrize("name", SECRETS)
def test_no_secret_kind_is_stored_through_the_api(staff_client, course, name, language):
    secret, kind = SECRETS[name]
    text = TEMPLATES[language].format(secret)
    one_line = text.replace("\n", " ")

    response = staff_client.post(
        "/api/lessons/",
        {"course": "se-101", "title": one_line[:200], "body": text, "symptoms": [one_line[:200]]},
        format="json",
    )

    assert response.status_code == 201, response.content
    body = response.json()
    assert NEVER.get(name, secret) not in stored_text()
    assert f"[REDACTED:{kind}]" in body["body"]
    assert body["redactions"] >= 2 and body["redaction_kinds"].get(kind, 0) >= 1
    shown = staff_client.get(f"/api/lessons/{body['id']}/").json()
    assert shown["redactions"] == body["redactions"]


@pytest.mark.django_db
@pytest.mark.parametrize("name", SECRETS)
def test_no_secret_kind_is_stored_by_the_service_either(course, name):
    secret, kind = SECRETS[name]

    lesson = make_lesson(
        course=course, title="t", body=TEMPLATES["zh"].format(secret), tags=[f"tag {secret}"[:64]]
    )

    assert NEVER.get(name, secret) not in stored_text()
    assert lesson.redaction_kinds.get(kind, 0) >= 1


@pytest.mark.django_db
def test_the_redaction_count_shows_in_the_admin_queue(course, superuser):
    from django.test import Client
    from django.urls import reverse

    make_lesson(course=course, title="leaky", body="mail a@b.org and c@d.org from 10.0.0.1", status="pending")
    client = Client()
    client.force_login(superuser)

    page = client.get(reverse("admin:lessons_lesson_changelist")).content.decode()

    assert "3 (email ×2, ip_address ×1)" in page
