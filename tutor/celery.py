"""The Celery application. Settings come from Django's (``CELERY_*``)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tutor.settings")

app = Celery("tutor")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
