"""Operations settings (SPEC §7, §10): sign-in protection, metrics, error reports and traces."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from tutor.ops.env import env_bool, env_int, env_list, env_number, env_str, env_url
from tutor.settings.base import BASE_DIR, MIDDLEWARE

# Behind the shipped nginx site: the client's address is the last one of
# X-Forwarded-For (sign-in counts, the metrics allow-list). Off, REMOTE_ADDR.
TRUST_X_FORWARDED_FOR = env_bool("TRUST_X_FORWARDED_FOR", False)
# Failed sign-ins (tutor.web.signin): per username, per address (a classroom
# shares one), counted in a window of SIGNIN_COOLOFF seconds; the limit locks
# the username or address for SIGNIN_COOLOFF seconds.
SIGNIN_FAILURE_LIMIT = env_int("SIGNIN_FAILURE_LIMIT", 5, minimum=1)
SIGNIN_ADDRESS_FAILURE_LIMIT = env_int("SIGNIN_ADDRESS_FAILURE_LIMIT", 30, minimum=1)
SIGNIN_COOLOFF = env_int("SIGNIN_COOLOFF", 900, minimum=1)
# An admin sign-in whose next= is unsafe (another host) lands on the admin,
# not on Django's /accounts/profile/; the client's sign-in names its own.
LOGIN_REDIRECT_URL = "admin:index"

# /metrics (tutor.ops.monitoring): Prometheus text, for a bearer token or an
# address in the allow-list (IPs or networks). The processes' counters are
# files in METRICS_DIR, one per process (prometheus-client's multiprocess
# mode), shared by the web workers and the Celery worker on this machine.
METRICS_ENABLED = env_bool("METRICS_ENABLED", False)
METRICS_TOKEN = env_str("METRICS_TOKEN", "")
METRICS_ALLOWED_ADDRESSES = env_list("METRICS_ALLOWED_ADDRESSES", [])
METRICS_DIR = env_str("METRICS_DIR", str(BASE_DIR / "metrics"))
if METRICS_ENABLED:
    if not METRICS_TOKEN and not METRICS_ALLOWED_ADDRESSES:
        raise ImproperlyConfigured("METRICS_ENABLED needs METRICS_TOKEN or METRICS_ALLOWED_ADDRESSES")
    for _address in METRICS_ALLOWED_ADDRESSES:
        try:
            ipaddress.ip_network(_address, strict=False)
        except ValueError:
            raise ImproperlyConfigured(
                f"METRICS_ALLOWED_ADDRESSES must list IP addresses or networks; got {_address!r}"
            ) from None
    # Read by prometheus-client when it is first imported, in this process and those it starts.
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = METRICS_DIR
    Path(METRICS_DIR).mkdir(parents=True, exist_ok=True)
    # After the correlation id's middleware: a request is counted whoever answers it.
    MIDDLEWARE.insert(1, "tutor.ops.metrics.RequestMetricsMiddleware")

# Error reports and traces (tutor.ops.telemetry), each off unless set: the web
# entry points and the Celery worker start them. Events carry the correlation
# id, never a request body, a message's content or a secret.
SENTRY_DSN = env_url("SENTRY_DSN", ("https", "http"))
SENTRY_ENVIRONMENT = env_str("SENTRY_ENVIRONMENT", "production")
SENTRY_TRACES_SAMPLE_RATE = env_number("SENTRY_TRACES_SAMPLE_RATE", 0.0)
OTEL_EXPORTER_OTLP_ENDPOINT = env_url("OTEL_EXPORTER_OTLP_ENDPOINT", ("https", "http"))
OTEL_SERVICE_NAME = env_str("OTEL_SERVICE_NAME", "tutor")
if not SENTRY_TRACES_SAMPLE_RATE <= 1:
    raise ImproperlyConfigured("SENTRY_TRACES_SAMPLE_RATE must be between 0 and 1")
