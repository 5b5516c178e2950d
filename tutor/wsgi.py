import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tutor.settings")
django_application = get_wsgi_application()

from tutor.bodies import ChunkedBodyApplication  # noqa: E402  (needs the settings loaded)
from tutor.entrypoints import require_web_settings  # noqa: E402

application = ChunkedBodyApplication(django_application)

require_web_settings()
