"""Token authentication of the API on a precompiled query (SPEC §7, §10).

Every API request starts with this lookup. DRF's ``TokenAuthentication``
builds and compiles ``Token.objects.select_related("user").get(key=...)``
on each request: measured on the benchmark, the ORM spent about ten times
the database's own time on it. ``PreparedTokenAuthentication`` runs that
lookup's SQL compiled once per process (``tutor.db.prepared``) and rebuilds the
token and its user with ``Model.from_db``; the header parsing, the errors
and their messages are DRF's own.
"""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token

from tutor.db.prepared import PreparedQuery, model_columns, model_from_row


def token_with_user_queryset(*, key):
    """The token of ``key`` with every column of its user (at most one row)."""
    columns = [*model_columns(Token), *model_columns(get_user_model(), "user__")]
    return Token.objects.filter(key=key).values(*columns).order_by()[:1]


TOKEN_WITH_USER = PreparedQuery(token_with_user_queryset, key="str")


def token_with_user(key: str) -> Token | None:
    """The token of ``key`` with its ``user`` loaded, or None (one query)."""
    row = TOKEN_WITH_USER.first(key=key)
    if row is None:
        return None
    token = model_from_row(Token, row)
    token.user = model_from_row(get_user_model(), row, "user__")
    return token


# No stored key is longer (DRF's keys are 40 hex digits).
KEY_MAX_CHARS = Token._meta.get_field("key").max_length


class PreparedTokenAuthentication(TokenAuthentication):
    """DRF's token authentication with its lookup precompiled (module
    docstring), for DRF's own ``Token`` model (``model`` is not consulted).

    A key that no token can have -- longer than the column, or holding a NUL,
    which PostgreSQL refuses in any text (DRF's own lookup answers it with a
    database error, a 500) -- is an invalid token without a query."""

    def authenticate_credentials(self, key):
        if len(key) > KEY_MAX_CHARS or "\x00" in key:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        token = token_with_user(key)
        if token is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        if not token.user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return (token.user, token)
