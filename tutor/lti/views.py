"""The three endpoints a platform calls (SPEC §12): OIDC login initiation,
the launch, and the tool's public keys.

Login and launch are browser pages (form posts, redirects, an HTML page when
something is refused), shown inside the LMS; they are DRF views only so the
OpenAPI schema documents them. Every refusal -- a domain error or a token
pylti1p3 rejected -- becomes one HTML page with its 4xx status, from one
place (``LtiPageView.handle_exception``). Tokens and keys are never logged.
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qs, urlencode, urlsplit

import jwt
from django.conf import settings
from django.contrib.auth import login as auth_login
from django.http import HttpResponse, HttpResponseRedirect
from django.http.multipartparser import MultiPartParserError
from django.shortcuts import render
from django.urls import reverse
from django.utils.decorators import method_decorator
from django.views.decorators.cache import never_cache
from django.views.decorators.clickjacking import xframe_options_exempt
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from drf_standardized_errors.openapi import AutoSchema
from pylti1p3.contrib.django import DjangoOIDCLogin
from pylti1p3.exception import LtiException, OIDCException
from rest_framework.negotiation import BaseContentNegotiation
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.permissions import AllowAny
from rest_framework.response import Response
from rest_framework.views import APIView

from tutor.kernel.errors import DomainError, InvalidInput
from tutor.lti.adapters import NonceStore, ToolConf, platform_session
from tutor.lti.selectors import published_jwks
from tutor.lti.serializers import JwksSerializer, LaunchFormSerializer, LoginFormSerializer
from tutor.lti.services.launch import (
    CLAIM,
    LaunchClaims,
    LaunchRefused,
    launch_accept,
    launch_clock_refused,
    login_nonce_issue,
    login_nonce_use,
)
from tutor.lti.verify import ClockSkew, ToolMessageLaunch
from tutor.models import Enrollment
from tutor.web.parsers import unstorable_text
from tutor.web.renderers import FastJSONRenderer

log = logging.getLogger(__name__)

# pylti1p3 signals a refused message with its own exceptions; a token whose
# body is not the JSON object it should be surfaces as the others.
LIBRARY_ERRORS = (LtiException, OIDCException, ValueError, TypeError, AttributeError, KeyError)
# Every registered claim a launch needs; PyJWT checks exp (and iat, nbf) once present.
REQUIRED_CLAIMS = ["exp", "iat"]
NEW_WINDOW_PARAMETER = "lti1p3_new_window"  # set by pylti1p3's cookie check page
COOKIE_CHECK_TEXTS = {
    "main_msg": "Your browser blocks cookies inside the LMS page, so the tutor cannot open here.",
    "click_msg": "Open the tutor in a new window.",
    "loading_msg": "Opening the tutor…",
}
STUDENT_LANDING = "/?task={task}"  # the student client, opened on the task
STAFF_LANDING = "/admin/"
TASK_QUEUE_FILTER = "submission__task__id__exact"  # the review attempts admin's task filter


def _refuse_unstorable_claims(id_token: str) -> None:
    """A claim holding a NUL or a lone surrogate (escaped in the token's
    JSON) can be no id, name or nonce: refused, naming it, before the
    library looks any claim up -- PostgreSQL refuses a NUL in a query, and
    a lone surrogate cannot be encoded. The token is read unverified for
    this alone; whatever it is, the library verifies it next."""
    try:
        body = jwt.decode(id_token, options={"verify_signature": False})
    except jwt.PyJWTError:
        return  # not a token at all: the library says so
    found = unstorable_text(body)
    if found is not None:
        path, problem = found
        raise InvalidInput(f"The launch's claim {path.removeprefix(CLAIM) or 'set'} {problem}.")


def _refusal_from_library(exc: Exception) -> DomainError:
    """The page for a message pylti1p3 rejected."""
    reason = str(exc)[:200] if isinstance(exc, (LtiException, OIDCException)) else "malformed launch message"
    log.warning("lti launch refused by validation: %s", reason)
    return LaunchRefused(
        f"This launch from the LMS could not be verified ({reason}). Open the link in the LMS again."
    )


def staff_landing(task) -> str:
    """Staff land on the task's review queue (its attempts waiting for a
    decision), or on the admin desk when the link names no task."""
    if task is None:
        return STAFF_LANDING
    return (
        reverse("admin:feedback_reviewattempt_changelist")
        + "?"
        + urlencode({TASK_QUEUE_FILTER: str(task.pk)})
    )


class _FirstRenderer(BaseContentNegotiation):
    """Pages answer whatever the browser accepts: never a 406."""

    def select_parser(self, request, parsers):
        return parsers[0] if parsers else None

    def select_renderer(self, request, renderers, format_suffix=None):
        return renderers[0], renderers[0].media_type


class PageSchema(AutoSchema):
    """The standard error documentation, without its JSON examples on the
    HTML pages these views answer with."""

    def _get_examples(self, serializer, direction, media_type, status_code=None, extras=None):
        if media_type == "text/html":
            return SpectacularAutoSchema._get_examples(
                self, serializer, direction, media_type, status_code=status_code, extras=extras
            )
        return super()._get_examples(
            serializer, direction, media_type, status_code=status_code, extras=extras
        )


@method_decorator([xframe_options_exempt, never_cache], name="dispatch")
class LtiPageView(APIView):
    schema = PageSchema()
    authentication_classes: list = []
    permission_classes = [AllowAny]
    renderer_classes = [FastJSONRenderer]
    content_negotiation_class = _FirstRenderer

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        try:
            form = request._request.POST
        except MultiPartParserError:
            raise InvalidInput("The request body is not a readable form.") from None
        # A NUL character can be in no issuer, id or token, and PostgreSQL refuses it in a query.
        for params in (request._request.GET, form):
            if any("\x00" in value for _name, values in params.lists() for value in values):
                raise InvalidInput("The request holds a NUL character.")

    def handle_exception(self, exc):
        if isinstance(exc, DomainError):
            return render(
                self.request._request,
                "lti/refused.html",
                {"status": exc.status_code, "message": exc.public_message()},
                status=exc.status_code,
            )
        return super().handle_exception(exc)


def _launch_url(request) -> str:
    path = reverse("lti-launch")
    if settings.LTI_TOOL_URL:
        return settings.LTI_TOOL_URL.rstrip("/") + path
    return request.build_absolute_uri(path)


_REFUSED = OpenApiResponse(response=OpenApiTypes.STR, description="refused: an HTML page saying why")
_LOGIN_PARAMETERS = [
    OpenApiParameter("iss", str, required=True, description="the platform's issuer"),
    OpenApiParameter("login_hint", str, required=True),
    OpenApiParameter("target_link_uri", str),
    OpenApiParameter("client_id", str, description="needed when the issuer has several registrations"),
    OpenApiParameter("lti_message_hint", str),
    OpenApiParameter("lti_deployment_id", str),
    OpenApiParameter(NEW_WINDOW_PARAMETER, str, description="set by the cookie check page"),
]
_LOGIN_RESPONSES = {
    (200, "text/html"): OpenApiResponse(
        response=OpenApiTypes.STR, description="the cookie check page, which continues the login"
    ),
    302: OpenApiResponse(description="redirect to the platform's OIDC authorization endpoint"),
    (400, "text/html"): _REFUSED,
    (403, "text/html"): _REFUSED,
}


class LoginView(LtiPageView):
    """OIDC third-party login initiation: the platform names itself, the tool
    answers with a redirect to the platform's authorization endpoint carrying
    a fresh state (also set as a cookie in this browser) and nonce."""

    @extend_schema(
        operation_id="lti_login",
        parameters=_LOGIN_PARAMETERS,
        responses=_LOGIN_RESPONSES,
        auth=[],
        tags=["lti"],
    )
    def get(self, request):
        return self._login(request)

    @extend_schema(
        operation_id="lti_login_post",
        request={"application/x-www-form-urlencoded": LoginFormSerializer},
        responses=_LOGIN_RESPONSES,
        auth=[],
        tags=["lti"],
    )
    def post(self, request):
        return self._login(request)

    def _login(self, request) -> HttpResponse:
        django_request = request._request
        tool_conf = ToolConf()
        oidc = DjangoOIDCLogin(django_request, tool_conf, session_service=NonceStore(django_request))
        try:
            oidc.validate_oidc_login()
        except OIDCException as exc:
            raise LaunchRefused(
                f"The LMS login request was refused ({exc}): this platform is not registered for the tutor."
            ) from None
        launch_url = _launch_url(django_request)
        wants_check = not (
            django_request.GET.get(NEW_WINDOW_PARAMETER) or django_request.POST.get(NEW_WINDOW_PARAMETER)
        )
        if settings.LTI_COOKIE_CHECK and wants_check:
            return oidc.enable_check_cookies(**COOKIE_CHECK_TEXTS).redirect(launch_url)
        redirect = oidc.get_redirect_object(launch_url)
        query = parse_qs(urlsplit(redirect.get_redirect_url()).query)
        login_nonce_issue(
            registration=tool_conf.registration, nonce=query["nonce"][0], state=query["state"][0]
        )
        return redirect.do_redirect()


class LaunchView(LtiPageView):
    """The launch: the platform's id_token, checked by pylti1p3 (with the
    cached key set and the clock leeway of ``tutor.lti.verify``), then the
    user is signed in and sent to the task (staff: to its review queue)."""

    parser_classes = [FormParser, MultiPartParser]

    @extend_schema(
        operation_id="lti_launch",
        request={"application/x-www-form-urlencoded": LaunchFormSerializer},
        responses={
            302: OpenApiResponse(
                description="signed in: to /?task=<task id> (students); staff to the task's review queue "
                "in admin, or /admin/ when the link names no task"
            ),
            (400, "text/html"): _REFUSED,
            (403, "text/html"): _REFUSED,
            (404, "text/html"): _REFUSED,
            (503, "text/html"): _REFUSED,
        },
        auth=[],
        tags=["lti"],
    )
    def post(self, request):
        django_request = request._request
        tool_conf = ToolConf()
        message = ToolMessageLaunch(
            django_request,
            tool_conf,
            session_service=NonceStore(django_request),
            requests_session=platform_session(),
        )
        message.set_jwt_verify_options({"verify_aud": False, "require": REQUIRED_CLAIMS})
        _refuse_unstorable_claims(django_request.POST.get("id_token", ""))
        try:
            body = message.validate().get_launch_data()
        except ClockSkew as exc:
            launch_clock_refused(registration=tool_conf.registration, skew=exc)
            raise
        except LIBRARY_ERRORS as exc:
            raise _refusal_from_library(exc) from exc
        aud = body.get("aud")
        if isinstance(aud, list) and len(aud) > 1 and body.get("azp") != tool_conf.registration.client_id:
            # OIDC core 3.1.3.7: with several audiences, azp must name this client.
            raise LaunchRefused(
                "This launch names several audiences but not this tool as the authorized party."
            )
        login_nonce_use(
            registration=tool_conf.registration,
            nonce=body["nonce"],
            state=django_request.POST.get("state", ""),
        )
        outcome = launch_accept(
            registration=tool_conf.registration,
            deployment=tool_conf.deployment,
            claims=LaunchClaims.from_token(body),
        )
        # A new session: whoever was signed in in this browser before is signed out.
        auth_login(django_request, outcome.user, backend="django.contrib.auth.backends.ModelBackend")
        if outcome.role == Enrollment.Role.STAFF:
            return HttpResponseRedirect(staff_landing(outcome.task))
        return HttpResponseRedirect(STUDENT_LANDING.format(task=outcome.task.pk))


class JwksView(APIView):
    """The tool's public keys: the active one and those retired within the
    grace period. Platforms verify the tool's client assertions with them."""

    authentication_classes: list = []
    permission_classes = [AllowAny]
    renderer_classes = [FastJSONRenderer]

    @extend_schema(operation_id="lti_jwks", responses={200: JwksSerializer}, auth=[], tags=["lti"])
    def get(self, request):
        response = Response({"keys": published_jwks()})
        response["Cache-Control"] = "public, max-age=300"
        return response
