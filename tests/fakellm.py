"""A scripted OpenAI-compatible server behind httpx.MockTransport.

The real client (tutor.llm) builds and sends the real HTTP request; only the
transport is replaced, so tests assert on the exact JSON the model received.
"""

from __future__ import annotations

import json
from collections.abc import Callable

import httpx

BASE_URL = "http://llm.test/v1"
MODEL = "test-model"


def completion(content: str) -> dict:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "model": MODEL,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
        ],
    }


class FakeLLM:
    """Answers requests in order from ``script``; afterwards from ``default``.

    A script entry is a string (the reply content), an ``httpx.Response``,
    an exception instance (raised as the transport error), or a callable
    taking the request JSON and returning one of those.
    """

    def __init__(self):
        self.script: list = []
        self.default: Callable[[dict], object] | str | None = None
        self.requests: list[dict] = []
        self.urls: list[str] = []
        self.headers: list[dict] = []

    def reply(self, *entries) -> FakeLLM:
        self.script.extend(entries)
        return self

    def handler(self, request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)
        self.requests.append(body)
        self.urls.append(str(request.url))
        self.headers.append(dict(request.headers))
        entry = self.script.pop(0) if self.script else self.default
        if entry is None:
            return httpx.Response(500, json={"error": "no scripted answer"})
        if callable(entry) and not isinstance(entry, httpx.Response):
            entry = entry(body)
        if isinstance(entry, Exception):
            raise entry
        if isinstance(entry, httpx.Response):
            return entry
        return httpx.Response(200, json=completion(entry))

    @property
    def last_messages(self) -> list[dict]:
        return self.requests[-1]["messages"]

    def all_text(self) -> str:
        return "\n".join(m["content"] for r in self.requests for m in r["messages"])
