import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tutor.settings")

from tutor.ops.telemetry import telemetry_start  # noqa: E402

# Error reports and traces, where configured: before the application is built,
# whose middleware the tracing joins.
telemetry_start("web")
django_application = get_wsgi_application()

from tutor.ops.entrypoints import require_web_settings  # noqa: E402
from tutor.web.bodies import ChunkedBodyApplication  # noqa: E402  (needs the settings loaded)

application = ChunkedBodyApplication(django_application)

require_web_settings()
