"""Token authentication over HTTP (SPEC §7): who a token is, and the 401s of
DRF's token scheme, on the precompiled lookup (``tutor.web.authentication``)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import get_user_model
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.tutor.test_prepared import assert_matches_orm
from tutor.web.authentication import TOKEN_WITH_USER, PreparedTokenAuthentication

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
        # No token has such a key; PostgreSQL refuses a NUL in any text.
        ("Token 0123456789abcdef\x000123456789abcdef0123456", "Invalid token."),
        ("Token " + "a" * 41, "Invalid token."),
    ],
    ids=["unknown", "no-key", "spaces", "nul", "too-long"],
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


def test_the_user_is_the_stored_user_field_by_field_run_after_run(student):
    # From its third run on a connection the lookup is a server-side prepared
    # statement on PostgreSQL: every run must give the same user and token.
    user_model = get_user_model()
    user_model.objects.filter(pk=student.pk).update(
        is_staff=True, first_name="Alice", last_login=timezone.now() - timedelta(days=2)
    )
    stored = user_model.objects.get(pk=student.pk)
    token, _ = Token.objects.get_or_create(user=student)
    client = client_with(f"Token {token.key}")

    for _ in range(4):
        request = client.get("/api/me/").renderer_context["request"]  # DRF's request
        assert type(request.successful_authenticator) is PreparedTokenAuthentication
        user, auth = request.user, request.auth
        assert type(auth) is Token and auth.user is user
        assert (auth.key, auth.created) == (token.key, token.created)
        for field in user_model._meta.concrete_fields:
            value, expected = getattr(user, field.attname), getattr(stored, field.attname)
            assert (value, type(value)) == (expected, type(expected)), field.name
        assert user.check_password("not the password") is False
        assert not user._state.adding


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


def test_authentication_is_one_of_the_two_queries_of_me(student, django_assert_num_queries):
    # GET /api/me/: the token with its user (1), the caller's enrolments (1).
    token, _ = Token.objects.get_or_create(user=student)
    client = client_with(f"Token {token.key}")
    client.get("/api/me/")  # the lookup compiles on its first run

    with django_assert_num_queries(2) as captured:
        request = client.get("/api/me/").wsgi_request

    assert request.user.pk == student.pk
    assert "authtoken_token" in captured.captured_queries[0]["sql"]
