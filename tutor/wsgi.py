import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tutor.settings")
application = get_wsgi_application()

from tutor.entrypoints import require_web_settings  # noqa: E402  (needs the settings loaded)

require_web_settings()
