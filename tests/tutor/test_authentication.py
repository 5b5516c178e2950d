"""Token authentication over HTTP (SPEC §7): who a token is, and the 401s of
DRF's token scheme, on the precompiled lookup (``tutor.authentication``)."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.tutor.test_prepared import assert_matches_orm
from tutor.authentication import TOKEN_WITH_USER

pytestmark = pytest.mark.django_db


def client_with(header: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=header)
    return client


def test_a_token_is_its_user_and_only_its_user(student, other_student):
    token, _ = Token.objects.get_or_create(user=student)
    Token.objects.get_or_create(user=other_student)

    me = client_with(f"Token {token.key}").get("/api/me/")

    assert me.status_code == 200
    assert me.json()["username"] == student.username


@pytest.mark.parametrize(
    ("header", "detail"),
    [
        ("Token 0123456789abcdef0123456789abcdef01234567", "Invalid token."),
        ("Token ", "Invalid token header. No credentials provided."),
        ("Token a b", "Invalid token header. Token string should not contain spaces."),
    ],
)
def test_an_unknown_or_malformed_token_is_a_401_with_the_token_challenge(student, header, detail):
    Token.objects.get_or_create(user=student)

    response = client_with(header).get("/api/me/")

    assert response.status_code == 401
    assert response.json() == {
        "type": "client_error",
        "errors": [{"code": "authentication_failed", "detail": detail, "attr": None}],
    }
    assert response["WWW-Authenticate"] == "Token"


def test_the_token_of_a_deactivated_user_is_refused(student):
    token, _ = Token.objects.get_or_create(user=student)
    get_user_model().objects.filter(pk=student.pk).update(is_active=False)

    response = client_with(f"Token {token.key}").get("/api/me/")

    assert response.status_code == 401
    assert response.json()["errors"][0]["detail"] == "User inactive or deleted."


def test_a_changed_user_is_read_fresh_on_the_next_request(student):
    token, _ = Token.objects.get_or_create(user=student)
    client = client_with(f"Token {token.key}")
    assert client.get("/api/me/").json()["username"] == student.username

    get_user_model().objects.filter(pk=student.pk).update(username="alice-renamed")

    assert client.get("/api/me/").json()["username"] == "alice-renamed"


def test_the_lookup_is_the_orm_query_with_the_same_rows(student, other_student):
    token, _ = Token.objects.get_or_create(user=student)
    Token.objects.get_or_create(user=other_student)

    [row] = assert_matches_orm(TOKEN_WITH_USER, key=token.key)
    assert row["user_id"] == student.pk
    assert row["user__username"] == student.username
    assert assert_matches_orm(TOKEN_WITH_USER, key="no-such-token") == []


def test_authentication_is_one_query(student, django_assert_num_queries):
    # GET /api/me/: the token with its user (1), the caller's enrolments (1).
    token, _ = Token.objects.get_or_create(user=student)
    client = client_with(f"Token {token.key}")
    client.get("/api/me/")  # the lookup compiles on its first run

    with django_assert_num_queries(2) as captured:
        request = client.get("/api/me/").wsgi_request

    assert request.user.pk == student.pk
    assert "authtoken_token" in captured.captured_queries[0]["sql"]
