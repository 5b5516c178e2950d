import gc
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tutor.settings")

from tutor.ops.telemetry import telemetry_start  # noqa: E402

# Error reports and traces, where configured: before the application is built,
# whose middleware the tracing joins.
telemetry_start("web")
django_application = get_wsgi_application()

from tutor.kernel.conf import optional_setting  # noqa: E402
from tutor.ops.entrypoints import require_web_settings  # noqa: E402
from tutor.web.bodies import ChunkedBodyApplication  # noqa: E402  (needs the settings loaded)

application = ChunkedBodyApplication(django_application)

require_web_settings()

# What start-up built (modules, settings, URL patterns, the middleware) lives as
# long as the process: out of the cyclic collector's full passes, as a course's
# snapshots are once loaded (tutor.db.freezing; setting TUTOR_GC_FREEZE).
if optional_setting("TUTOR_GC_FREEZE", True):
    gc.collect()
    gc.freeze()
