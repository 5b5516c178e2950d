"""Two LTI 1.3 platforms written elsewhere, driving the tool (SPEC §12).

- ``Lti1p3Platform``: the framework-agnostic core of ``lti1p3platform``: its
  login initiation and launch message (signed by its registration), its
  access-token grant (the tool's client assertion checked against the
  tool's keys -- and, as Brightspace does, its audience), its NRPS and AGS
  services, and its own response framing
  (``lti1p3platform.framework.django.response``: ``Link: <…>; rel=next``).
- ``OpenEdxPlatform``: Open edX's consumer, ``lti_consumer.lti_1p3`` of
  lti-consumer-xblock: its login initiation and launch (roles from Open
  edX's own role map, so "Community TA" is what Open edX sends), its
  access-token grant and its token check. Its AGS and NRPS views need the
  LMS's models, so their two rules are restated here as they read there:
  the score serializer's timestamp rule (400 "Score already exists for the
  provided timestamp", 400 "Score timestamp can only be updated to a later
  point in time") and the memberships view's paging (``limit``/``page``,
  ``Link: <…>; rel="next"``).

Each is an HTTP server on 127.0.0.1 (a thread of the test process), as an LMS
would be. ``clock_offset`` moves the platform's clock (its library's own
``time``) when it signs a launch.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import types
import uuid
from collections import deque
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

from cryptography.hazmat.primitives import serialization
from django.test import Client

from tests.lti.platform import Recorded, rsa_key

LOGIN_PATH = "/lti/login/"
LAUNCH_URL = "http://testserver/lti/launch/"


def _pem_pair():
    key = rsa_key()
    private = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


@contextlib.contextmanager
def _clock(module, offset: float):
    """The library module's ``time`` moved by ``offset`` seconds, while signing."""
    if not offset:
        yield
        return
    real = module.time
    module.time = types.SimpleNamespace(time=lambda: real.time() + offset)
    try:
        yield
    finally:
        module.time = real


class _Server:
    """The HTTP side both platforms share: routes, a request log, scripted
    roster failures and late score answers."""

    issuer = ""
    client_id = "tutor-client-outside"
    deployment_id = "deployment-outside"
    context_id = "course-ctx-outside"

    def __init__(self) -> None:
        self.requests: list[Recorded] = []
        self.members: list[dict] = []
        self.page_size: int | None = None
        self.scores: dict[str, list[dict]] = {}
        self.clock_offset = 0.0
        self.failing_pages: set[int] = set()
        self._score_delays: deque[float] = deque()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # --- lifecycle and addresses --------------------------------------------------------------

    def start(self):
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                outer._handle(self, "GET")

            def do_POST(self):
                outer._handle(self, "POST")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        self.configure()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def configure(self) -> None:
        raise NotImplementedError

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    @property
    def auth_url(self) -> str:
        return f"{self.base_url}/auth"

    @property
    def token_url(self) -> str:
        return f"{self.base_url}/token"

    @property
    def jwks_url(self) -> str:
        return f"{self.base_url}/jwks"

    @property
    def lineitems_url(self) -> str:
        return f"{self.base_url}/lineitems"

    def lineitem_url(self, item: str = "item-1") -> str:
        return f"{self.lineitems_url}/{item}"

    def registration_values(self, course) -> dict:
        return {
            "issuer": self.issuer,
            "client_id": self.client_id,
            "deployment_ids": [self.deployment_id],
            "auth_url": self.auth_url,
            "token_url": self.token_url,
            "jwks_url": self.jwks_url,
            "course": course,
        }

    # --- scripting and reading ------------------------------------------------------------------

    def script_score_delays(self, *seconds: float) -> None:
        """Seconds the next score posts take to answer, after the score is stored."""
        self._score_delays.extend(seconds)

    def accepted(self, item: str = "item-1") -> list[dict]:
        with self._lock:
            return list(self.scores.get(item, []))

    def paths(self, suffix: str) -> list[str]:
        with self._lock:
            return [r.path for r in self.requests if r.path.endswith(suffix)]

    def token_requests(self) -> list[Recorded]:
        with self._lock:
            return [r for r in self.requests if r.path == "/token"]

    def _store_score(self, item: str, score: dict) -> str | None:
        """AGS: the newest timestamp per user wins. None when stored, else
        "same" or "older" (the platform's refusal follows)."""
        stamp = datetime.fromisoformat(score["timestamp"])
        with self._lock:
            held = [s for s in self.scores.get(item, []) if s["userId"] == score["userId"]]
            newest = max((datetime.fromisoformat(s["timestamp"]) for s in held), default=None)
            if newest is not None and stamp <= newest:
                return "same" if stamp == newest else "older"
            self.scores.setdefault(item, []).append(score)
            delay = self._score_delays.popleft() if self._score_delays else 0
        if delay:
            time.sleep(delay)  # stored; the answer comes after the tool gave up
        return None

    # --- serving -------------------------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        length = int(handler.headers.get("Content-Length") or 0)
        body = handler.rfile.read(length) if length else b""
        url = urlsplit(handler.path)
        recorded = Recorded(
            method=method,
            path=url.path,
            headers={k.lower(): v for k, v in handler.headers.items()},
            body=body,
            at=time.monotonic(),
        )
        with self._lock:
            self.requests.append(recorded)
        try:
            status, headers, payload = self.route(method, url, handler.headers, body)
        except Exception as exc:  # a harness fault shows as a 500 with its name
            status, headers, payload = 500, {}, json.dumps({"error": type(exc).__name__}).encode()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            handler.send_response(status)
            headers.setdefault("Content-Type", "application/json")
            headers["Content-Length"] = str(len(payload))
            for name, value in headers.items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(payload)

    def route(self, method, url, headers, body) -> tuple[int, dict, bytes]:
        raise NotImplementedError

    # --- the launch, through the tool's login --------------------------------------------------------

    def _login(self, client: Client, login_url: str) -> dict:
        """The platform's login initiation at the tool; the tool's redirect
        to the platform's auth URL carries what the platform answers."""
        query = {k: v[0] for k, v in parse_qs(urlsplit(login_url).query).items()}
        query["lti1p3_new_window"] = "1"  # past the cookie check page, as a browser would be
        response = client.get(LOGIN_PATH, query)
        assert response.status_code == 302, response.content
        location = urlsplit(response["Location"])
        assert f"{location.scheme}://{location.netloc}{location.path}" == self.auth_url
        return {k: v[0] for k, v in parse_qs(location.query).items()}


# --- lti1p3platform ----------------------------------------------------------------------------------


class Lti1p3Platform(_Server):
    issuer = "https://lti1p3platform.example.test"

    def __init__(
        self, *, memberships_path: str = "/Ctx/Course-ABC/memberships", cursor: str = "AbCd"
    ) -> None:
        super().__init__()
        self.memberships_path = memberships_path
        self.cursor = cursor  # an opaque, case-sensitive part of every roster page URL
        self.token_audience: str | None = None  # None: the token URL (LTI security 1.0 §4.1.1)

    def configure(self) -> None:
        from lti1p3platform.registration import Registration

        private, public = _pem_pair()
        self.registration = (
            Registration()
            .set_iss(self.issuer)
            .set_client_id(self.client_id)
            .set_deployment_id(self.deployment_id)
            .set_launch_url(LAUNCH_URL)
            .set_oidc_login_url(f"http://testserver{LOGIN_PATH}")
            .set_platform_public_key(public)
            .set_platform_private_key(private)
        )

    def trust_tool(self, jwks: list[dict]) -> None:
        self.registration.set_tool_key_set({"keys": list(jwks)})

    @property
    def memberships_url(self) -> str:
        return f"{self.base_url}{self.memberships_path}"

    def roster_claim_url(self) -> str:
        """The NRPS URL the launch brings: its first page, with a page size and the cursor."""
        query = {"cursor": self.cursor}
        if self.page_size:
            query["limit"] = self.page_size
        return f"{self.memberships_url}?{urlencode(query)}"

    def _conf(self):
        from lti1p3platform.exceptions import LtiException
        from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract

        platform = self

        class Conf(LTI1P3PlatformConfAbstract):
            def init_platform_config(self, **kwargs):
                pass

            def get_registration_by_params(self, **kwargs):
                return platform.registration

            def tool_validate_and_decode(self, jwt_token_string):
                claims = super().tool_validate_and_decode(jwt_token_string)
                expected = platform.token_audience or platform.token_url
                audiences = claims.get("aud") if isinstance(claims.get("aud"), list) else [claims.get("aud")]
                if expected not in audiences:
                    raise LtiException("Invalid audience")
                return claims

        conf = Conf()
        conf.get_registration()
        return conf

    def _request(self, method, url, headers, body):
        from lti1p3platform.request import Request

        class HttpRequest(Request):
            def build_metadata(self, raw):
                return raw

        # The framework adapter is the caller's part: numbers in the query are numbers.
        query = {k: (int(v[0]) if v[0].isdigit() else v[0]) for k, v in parse_qs(url.query).items()}
        content_type = headers.get("Content-Type", "")
        return HttpRequest(
            {
                "method": method,
                "form_data": {k: v[0] for k, v in parse_qs(body.decode()).items()}
                if method == "POST"
                else {},
                "get_data": query,
                "headers": headers,
                "content_type": content_type,
                "path": url.path,
                "json": json.loads(body) if body and "json" in content_type else None,
            }
        )

    def route(self, method, url, headers, body):
        from lti1p3platform.framework.django.response import wrap_json_resp

        if method == "GET" and url.path == "/jwks":
            return 200, {}, json.dumps({"keys": self.registration.get_jwks()}).encode()
        if method == "POST" and url.path == "/token":
            return self._token(body)
        request = self._request(method, url, headers, body)
        if method == "GET" and url.path == self.memberships_path:
            service = self._roster_service(request)
            answer = service.handle_resp(service.handle_get_members)
        elif method == "POST" and url.path.startswith("/lineitems/") and url.path.endswith("/scores"):
            service = self._grades_service(request)
            answer = service.handle_resp(service.handle_update_score, line_item_id=url.path.split("/")[2])
        else:
            return 404, {}, b'{"error": "not found"}'
        response = wrap_json_resp(answer)  # the library's own framing, Link header included
        return response.status_code, dict(response.items()), response.content

    def _token(self, body: bytes):
        form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
        try:
            answer = self._conf().get_access_token(form)
        except Exception as exc:  # the grant refused: the tool's fault
            return 401, {}, json.dumps({"error": "invalid_client", "detail": str(exc)[:200]}).encode()
        return 200, {}, json.dumps(answer).encode()

    def _roster_service(self, request):
        from lti1p3platform.exceptions import LtiServiceException
        from lti1p3platform.membership import Context
        from lti1p3platform.service_connector import NamesRoleProvisioningService

        platform = self

        class Roster(NamesRoleProvisioningService):
            def get_context_by_id(self):
                return Context(id=platform.context_id, label="SE-101", title="Software Engineering Studio")

            def get_member_data_page(self, page=1, limit=None, role=None, since=None, cursor=None, **extra):
                if cursor != platform.cursor:
                    raise LtiServiceException("Unknown cursor", 404)
                if page in platform.failing_pages:
                    raise LtiServiceException("The roster is unavailable", 500)
                if not limit:
                    return {"content": list(platform.members), "has_next": False}
                start = (page - 1) * limit
                return {
                    "content": platform.members[start : start + limit],
                    "has_next": start + limit < len(platform.members),
                }

        return Roster(request, self._conf(), self.memberships_url)

    def _grades_service(self, request):
        from lti1p3platform.score import UpdateScoreStatus
        from lti1p3platform.service_connector import AssignmentsGradesService

        platform = self

        class Grades(AssignmentsGradesService):
            def update_score(self, line_item_id, score):
                refused = platform._store_score(line_item_id, score)
                return UpdateScoreStatus.SUCCESS if refused is None else UpdateScoreStatus.OLD_TIMESTAMP

            # The line item and results endpoints: not used by the tool.
            find_lineitems = find_lineitem = create_lineitem = update_lineitem = None
            delete_lineitem = get_results = None

        Grades.__abstractmethods__ = frozenset()
        return Grades(request, self._conf(), self.lineitems_url, self.lineitem_url())

    def launch(
        self, client: Client, *, sub: str, roles: list[str], task: str | None = "t1", link: str = "link-1"
    ):
        """A whole launch of ``sub`` through the tool's login; the tool's answer."""
        from lti1p3platform import registration as signing
        from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
        from lti1p3platform.oidc_login import OIDCLoginAbstract

        conf = self._conf()

        class Login(OIDCLoginAbstract):
            def set_lti_message_hint(self, **kwargs):
                self._lti_message_hint = kwargs["hint"]

            def get_redirect(self, url):
                return url

        login = Login(None, conf)
        login.set_lti_message_hint(hint=f"{link}:{uuid.uuid4().hex[:8]}")
        preflight = self._login(client, login.initiate_login(sub))

        class Launch(LTIAdvantageMessageLaunchAbstract):
            def render_launch_form(self, launch_data, **kwargs):
                return launch_data

        message = Launch(self._request("GET", urlsplit("?" + urlencode(preflight)), {}, b""), conf)
        message.set_user_data(sub, roles, full_name=f"Person {sub}", email_address=f"{sub}@example.test")
        message.set_resource_link_claim(link, title="Explain first()")
        message.set_launch_context_claim(self.context_id, context_title="Software Engineering Studio")
        if task is not None:
            message.set_custom_parameters_claim({"task": task})
        message.set_ags(self.lineitems_url, self.lineitem_url(), allow_creating_lineitems=False)
        message.set_nrps(self.roster_claim_url())
        with _clock(signing, self.clock_offset):
            form = message.lti_launch()
        assert form["launch_url"] == LAUNCH_URL
        return client.post("/lti/launch/", {"id_token": form["id_token"], "state": form["state"]})


# --- Open edX (lti_consumer.lti_1p3) -----------------------------------------------------------------


class OpenEdxPlatform(_Server):
    issuer = "https://openedx.example.test"
    memberships_path = "/api/lti_consumer/v1/lti/7/Memberships"

    def configure(self) -> None:
        self.private_pem, _ = _pem_pair()
        self.kid = "openedx-" + uuid.uuid4().hex[:8]
        self.tool_public_pem: str | None = None

    def trust_tool_key(self, public_pem: str) -> None:
        self.tool_public_pem = public_pem

    @property
    def memberships_url(self) -> str:
        return f"{self.base_url}{self.memberships_path}"

    def roster_claim_url(self) -> str:
        return f"{self.memberships_url}?limit={self.page_size}" if self.page_size else self.memberships_url

    def consumer(self):
        from lti_consumer.lti_1p3.consumer import LtiAdvantageConsumer

        return LtiAdvantageConsumer(
            iss=self.issuer,
            lti_oidc_url=f"http://testserver{LOGIN_PATH}",
            lti_launch_url=LAUNCH_URL,
            client_id=self.client_id,
            deployment_id=self.deployment_id,
            rsa_key=self.private_pem,
            rsa_key_id=self.kid,
            redirect_uris=[LAUNCH_URL],
            tool_key=self.tool_public_pem,
        )

    def route(self, method, url, headers, body):
        from lti_consumer.lti_1p3.constants import LTI_1P3_ACCESS_TOKEN_SCOPES

        consumer = self.consumer()
        if method == "GET" and url.path == "/jwks":
            return 200, {}, json.dumps(consumer.get_public_keyset()).encode()
        if method == "POST" and url.path == "/token":
            form = {k: v[0] for k, v in parse_qs(body.decode()).items()}
            try:
                answer = consumer.access_token(form)
            except Exception as exc:
                return 400, {}, json.dumps({"error": "invalid_client", "detail": type(exc).__name__}).encode()
            return 200, {}, json.dumps(answer).encode()
        auth = headers.get("Authorization", "").split()
        try:
            allowed = len(auth) == 2 and consumer.check_token(auth[1], LTI_1P3_ACCESS_TOKEN_SCOPES)
        except Exception:
            allowed = False
        if not allowed:
            return 403, {}, b'{"detail": "Authentication credentials were not provided."}'
        if method == "GET" and url.path == self.memberships_path:
            return self._memberships(url)
        if method == "POST" and url.path.startswith("/lineitems/") and url.path.endswith("/scores"):
            return self._score(url.path.split("/")[2], json.loads(body))
        return 404, {}, b'{"detail": "Not found."}'

    def _memberships(self, url):
        """The memberships view's paging (``LtiNrpsContextMembershipViewSet.list``)."""
        query = {k: v[0] for k, v in parse_qs(url.query).items()}
        members = sorted(self.members, key=lambda m: m["user_id"])
        headers = {"Content-Type": "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"}
        limit = int(query["limit"]) if query.get("limit", "").isdigit() and int(query["limit"]) > 0 else None
        page = int(query.get("page", "1")) if limit else 1
        if page in self.failing_pages:
            return 500, {}, b'{"error": "server_error"}'
        if limit:
            start = (page - 1) * limit
            if start + limit < len(members):
                next_url = f"{self.memberships_url}?{urlencode({**query, 'limit': limit, 'page': page + 1})}"
                headers["Link"] = f'<{next_url}>; rel="next"'
            members = members[start : start + limit]
        result = {"id": str(url.geturl()), "context": {"id": self.context_id}, "members": members}
        return 200, headers, json.dumps(result).encode()

    def _score(self, item: str, score: dict):
        """The score serializer's timestamp rule (``LtiAgsScoreSerializer.validate_timestamp``)."""
        refused = self._store_score(item, score)
        if refused == "same":
            return (
                400,
                {},
                json.dumps({"timestamp": ["Score already exists for the provided timestamp"]}).encode(),
            )
        if refused == "older":
            message = "Score timestamp can only be updated to a later point in time"
            return 400, {}, json.dumps({"timestamp": [message]}).encode()
        return 200, {}, json.dumps(score).encode()

    def launch(
        self, client: Client, *, sub: str, role: str, task: str | None = "t1", link: str = "block-v1:link-1"
    ):
        """A whole launch of ``sub`` with the Open edX course role ``role``
        (``student``, ``staff``, ``Community TA``, …) through the tool's login."""
        from lti_consumer.data import Lti1p3LaunchData
        from lti_consumer.lti_1p3 import key_handlers as signing

        consumer = self.consumer()
        data = Lti1p3LaunchData(
            user_id=sub,
            user_role=role,
            config_id=uuid.uuid4(),
            resource_link_id=link,
            context_id=self.context_id,
            context_title="Software Engineering Studio",
        )
        preflight = self._login(client, consumer.prepare_preflight_url(data))
        consumer.set_user_data(sub, role, full_name=f"Person {sub}", email_address=f"{sub}@example.test")
        consumer.set_resource_link_claim(link)
        consumer.set_context_claim(self.context_id, context_title="Software Engineering Studio")
        if task is not None:
            consumer.set_custom_parameters({"task": task})
        consumer.enable_ags(self.lineitems_url, self.lineitem_url())
        consumer.enable_nrps(self.roster_claim_url())
        with _clock(signing, self.clock_offset):
            form = consumer.generate_launch_request(preflight)
        return client.post("/lti/launch/", {"id_token": form["id_token"], "state": form["state"]})
