"""Error reports and traces, each off unless configured (SPEC §10 Operations):
sentry-sdk and OpenTelemetry. Details: docs/architecture.md, Metrics, error
reports and traces.
"""

from __future__ import annotations

import os

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from tutor.kernel.correlation import HEADER, current_or_none

# Request headers an event keeps; any other (Authorization, Cookie, X-CSRFToken, ...) is dropped.
KEPT_HEADERS = {"user-agent", "content-type", "content-length", HEADER.lower(), "host"}
CORRELATION_ATTRIBUTE = "tutor.correlation_id"
_started: set[str] = set()


def telemetry_start(service: str, *, span_exporter=None) -> None:
    """Start what is configured, once per process. ``span_exporter`` replaces
    the OTLP exporter (a test's in-memory one)."""
    key = f"{os.getpid()}:{service}"
    if key in _started:
        return
    _started.add(key)
    if settings.SENTRY_DSN:
        sentry_start(service)
    if settings.OTEL_EXPORTER_OTLP_ENDPOINT or span_exporter is not None:
        traces_start(service, span_exporter=span_exporter)


def _missing(variable: str, exc: ImportError):
    return ImproperlyConfigured(
        f"{variable} is set but {exc.name} is not installed: pip install 'tutor-feedback-loop[telemetry]'"
    )


def scrub_event(event: dict, hint=None) -> dict:
    """Sentry's ``before_send``: the correlation id as a tag; no request body, cookie,
    query string or secret header."""
    correlation_id = current_or_none()
    if correlation_id:
        event.setdefault("tags", {})["correlation_id"] = correlation_id
    request = event.get("request")
    if isinstance(request, dict):
        for key in ("data", "cookies", "query_string", "env"):
            request.pop(key, None)
        if isinstance(request.get("url"), str):
            request["url"] = request["url"].split("?", 1)[0]
        headers = request.get("headers")
        if isinstance(headers, dict):
            request["headers"] = {k: v for k, v in headers.items() if k.lower() in KEPT_HEADERS}
            tag = request["headers"].get(HEADER) or next(
                (v for k, v in headers.items() if k.lower() == HEADER.lower()), None
            )
            if tag and "correlation_id" not in event.get("tags", {}):
                event.setdefault("tags", {})["correlation_id"] = tag
    event.pop("user", None)
    breadcrumbs = event.get("breadcrumbs")
    for crumb in breadcrumbs.get("values", []) if isinstance(breadcrumbs, dict) else []:
        crumb.pop("data", None)  # a query's parameters, an HTTP call's URL with its query
    return event


def sentry_start(service: str) -> None:
    try:
        import sentry_sdk
        from sentry_sdk.integrations.celery import CeleryIntegration
        from sentry_sdk.integrations.django import DjangoIntegration
    except ImportError as exc:
        raise _missing("SENTRY_DSN", exc) from None
    sentry_sdk.init(
        dsn=settings.SENTRY_DSN,
        environment=settings.SENTRY_ENVIRONMENT,
        traces_sample_rate=settings.SENTRY_TRACES_SAMPLE_RATE,
        send_default_pii=False,
        max_request_body_size="never",
        include_local_variables=False,
        before_send=scrub_event,
        before_send_transaction=scrub_event,
        integrations=[DjangoIntegration(), CeleryIntegration()],
    )
    sentry_sdk.set_tag("service", service)


def traces_start(service: str, *, span_exporter=None) -> None:
    try:
        from opentelemetry import trace
        from opentelemetry.instrumentation.celery import CeleryInstrumentor
        from opentelemetry.instrumentation.django import DjangoInstrumentor
        from opentelemetry.instrumentation.httpx import HTTPXClientInstrumentor
        from opentelemetry.instrumentation.psycopg import PsycopgInstrumentor
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
    except ImportError as exc:
        raise _missing("OTEL_EXPORTER_OTLP_ENDPOINT", exc) from None

    class CorrelationSpanProcessor(SpanProcessor):
        """Each span started under a correlation id carries it."""

        def on_start(self, span, parent_context=None):
            correlation_id = current_or_none()
            if correlation_id:
                span.set_attribute(CORRELATION_ATTRIBUTE, correlation_id)

    provider = TracerProvider(
        resource=Resource.create({"service.name": settings.OTEL_SERVICE_NAME, "tutor.process": service})
    )
    provider.add_span_processor(CorrelationSpanProcessor())
    if span_exporter is None:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        endpoint = settings.OTEL_EXPORTER_OTLP_ENDPOINT.rstrip("/") + "/v1/traces"
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    else:
        provider.add_span_processor(SimpleSpanProcessor(span_exporter))
    trace.set_tracer_provider(provider)

    def response_hook(span, request, response):
        # The request's span starts before the correlation id's middleware has run.
        correlation_id = response.get(HEADER) if response is not None else None
        if correlation_id and span.is_recording():
            span.set_attribute(CORRELATION_ATTRIBUTE, correlation_id)

    DjangoInstrumentor().instrument(tracer_provider=provider, response_hook=response_hook)
    CeleryInstrumentor().instrument(tracer_provider=provider)
    PsycopgInstrumentor().instrument(tracer_provider=provider, skip_dep_check=True)
    HTTPXClientInstrumentor().instrument(tracer_provider=provider)
