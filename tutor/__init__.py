"""The Django project and the tutor domain (SPEC §1)."""

from tutor.celery import app as celery_app

__all__ = ["celery_app"]
