"""Django settings, read from environment variables only (SPEC §1).

The embedded default (nothing set) is SQLite in the project directory, Celery
running tasks eagerly in-process and the offline reviewer/tutor. Every value is
validated here so that a bad one stops start-up with a message naming it.

The sections live in ``base`` (the Django project) and in one module per
area: ``corrections``, ``lti``, ``lessons``, ``operations``; each later
section may add to ``base``'s Celery beat schedule, OpenAPI enums or
middleware, so the order below is the order they run in.
"""

# ruff: noqa: I001 -- the sections run in this order
from tutor.settings.base import *  # noqa: F403
from tutor.settings.corrections import *  # noqa: F403
from tutor.settings.lti import *  # noqa: F403
from tutor.settings.lessons import *  # noqa: F403
from tutor.settings.operations import *  # noqa: F403
