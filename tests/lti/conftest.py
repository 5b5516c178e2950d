"""Fixtures of the LTI tests: a running simulated platform, the tool's key,
a registration of that platform for the course, and a browser that goes
through the whole launch (login -> platform auth URL -> signed id_token ->
launch)."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from tests.lti.platform import CLIENT_ID, DEPLOYMENT_ID, INSTRUCTOR, ISSUER, FakePlatform
from tutor.lti.selectors import published_jwks
from tutor.lti.services.keys import tool_key_generate
from tutor.lti.services.registrations import registration_register

LAUNCH_URL = "http://testserver/lti/launch/"


@pytest.fixture
def platform():
    server = FakePlatform().start()
    yield server
    server.stop()


@pytest.fixture
def tool_key(db):
    key, _ = tool_key_generate()
    return key


def register(platform: FakePlatform, course, **overrides):
    values = {
        "issuer": ISSUER,
        "client_id": CLIENT_ID,
        "deployment_ids": [DEPLOYMENT_ID],
        "auth_url": platform.auth_url,
        "token_url": platform.token_url,
        "jwks_url": platform.jwks_url,
        "course": course,
    }
    values.update(overrides)
    return registration_register(**values).registration


@pytest.fixture
def registration(platform, course, task, tool_key):
    registration = register(platform, course)
    platform.trust_tool(published_jwks())
    return registration


@dataclass
class Login:
    response: object
    state: str
    nonce: str
    query: dict


class Browser:
    """One browser (a Django test client keeps its cookies) in front of the LMS."""

    def __init__(self, platform: FakePlatform, client: Client | None = None):
        self.platform = platform
        self.client = client or Client()

    def login(self, *, method: str = "get", **params) -> Login:
        data = {
            "iss": ISSUER,
            "login_hint": "hint-1",
            "target_link_uri": LAUNCH_URL,
            "client_id": CLIENT_ID,
            "lti_deployment_id": DEPLOYMENT_ID,
            "lti1p3_new_window": "1",
            **params,
        }
        response = getattr(self.client, method)("/lti/login/", data)
        assert response.status_code == 302, response.content
        location = urlsplit(response["Location"])
        assert f"{location.scheme}://{location.netloc}{location.path}" == self.platform.auth_url
        query = {k: v[0] for k, v in parse_qs(location.query).items()}
        return Login(response=response, state=query["state"], nonce=query["nonce"], query=query)

    def post_launch(self, token: str, state: str):
        return self.client.post("/lti/launch/", {"id_token": token, "state": state})

    def launch(self, *, sign=None, state: str | None = None, **claims):
        """The whole launch; ``claims`` go to ``FakePlatform.claims``, ``sign``
        (kwargs of ``FakePlatform.sign``) picks another key or kid."""
        login = self.login()
        token = self.platform.sign(self.platform.claims(nonce=login.nonce, **claims), **(sign or {}))
        return self.post_launch(token, state if state is not None else login.state)


@pytest.fixture
def browser(platform):
    return Browser(platform)


@pytest.fixture
def launched(registration, platform):
    """An instructor launched once: the launch brought the roster URL."""
    Browser(platform).launch(sub="teacher-1", roles=[INSTRUCTOR], task=None)
    return platform
