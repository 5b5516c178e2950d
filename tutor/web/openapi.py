"""The OpenAPI document matches the answers (SPEC §7): schema fuzzing checks
every response, error or not, against it.

- One 400 shape for every operation: ``{type, errors: [{code, detail,
  attr}]}``. drf-standardized-errors would document one enum of ``attr``
  values per operation, which real answers leave (``evidence.files.<path>``,
  ``criteria.2.rubric_id``, a service's own field names).
- 413 on every operation with a request body: the parser's size limit.
- 403, 409 and 503 are declared by the operations that answer them, with
  the bodies below (``forbidden``, ``conflict``, ``unavailable``).
- Links between operations (``add_links``), so that stateful fuzzing walks
  from a created submission or session to the operations on it.
"""

from __future__ import annotations

from drf_spectacular.utils import OpenApiResponse
from drf_standardized_errors.openapi import AutoSchema as StandardizedAutoSchema
from drf_standardized_errors.openapi_serializers import (
    ClientErrorEnum,
    ErrorResponse403Serializer,
    ServerErrorEnum,
)
from rest_framework import serializers

from tutor.kernel.errors import ErrorCode409Enum, ErrorCode413Enum, ErrorCode503Enum

BODY_METHODS = ("POST", "PUT", "PATCH")


# What a client should do instead, in the documented response (SPEC §7); the
# answers' details say the same (tutor.web.errors).
ERROR_DESCRIPTIONS = {
    "401": "Not authenticated. Send `Authorization: Token <key>` (or a signed-in session). "
    "A header with another scheme (Bearer, Basic) or a bare key is answered with a detail "
    "naming the expected one.",
    "415": "The body is not JSON. Send it with `Content-Type: application/json`.",
}


class AutoSchema(StandardizedAutoSchema):
    def _get_response_bodies(self, direction="response"):
        responses = super()._get_response_bodies(direction=direction)
        for status_code, description in ERROR_DESCRIPTIONS.items():
            if isinstance(responses.get(status_code), dict):
                responses[status_code]["description"] = description
        return responses

    def _should_add_error_response(self, responses: dict, status_code: str) -> bool:
        if status_code == "413" and self.method not in BODY_METHODS:
            return False
        return super()._should_add_error_response(responses, status_code)


class ErrorSerializer(serializers.Serializer):
    code = serializers.CharField()
    detail = serializers.CharField()
    attr = serializers.CharField(allow_null=True)


class ErrorResponse400Serializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=["validation_error", "client_error"])
    errors = ErrorSerializer(many=True)


class Error409Serializer(serializers.Serializer):
    code = serializers.ChoiceField(choices=ErrorCode409Enum.choices)
    detail = serializers.CharField()
    attr = serializers.CharField(allow_null=True)


class ErrorResponse409Serializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=ClientErrorEnum.choices)
    errors = Error409Serializer(many=True)


class Error413Serializer(serializers.Serializer):
    code = serializers.ChoiceField(choices=ErrorCode413Enum.choices)
    detail = serializers.CharField()
    attr = serializers.CharField(allow_null=True)


class ErrorResponse413Serializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=ClientErrorEnum.choices)
    errors = Error413Serializer(many=True)


class Error503Serializer(serializers.Serializer):
    code = serializers.ChoiceField(choices=ErrorCode503Enum.choices)
    detail = serializers.CharField()
    attr = serializers.CharField(allow_null=True)


class ErrorResponse503Serializer(serializers.Serializer):
    type = serializers.ChoiceField(choices=ServerErrorEnum.choices)
    errors = Error503Serializer(many=True)


def forbidden(description: str) -> OpenApiResponse:
    """For an operation that refuses some authenticated callers itself (the
    generator documents 403 only for permission classes)."""
    return OpenApiResponse(ErrorResponse403Serializer, description=description)


def conflict(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorResponse409Serializer, description=description)


def unavailable(description: str) -> OpenApiResponse:
    return OpenApiResponse(ErrorResponse503Serializer, description=description)


# (path, method, status) -> {link name: (target path, target method, {parameter: runtime expression})}
LINKS: dict[tuple[str, str, str], dict[str, tuple[str, str, dict[str, str]]]] = {
    ("/api/submissions/", "post", "201"): {
        "GetSubmission": ("/api/submissions/{id}/", "get", {"id": "$response.body#/id"}),
        "RequestReview": ("/api/submissions/{id}/reviews/", "post", {"id": "$response.body#/id"}),
        "GiveVerdict": ("/api/submissions/{id}/verdicts/", "post", {"id": "$response.body#/id"}),
        "GetFirstAttempt": (
            "/api/review-attempts/{id}/",
            "get",
            {"id": "$response.body#/attempts/0/id"},
        ),
    },
    ("/api/submissions/{id}/reviews/", "post", "201"): {
        "GetAttempt": ("/api/review-attempts/{id}/", "get", {"id": "$response.body#/id"}),
    },
    ("/api/submissions/{id}/verdicts/", "post", "201"): {
        "GetAttempt": ("/api/review-attempts/{id}/", "get", {"id": "$response.body#/id"}),
    },
    **{
        ("/api/tutor/sessions/", "post", status): {
            "ListMessages": (
                "/api/tutor/sessions/{session_id}/messages/",
                "get",
                {"session_id": "$response.body#/id"},
            ),
            "SendMessage": (
                "/api/tutor/sessions/{session_id}/messages/",
                "post",
                {"session_id": "$response.body#/id"},
            ),
        }
        for status in ("200", "201")
    },
}


def add_links(result, generator, request, public):
    """drf-spectacular postprocessing hook: the OpenAPI ``links`` of LINKS,
    each naming its target by operationId (a link to an operation that is
    not in the document is left out)."""
    paths = result.get("paths", {})
    for (path, method, status), links in LINKS.items():
        response = paths.get(path, {}).get(method, {}).get("responses", {}).get(status)
        if response is None:
            continue
        for name, (target_path, target_method, parameters) in links.items():
            target = paths.get(target_path, {}).get(target_method)
            if target is None:
                continue
            response.setdefault("links", {})[name] = {
                "operationId": target["operationId"],
                "parameters": parameters,
            }
    return result
