"""Reading a roster page by page (NRPS 2.0; SPEC §12); anything short of the
whole roster is ``RosterIncomplete``. Details: docs/architecture.md, LTI rules.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import parse_qs, urljoin, urlsplit

import requests
from django.conf import settings
from pylti1p3.exception import LtiServiceException

from tutor.kernel.errors import ServiceUnavailable
from tutor.lti.platform import NRPS_SCOPE, CachedTokenConnector

NRPS_MEDIA_TYPE = "application/vnd.ims.lti-nrps.v2.membershipcontainer+json"
DELETED = "Deleted"  # only in membership differences
_TOKEN_CHARS = set("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


class RosterIncomplete(ServiceUnavailable):
    """The roster could not be read whole; ``reason`` names why for the audit row."""

    code = "lti_roster_incomplete"

    def __init__(self, message: str, *, reason: str):
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class Link:
    target: str
    params: dict[str, str]

    @property
    def rels(self) -> set[str]:
        return {r.lower() for r in self.params.get("rel", "").split()}


def _skip_space(text: str, i: int) -> int:
    while i < len(text) and text[i] in " \t\r\n":
        i += 1
    return i


def _quoted(text: str, i: int) -> tuple[str, int]:
    """The quoted-string starting at ``text[i] == '"'``; (value, index after it)."""
    out, i = [], i + 1
    while i < len(text) and text[i] != '"':
        if text[i] == "\\" and i + 1 < len(text):
            i += 1
        out.append(text[i])
        i += 1
    return "".join(out), i + 1


def parse_link_header(value: str, *, base: str = "") -> list[Link]:
    """The links of a ``Link`` header value (RFC 8288 §3). Anything that is
    not a link-value is skipped up to the next comma."""
    links: list[Link] = []
    i = 0
    while i < len(value):
        i = _skip_space(value, i)
        if i >= len(value):
            break
        if value[i] != "<":
            i = value.find(",", i)
            i = len(value) if i < 0 else i + 1
            continue
        end = value.find(">", i)
        if end < 0:
            break
        target, i = value[i + 1 : end].strip(), end + 1
        params: dict[str, str] = {}
        while True:
            i = _skip_space(value, i)
            if i >= len(value) or value[i] == ",":
                i += 1
                break
            if value[i] != ";":
                i = value.find(",", i)
                i = len(value) if i < 0 else i + 1
                break
            i = _skip_space(value, i + 1)
            start = i
            while i < len(value) and value[i] in _TOKEN_CHARS:
                i += 1
            name = value[start:i].lower()
            i = _skip_space(value, i)
            param = ""
            if i < len(value) and value[i] == "=":
                i = _skip_space(value, i + 1)
                if i < len(value) and value[i] == '"':
                    param, i = _quoted(value, i)
                else:
                    start = i
                    while i < len(value) and value[i] not in ",;":
                        i += 1
                    param = value[start:i].strip()
            # RFC 8288 §3.3: a rel occurring more than once -- the first counts.
            if name and name not in params:
                params[name] = param
        links.append(Link(target=urljoin(base, target) if base else target, params=params))
    return links


def next_page(headers, *, base: str) -> str | None:
    """The ``rel="next"`` target of a response's ``Link`` headers, as sent."""
    values = headers.get("Link") or headers.get("link") or ""
    for link in parse_link_header(values, base=base):
        if "next" in link.rels:
            return link.target
    return None


@dataclass
class RosterRead:
    members: list[dict] = field(default_factory=list)
    pages: int = 0
    differences: bool = False  # a differences-only answer, not the whole roster


def _is_differences(url: str, members: list) -> bool:
    if "since" in parse_qs(urlsplit(url).query):
        return True
    return any(isinstance(m, dict) and m.get("status") == DELETED for m in members)


def _request(connector: CachedTokenConnector, url: str) -> dict:
    """One page through pylti1p3; a cached token the platform refuses (401)
    is dropped and the page asked once more with a new one."""
    try:
        return connector.make_service_request(
            [NRPS_SCOPE], url, accept=NRPS_MEDIA_TYPE, case_insensitive_headers=True
        )
    except LtiServiceException as exc:
        if exc.response.status_code != 401 or not connector.from_cache:
            raise
    connector.forget_token([NRPS_SCOPE])
    return connector.make_service_request(
        [NRPS_SCOPE], url, accept=NRPS_MEDIA_TYPE, case_insensitive_headers=True
    )


def roster_read(*, connector: CachedTokenConnector, memberships_url: str) -> RosterRead:
    """Every page of one membership container (see the module's rules)."""
    read = RosterRead()
    seen_urls: set[str] = set()
    seen_members: set[str] = set()
    url: str | None = memberships_url
    while url is not None:
        if url in seen_urls:
            raise RosterIncomplete(
                f"the roster's page {read.pages + 1} points back to a page already read; nothing was changed",
                reason="repeated_page",
            )
        if read.pages >= settings.LTI_ROSTER_MAX_PAGES:
            raise RosterIncomplete(
                f"the roster has more than LTI_ROSTER_MAX_PAGES={settings.LTI_ROSTER_MAX_PAGES} pages; "
                "nothing was changed",
                reason="too_many_pages",
            )
        seen_urls.add(url)
        page = read.pages + 1
        try:
            answer = _request(connector, url)
        except LtiServiceException as exc:
            raise RosterIncomplete(
                f"the platform's roster service answered {exc.response.status_code} on page {page}; "
                "nothing was changed",
                reason=f"http_{exc.response.status_code}",
            ) from None
        except requests.RequestException as exc:
            raise RosterIncomplete(
                f"the platform's roster service could not be reached on page {page} "
                f"({type(exc).__name__}); nothing was changed",
                reason="unreachable",
            ) from None
        except ValueError:
            raise RosterIncomplete(
                f"the roster's page {page} was not JSON; nothing was changed", reason="not_json"
            ) from None
        body = answer["body"]
        members = body.get("members") if isinstance(body, dict) else None
        if not isinstance(members, list):
            raise RosterIncomplete(
                f"the roster's page {page} was not a membership container; nothing was changed",
                reason="not_a_container",
            )
        page_ids = [m.get("user_id") for m in members if isinstance(m, dict)]
        repeated = seen_members.intersection(i for i in page_ids if isinstance(i, str))
        if repeated:
            raise RosterIncomplete(
                f"the roster's page {page} repeats {len(repeated)} member(s) of earlier pages (the roster "
                "changed while it was read); nothing was changed",
                reason="repeated_members",
            )
        seen_members.update(i for i in page_ids if isinstance(i, str))
        read.differences = read.differences or _is_differences(url, members)
        read.members.extend(m for m in members if isinstance(m, dict))
        read.pages = page
        url = next_page(answer["headers"], base=url)
    return read
