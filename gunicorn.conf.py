"""Gunicorn reads this file when started from the project directory
(``gunicorn tutor.wsgi``); the configuration itself is tutor/gunicorn_conf.py."""

from tutor.gunicorn_conf import *  # noqa: F403
