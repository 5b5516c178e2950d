"""Checks shared by the web entry points (``tutor.wsgi``, ``tutor.asgi``) and
the web server's start-up (``tutor.ops.gunicorn_conf``)."""

from __future__ import annotations

import sys

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


def require_web_settings() -> None:
    """A web process outside DEBUG needs a stable SECRET_KEY: with a throwaway
    one, every restart and every worker would sign sessions differently."""
    if not settings.DEBUG and not settings.SECRET_KEY_FROM_ENV:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")


def require_database() -> None:
    """The database answers (one connection, closed again: the server's
    workers, forked after this, open their own)."""
    from django.db import connections

    connection = connections["default"]
    try:
        connection.ensure_connection()
    except Exception as exc:  # each driver raises its own types
        detail = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ImproperlyConfigured(f"the database of DATABASE_URL cannot be reached: {detail}") from None
    finally:
        connection.close()


def web_preflight() -> None:
    """Before the web server listens (SPEC §10): the settings are valid (the
    timeouts nest), SECRET_KEY is set, the database answers. A problem is one
    line on stderr and exit status 2 -- not a worker that fails to boot after
    the server said it was listening."""
    try:
        settings.WEB_TIMEOUT  # noqa: B018 -- reading a setting loads and checks them all
        require_web_settings()
        require_database()
    except ImproperlyConfigured as exc:
        sys.stderr.write(f"tutor: cannot start: {exc}\n")
        sys.stderr.flush()
        raise SystemExit(2) from None
