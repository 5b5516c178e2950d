"""The student client's server side: the page at /, its static files, the
session sign-in, and CSRF on session-authenticated API writes."""

from __future__ import annotations

import re

import pytest
from django.contrib.staticfiles import finders
from django.test import Client
from rest_framework.test import APIClient

from tests.factories import make_user

PASSWORD = "pw-alice"  # what tests.factories.make_user gives alice


def static_paths(html: str) -> list[str]:
    return re.findall(r'(?:src|href)="/static/([^"]+)"', html)


@pytest.mark.django_db
def test_the_page_is_served_to_anyone_with_a_csrf_cookie_and_its_static_files():
    response = Client().get("/")

    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/html")
    assert "csrftoken" in response.cookies
    html = response.content.decode()
    assert static_paths(html) == ["tutor/client.css", "tutor/client.js"]
    assert 'type="module"' in html
    for path in static_paths(html):
        assert finders.find(path), f"{path} is referenced but not a static file"


def test_every_module_the_client_imports_is_a_static_file():
    # No build step: the browser resolves these relative imports itself.
    pending, seen = ["tutor/client.js", "tutor/page.js"], set()
    while pending:
        path = pending.pop()
        seen.add(path)
        with open(finders.find(path), encoding="utf-8") as file:
            source = file.read()
        for name in re.findall(r'from "\./([\w.-]+\.js)"', source):
            imported = f"tutor/{name}"
            assert finders.find(imported), f"{path} imports {name}, which does not exist"
            if imported not in seen:
                pending.append(imported)
    assert seen == {f"tutor/{n}" for n in ("client.js", "page.js", "api.js", "i18n.js", "dom.js", "review.js",
                                            "chat.js", "evidence.js", "regrade.js", "notice.js",
                                            "memory.js")}  # fmt: skip


@pytest.mark.django_db
def test_the_page_answers_head_and_refuses_writes():
    assert Client().head("/").status_code == 200
    assert Client().post("/", {}).status_code == 405


@pytest.mark.django_db
def test_session_sign_in_returns_to_the_task_asked_for():
    make_user("alice")
    client = Client()

    response = client.post("/login/", {"username": "alice", "password": PASSWORD, "next": "/?task=abc"})

    assert response.status_code == 302
    assert response["Location"] == "/?task=abc"
    assert client.get("/api/me/").json()["username"] == "alice"


@pytest.mark.django_db
def test_session_sign_in_never_redirects_to_another_host():
    make_user("alice")

    response = Client().post(
        "/login/", {"username": "alice", "password": PASSWORD, "next": "https://evil.example/"}
    )

    assert response.status_code == 302
    assert response["Location"] == "/"


@pytest.mark.django_db
def test_a_wrong_password_shows_the_form_again_with_an_error_and_no_session():
    make_user("alice")
    client = Client()

    response = client.post("/login/", {"username": "alice", "password": "nope", "next": "/"})

    assert response.status_code == 200
    assert 'role="alert"' in response.content.decode()
    assert client.get("/api/me/").status_code == 401


@pytest.mark.django_db
def test_sign_out_is_a_post_that_ends_the_session():
    make_user("alice")
    client = Client()
    client.login(username="alice", password=PASSWORD)

    assert client.get("/logout/").status_code == 405
    response = client.post("/logout/")

    assert response.status_code == 302 and response["Location"] == "/"
    assert client.get("/api/me/").status_code == 401


@pytest.mark.django_db
def test_session_authenticated_api_writes_need_the_csrf_token(task, student):
    student.set_password(PASSWORD)
    student.save(update_fields=["password"])
    client = APIClient(enforce_csrf_checks=True)
    client.login(username=student.username, password=PASSWORD)
    token = client.get("/").cookies["csrftoken"].value

    refused = client.post("/api/tutor/sessions/", {"task": str(task.pk)}, format="json")
    accepted = client.post(
        "/api/tutor/sessions/", {"task": str(task.pk)}, format="json", HTTP_X_CSRFTOKEN=token
    )

    assert refused.status_code == 403
    assert "CSRF" in refused.json()["errors"][0]["detail"]
    assert accepted.status_code == 201
