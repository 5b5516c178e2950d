"""A simulated LTI 1.3 platform (an LMS) for the tests.

A real HTTP server on 127.0.0.1 (a free port, a thread of the test process),
so the tool reaches it exactly as it would reach an LMS -- also from a Celery
worker process. It has RSA keys of its own and serves:

- ``GET /jwks``: its public key set (the tool verifies id_tokens with it);
- ``POST /token``: OAuth 2 client credentials; the tool's client assertion is
  verified against the tool's published keys (``trust_tool``) before a token
  is issued;
- ``POST /lineitems/<id>/scores``: an AGS line item recording every score it
  accepts (``scores``) and every request (``requests``); it keeps the newest
  timestamp per user (the same one again: 400 "already exists", an earlier
  one: 409); answers can be scripted (``script_scores(503, 200)``) or
  delayed after storing (``script_score_delays(2)``);
- ``GET /memberships``: an NRPS membership container (``members``), paged
  with ``Link: rel="next"`` when ``page_size`` is set.

The auth endpoint is not served: the test reads the tool's redirect to it and
signs the id_token itself (``id_token``), as the platform would after its login.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

ISSUER = "https://lms.example.test"
CLIENT_ID = "tutor-client-1"
DEPLOYMENT_ID = "deployment-1"
CLAIM = "https://purl.imsglobal.org/spec/lti/claim/"
AGS_SCOPES = [
    "https://purl.imsglobal.org/spec/lti-ags/scope/lineitem",
    "https://purl.imsglobal.org/spec/lti-ags/scope/score",
]
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
TEACHING_ASSISTANT = "http://purl.imsglobal.org/vocab/lis/v2/membership/Instructor#TeachingAssistant"
CONTENT_DEVELOPER = "http://purl.imsglobal.org/vocab/lis/v2/membership#ContentDeveloper"
MENTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Mentor"
INSTITUTION_STUDENT = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#Student"


def rsa_key():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def public_jwk(key, kid: str) -> dict:
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    return {**jwk, "kid": kid, "alg": "RS256", "use": "sig"}


@dataclass(frozen=True)
class Recorded:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float

    def form(self) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(self.body.decode()).items()}

    def json(self) -> Any:
        return json.loads(self.body)


class FakePlatform:
    def __init__(self) -> None:
        self.key = rsa_key()
        self.kid = "platform-key-1"
        self.requests: list[Recorded] = []
        self.scores: dict[str, list[dict]] = {}  # accepted scores by line item id
        self.members: list[dict] = []
        self.page_size: int | None = None
        # How the next page is named: the Link header's form, and the page URL
        # (a callable of the next offset; the server reads `offset` or `Cursor=AbCd<n>`).
        self.link_template = '<{url}>; rel="next"'
        self.page_url = lambda start: f"{self.memberships_url}?offset={start}"
        self.tool_jwks: list[dict] = []
        self.issued_tokens: set[str] = set()
        self.jwks_status = 200
        self.jwks_headers: dict[str, str] = {}
        self.jwks_delay = 0.0  # seconds the key set takes to answer (a hanging LMS)
        self._score_answers: deque[int] = deque()
        self._token_answers: deque[int] = deque()
        self._member_answers: deque[int] = deque()
        self._score_delays: deque[float] = deque()
        self.lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    # --- lifecycle ---------------------------------------------------------------------

    def start(self) -> FakePlatform:
        platform = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):
                platform._handle(self, "GET")

            def do_POST(self):
                platform._handle(self, "POST")

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

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
    def memberships_url(self) -> str:
        return f"{self.base_url}/memberships"

    def lineitem_url(self, item: str = "item-1") -> str:
        return f"{self.base_url}/lineitems/{item}"

    # --- scripting -----------------------------------------------------------------------

    def trust_tool(self, jwks: list[dict]) -> None:
        """The tool's public keys, as the platform fetched them from its JWKS URL."""
        self.tool_jwks = list(jwks)

    def script_scores(self, *statuses: int) -> None:
        """The status of the next score posts, in order (then 200)."""
        self._score_answers.extend(statuses)

    def script_score_delays(self, *seconds: float) -> None:
        """Seconds the next score posts take to answer, after the score is stored."""
        self._score_delays.extend(seconds)

    def script_tokens(self, *statuses: int) -> None:
        self._token_answers.extend(statuses)

    def script_memberships(self, *statuses: int) -> None:
        """The status of the next roster pages, in order (then 200)."""
        self._member_answers.extend(statuses)

    def rotate_key(self) -> None:
        """A new signing key replaces the old one in the key set."""
        self.key, self.kid = rsa_key(), f"platform-key-{uuid.uuid4().hex[:8]}"

    def jwks_fetches(self) -> int:
        with self.lock:
            return sum(r.path == "/jwks" for r in self.requests)

    def score_requests(self) -> list[Recorded]:
        with self.lock:
            return [r for r in self.requests if r.path.endswith("/scores")]

    def accepted(self, item: str = "item-1") -> list[dict]:
        with self.lock:
            return list(self.scores.get(item, []))

    # --- the id_token ------------------------------------------------------------------

    def claims(
        self,
        *,
        nonce: str,
        sub: str = "student-1",
        roles: list[str] | None = None,
        task: str | None = "t1",
        deployment_id: str = DEPLOYMENT_ID,
        aud: str | list[str] = CLIENT_ID,
        lineitem: str | None = "item-1",
        resource_link_id: str = "link-1",
        lifetime: int = 300,
        **extra,
    ) -> dict:
        now = int(time.time())
        body = {
            "iss": ISSUER,
            "aud": aud,
            "sub": sub,
            "iat": now,
            "exp": now + lifetime,
            "nonce": nonce,
            "given_name": "Ada",
            "family_name": "Lovelace",
            "name": "Ada Lovelace",
            "email": "ada@example.test",
            CLAIM + "message_type": "LtiResourceLinkRequest",
            CLAIM + "version": "1.3.0",
            CLAIM + "deployment_id": deployment_id,
            CLAIM + "target_link_uri": "http://testserver/lti/launch/",
            CLAIM + "resource_link": {"id": resource_link_id, "title": "Explain first()"},
            CLAIM + "roles": [LEARNER] if roles is None else roles,
            CLAIM + "context": {"id": "course-ctx-1", "title": "Software Engineering Studio"},
            "https://purl.imsglobal.org/spec/lti-nrps/claim/namesroleservice": {
                "context_memberships_url": self.memberships_url,
                "service_versions": ["2.0"],
            },
        }
        if task is not None:
            body[CLAIM + "custom"] = {"task": task}
        if lineitem is not None:
            body["https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"] = {
                "scope": AGS_SCOPES,
                "lineitems": f"{self.base_url}/lineitems",
                "lineitem": self.lineitem_url(lineitem),
            }
        body.update(extra)
        return body

    def sign(self, body: dict, *, key=None, kid: str | None = None) -> str:
        return jwt.encode(body, key or self.key, algorithm="RS256", headers={"kid": kid or self.kid})

    def id_token(self, *, key=None, kid: str | None = None, **claims) -> str:
        return self.sign(self.claims(**claims), key=key, kid=kid)

    # --- serving -------------------------------------------------------------------------

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
        with self.lock:
            self.requests.append(recorded)
        if method == "GET" and url.path == "/jwks":
            if self.jwks_delay:
                time.sleep(self.jwks_delay)
            body = (
                {"keys": [public_jwk(self.key, self.kid)]} if self.jwks_status == 200 else {"error": "oops"}
            )
            return self._send(handler, self.jwks_status, body, headers=self.jwks_headers)
        if method == "POST" and url.path == "/token":
            return self._token(handler, recorded)
        if method == "POST" and url.path.startswith("/lineitems/") and url.path.endswith("/scores"):
            return self._score(handler, recorded, url.path.split("/")[2])
        if method == "GET" and url.path in ("/memberships", "/ctx/Course-ABC/memberships"):
            return self._memberships(handler, recorded, parse_qs(url.query))
        return self._send(handler, 404, {"error": "not found"})

    def _send(
        self, handler, status: int, payload, headers: dict | None = None, content_type="application/json"
    ):
        data = json.dumps(payload).encode() if not isinstance(payload, bytes) else payload
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            handler.send_response(status)
            handler.send_header("Content-Type", content_type)
            handler.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                handler.send_header(name, value)
            handler.end_headers()
            handler.wfile.write(data)

    def _token(self, handler, recorded: Recorded) -> None:
        with self.lock:
            scripted = self._token_answers.popleft() if self._token_answers else None
        if scripted is not None and scripted != 200:
            return self._send(handler, scripted, {"error": "temporarily_unavailable"})
        form = recorded.form()
        assertion = form.get("client_assertion", "")
        try:
            kid = jwt.get_unverified_header(assertion).get("kid")
            jwk = next(k for k in self.tool_jwks if k["kid"] == kid)
            claims = jwt.decode(
                assertion, jwt.PyJWK(jwk).key, algorithms=["RS256"], audience=self.token_url, issuer=CLIENT_ID
            )
            assert claims["sub"] == CLIENT_ID
        except Exception as exc:  # any fault in the assertion is the client's
            return self._send(handler, 401, {"error": "invalid_client", "detail": type(exc).__name__})
        if form.get("grant_type") != "client_credentials":
            return self._send(handler, 400, {"error": "unsupported_grant_type"})
        token = uuid.uuid4().hex
        with self.lock:
            self.issued_tokens.add(token)
        return self._send(
            handler,
            200,
            {
                "access_token": token,
                "token_type": "Bearer",
                "expires_in": 3600,
                "scope": form.get("scope", ""),
            },
        )

    def _authorized(self, recorded: Recorded) -> bool:
        auth = recorded.headers.get("authorization", "")
        with self.lock:
            return auth.startswith("Bearer ") and auth[len("Bearer ") :] in self.issued_tokens

    def _score(self, handler, recorded: Recorded, item: str) -> None:
        if not self._authorized(recorded):
            return self._send(handler, 401, {"error": "invalid_token"})
        with self.lock:
            status = self._score_answers.popleft() if self._score_answers else 200
        if status != 200:
            return self._send(handler, status, {"error": f"scripted {status}"})
        if recorded.headers.get("content-type") != "application/vnd.ims.lis.v1.score+json":
            return self._send(handler, 415, {"error": "wrong content type"})
        score = recorded.json()
        with self.lock:
            # AGS: the platform keeps the newest timestamp per user and line item.
            held = [s for s in self.scores.get(item, []) if s["userId"] == score["userId"]]
            newest = max((s["timestamp"] for s in held), default=None)
            if newest is not None and score["timestamp"] == newest:
                refusal = (400, {"error": "Score already exists for the provided timestamp"})
            elif newest is not None and score["timestamp"] < newest:
                refusal = (409, {"error": "Refusing score with an earlier timestamp for item"})
            else:
                refusal = None
                self.scores.setdefault(item, []).append(score)
            delay = self._score_delays.popleft() if self._score_delays else 0
        if delay:
            time.sleep(delay)  # stored, but the answer comes late
        if refusal is not None:
            return self._send(handler, refusal[0], refusal[1])
        return self._send(handler, 200, {"resultUrl": f"{self.base_url}/lineitems/{item}/results"})

    def _memberships(self, handler, recorded: Recorded, query: dict) -> None:
        if not self._authorized(recorded):
            return self._send(handler, 401, {"error": "invalid_token"})
        with self.lock:
            status = self._member_answers.popleft() if self._member_answers else 200
        if status != 200:
            return self._send(handler, status, {"error": f"scripted {status}"})
        if "Cursor" in query:
            start = int(query["Cursor"][0].removeprefix("AbCd"))
        else:
            start = int(query.get("offset", ["0"])[0])
        size = self.page_size or len(self.members) or 1
        page = self.members[start : start + size]
        headers = {}
        if start + size < len(self.members):
            headers["Link"] = self.link_template.format(url=self.page_url(start + size))
        return self._send(
            handler,
            200,
            {"id": self.memberships_url, "context": {"id": "course-ctx-1"}, "members": page},
            headers=headers,
            content_type="application/vnd.ims.lti-nrps.v2.membershipcontainer+json",
        )
