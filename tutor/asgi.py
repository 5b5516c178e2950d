import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tutor.settings")

from tutor.ops.telemetry import telemetry_start  # noqa: E402

telemetry_start("web")
application = get_asgi_application()

from tutor.ops.entrypoints import require_web_settings  # noqa: E402  (needs the settings loaded)

require_web_settings()
