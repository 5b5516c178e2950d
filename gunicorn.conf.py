"""Gunicorn reads this file when started from the project directory
(``gunicorn tutor.wsgi``); the configuration itself is tutor/ops/gunicorn_conf.py."""

from tutor.ops.gunicorn_conf import *  # noqa: F403
