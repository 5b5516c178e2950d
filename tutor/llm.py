"""The model client: OpenAI-compatible ``/chat/completions`` over httpx (SPEC §2,
§4, §11). Retries live here and nowhere else; model output is sanitised here,
where it enters. Details: docs/architecture.md, The model client.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import time
from datetime import timedelta

import httpx
from celery.exceptions import SoftTimeLimitExceeded
from django.conf import settings
from django.utils import timezone

from tutor.db.inserts import prepared_insert
from tutor.kernel.correlation import get_correlation_id
from tutor.kernel.errors import ServiceUnavailable
from tutor.kernel.redaction import redact_json, redact_text
from tutor.models import ModelCall
from tutor.ops import metrics
from tutor.web.parsers import JSON_MAX_DEPTH, nesting_exceeds

log = logging.getLogger(__name__)

# SPEC §2: every 5xx (including 501, 507, 529 "overloaded"), 408 and 429 is a
# provider failure; any other status is a configuration error.
RETRYABLE_4XX = frozenset({408, 429})


def is_retryable_status(status_code: int) -> bool:
    return status_code >= 500 or status_code in RETRYABLE_4XX


CONNECT_TIMEOUT_SECONDS = 5.0
# The longest reply text kept: a review answers a JSON object of a few KB and a
# tutor a few paragraphs; beyond this a reply is cut (a cut review reply fails
# validation and goes through the repair loop).
MODEL_REPLY_MAX_CHARS = 100_000
MODEL_ERROR_TEXT_CHARS = 20_000  # of an error response's body, kept for staff
MODEL_RESPONSE_JSON_MAX_CHARS = 200_000  # larger bodies are kept as text only
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
# Tests swap the transport (httpx.MockTransport); production uses the default.
TRANSPORT: httpx.BaseTransport | None = None


class ModelError(ServiceUnavailable):
    """The model could not give an answer; never a verdict about the student.
    The message holds the internal detail (for logs and ModelCall rows); a
    client is only ever told the plain public message."""

    code = "model_unavailable"

    def public_message(self) -> str:
        return "The language model is unavailable; please try again later."


class ModelUnavailable(ModelError):
    """The provider failed after bounded retries (5xx, 408, 429, timeouts)."""


class ModelConfigError(ModelError):
    """The provider refused the request itself (bad key, unknown model)."""


def sanitize_text(text: str, limit: int = MODEL_REPLY_MAX_CHARS) -> str:
    """``text`` without NUL characters, with each lone surrogate replaced by
    U+FFFD, and cut to ``limit`` characters."""
    cleaned = _UNSTORABLE.sub(lambda m: "" if m.group() == "\x00" else "\ufffd", text)
    return cleaned[:limit]


def sanitize_json(value):
    """Every key and string of a JSON value through ``sanitize_text`` (not cut)."""
    if isinstance(value, str):
        return sanitize_text(value, limit=len(value))
    if isinstance(value, list):
        return [sanitize_json(item) for item in value]
    if isinstance(value, dict):
        return {sanitize_json(key): sanitize_json(item) for key, item in value.items()}
    return value


def load_json(data: str | bytes) -> object:
    """The JSON value of a provider's body (bytes: their encoding detected as
    JSON's is, a byte order mark allowed) or a model's reply; ValueError
    when it is no JSON or nests deeper than ``JSON_MAX_DEPTH`` levels, as a
    request body may not (SPEC §7). The decoder and every walk after it
    recurse: a value 5000 levels deep raised RecursionError wherever it went."""
    text = data.decode(json.detect_encoding(data), "surrogatepass") if isinstance(data, bytes) else data
    if nesting_exceeds(text, JSON_MAX_DEPTH):
        raise ValueError(f"JSON nested deeper than {JSON_MAX_DEPTH} levels")
    return json.loads(text)


def is_configured() -> bool:
    return bool(settings.TUTOR_LLM_BASE_URL)


def model_name() -> str:
    return settings.TUTOR_LLM_MODEL


def _client() -> httpx.Client:
    timeout = httpx.Timeout(
        settings.TUTOR_LLM_TIMEOUT, connect=min(CONNECT_TIMEOUT_SECONDS, settings.TUTOR_LLM_TIMEOUT)
    )
    headers = {"Content-Type": "application/json"}
    if settings.TUTOR_LLM_API_KEY:
        headers["Authorization"] = f"Bearer {settings.TUTOR_LLM_API_KEY}"
    return httpx.Client(timeout=timeout, headers=headers, transport=TRANSPORT)


# Every model call is a row (SPEC §4), the offline tutor's on every message (SPEC §10).
MODEL_CALL = prepared_insert(ModelCall)


def _record(
    purpose, correlation_id, messages, started, course_id=None, *, student_id=None, **fields
) -> ModelCall:
    for name in ("response_text", "error"):
        if name in fields:
            fields[name] = sanitize_text(fields[name], limit=len(fields[name]))
    seconds = time.monotonic() - started
    metrics.model_call(purpose, fields["status"], seconds)
    return MODEL_CALL.create(
        purpose=purpose,
        course_id=course_id,
        student_id=student_id,
        correlation_id=correlation_id,
        model=settings.TUTOR_LLM_MODEL or "",
        request_messages=messages,
        latency_ms=int(seconds * 1000),
        **fields,
    )


def _content(body: object) -> str:
    try:
        content = body["choices"][0]["message"]["content"]  # type: ignore[index]
    except (KeyError, IndexError, TypeError):
        raise ValueError("no choices[0].message.content in the response") from None
    if not isinstance(content, str):
        raise ValueError("choices[0].message.content is not a string")
    return content


def chat(
    messages: list[dict],
    *,
    purpose: str,
    correlation_id: str | None = None,
    temperature: float = 0.0,
    course_id=None,
    student_id=None,
) -> str:
    """Send ``messages`` and return the reply text.

    Raises ModelUnavailable or ModelConfigError; never call it inside a
    database transaction (SPEC §3: no model call happens inside one).
    ``course_id`` scopes the ModelCall rows for course staff; ``student_id``
    names the student whose messages or work the call carries (SPEC §13).
    """
    record = functools.partial(_record, student_id=student_id)
    if not is_configured():
        raise ModelConfigError("no model configured (TUTOR_LLM_BASE_URL is unset)")
    correlation_id = correlation_id or get_correlation_id()
    url = settings.TUTOR_LLM_BASE_URL.rstrip("/") + "/chat/completions"
    payload = {"model": settings.TUTOR_LLM_MODEL, "messages": messages, "temperature": temperature}
    tries = settings.TUTOR_LLM_RETRIES + 1
    last_error = ""
    with _client() as client:
        for attempt in range(tries):
            if attempt:
                time.sleep(settings.TUTOR_LLM_BACKOFF * 2 ** (attempt - 1))
            started = time.monotonic()
            try:
                response = client.post(url, json=payload)
            except httpx.TimeoutException as exc:
                last_error = f"timeout after {settings.TUTOR_LLM_TIMEOUT}s ({type(exc).__name__})"
                record(
                    purpose,
                    correlation_id,
                    messages,
                    started,
                    course_id,
                    status=ModelCall.Status.TIMEOUT,
                    error=last_error,
                )
                continue
            except httpx.TransportError as exc:
                last_error = f"connection error: {exc}"
                record(
                    purpose, correlation_id, messages, started, course_id,
                    status=ModelCall.Status.CONNECTION_ERROR, error=last_error,
                )  # fmt: skip
                continue
            except httpx.HTTPError as exc:
                # Anything else httpx raises about the exchange -- a body it
                # cannot decode (a broken gzip stream), a malformed response --
                # is the provider's fault, and its detail stays in the row.
                record(
                    purpose, correlation_id, messages, started, course_id,
                    status=ModelCall.Status.BAD_RESPONSE, error=f"{type(exc).__name__}: {exc}",
                )  # fmt: skip
                raise ModelUnavailable(f"the model provider sent an unreadable response: {exc}") from None
            except SoftTimeLimitExceeded:
                raise  # the worker's time limit, not the client's fault: the review ends TIME_LIMIT
            except Exception as exc:
                # A fault under the client (a transport or TLS library bug): the
                # call still leaves its row, and the caller sees an outage, not a 500.
                log.exception("model client failed under the transport")
                record(
                    purpose, correlation_id, messages, started, course_id,
                    status=ModelCall.Status.BAD_RESPONSE, error=f"{type(exc).__name__}: {exc}",
                )  # fmt: skip
                raise ModelUnavailable(f"the model client failed: {type(exc).__name__}") from None
            text = response.text
            if response.status_code != 200:
                last_error = f"HTTP {response.status_code}"
                record(
                    purpose, correlation_id, messages, started, course_id,
                    status=ModelCall.Status.HTTP_ERROR, http_status=response.status_code,
                    response_text=text[:MODEL_ERROR_TEXT_CHARS], error=last_error,
                )  # fmt: skip
                if is_retryable_status(response.status_code):
                    continue
                raise ModelConfigError(f"the model provider refused the request: HTTP {response.status_code}")
            try:
                body = load_json(response.content)
                content = sanitize_text(_content(body))
            except ValueError as exc:
                record(
                    purpose, correlation_id, messages, started, course_id,
                    status=ModelCall.Status.BAD_RESPONSE, http_status=200,
                    response_text=text[:MODEL_ERROR_TEXT_CHARS], error=str(exc),
                )  # fmt: skip
                raise ModelUnavailable(f"the model provider sent an unreadable response: {exc}") from None
            record(
                purpose, correlation_id, messages, started, course_id,
                status=ModelCall.Status.OK, http_status=200, response_text=redact_text(content),
                response_json=(
                    redact_json(sanitize_json(body))[0] if len(text) < MODEL_RESPONSE_JSON_MAX_CHARS else None
                ),
            )  # fmt: skip
            return content
    log.warning("model unavailable after %d tries: %s", tries, last_error)
    raise ModelUnavailable(f"the model provider is unavailable after {tries} tries: {last_error}")


def offline_call(
    messages: list[dict],
    *,
    purpose: str,
    reply: str,
    correlation_id: str | None = None,
    course_id=None,
    student_id=None,
) -> ModelCall:
    """The audit row (unsaved) of a reply composed by the offline tutor: the
    request is the one a real model would have received (SPEC §4)."""
    return ModelCall(
        purpose=purpose,
        course_id=course_id,
        student_id=student_id,
        correlation_id=correlation_id or get_correlation_id(),
        model="offline",
        request_messages=messages,
        response_text=reply,  # composed of redacted text, and redacted again by the tutor turn
        status=ModelCall.Status.OFFLINE,
    )


def record_offline_call(
    messages: list[dict],
    *,
    purpose: str,
    reply: str,
    correlation_id: str | None = None,
    course_id=None,
    student_id=None,
) -> ModelCall:
    """Store ``offline_call``'s row."""
    call = offline_call(
        messages,
        purpose=purpose,
        reply=reply,
        correlation_id=correlation_id,
        course_id=course_id,
        student_id=student_id,
    )
    [stored] = MODEL_CALL.create_many([call])
    return stored


def model_calls_purge(*, now=None) -> int:
    """Delete ModelCall rows older than ``MODEL_CALL_RETENTION_DAYS`` (0: keep;
    ``retention_apply`` does the same with courses' own periods)."""
    if not settings.MODEL_CALL_RETENTION_DAYS:
        return 0
    cutoff = (now or timezone.now()) - timedelta(days=settings.MODEL_CALL_RETENTION_DAYS)
    deleted, _ = ModelCall.objects.filter(created_at__lt=cutoff).delete()
    return deleted


def parse_json_reply(text: str) -> object:
    """JSON from a model reply, tolerating a surrounding Markdown code fence.
    Sanitised again after parsing: the escapes ``\\u0000`` and ``\\ud800``
    are plain text in the reply but NUL and a lone surrogate once parsed."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[1] if "\n" in stripped else ""
        if stripped.rstrip().endswith("```"):
            stripped = stripped.rstrip()[:-3]
    return sanitize_json(load_json(stripped))
