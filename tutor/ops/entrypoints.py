"""Checks shared by the web entry points (``tutor.wsgi``, ``tutor.asgi``)."""

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


def require_web_settings() -> None:
    """A web process outside DEBUG needs a stable SECRET_KEY: with a throwaway
    one, every restart and every worker would sign sessions differently."""
    if not settings.DEBUG and not settings.SECRET_KEY_FROM_ENV:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off")
