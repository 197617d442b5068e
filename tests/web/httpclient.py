"""HTTP as the pages do it, for the web tests: urllib in a worker thread, the session cookie
and the CSRF token kept like a browser keeps them."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import trio


def http(
    url: str,
    body: bytes | dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any, dict[str, str]]:
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    request = urllib.request.Request(
        url, data=data, headers=headers or {}, method="GET" if data is None else "POST"
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.loads(response.read()), dict(response.headers)
    except urllib.error.HTTPError as error:
        raw = error.read()
        try:
            return error.code, json.loads(raw), dict(error.headers)
        except ValueError:  # Starlette's own plain-text 404
            return error.code, raw.decode(), dict(error.headers)


class Browser:
    """Cookie and CSRF handling like the pages do, over urllib in a worker thread."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.cookie = ""
        self.csrf = ""

    async def get(self, path: str) -> tuple[int, Any]:
        status, body, _ = await trio.to_thread.run_sync(http, self.base + path, None, self._h())
        return status, body

    async def session(self) -> None:
        _status, body, headers = await trio.to_thread.run_sync(
            http, self.base + "/api/session", None, self._h()
        )
        self._cookie_from(headers)
        self.csrf = body["csrf"]

    async def post(self, path: str, body: Any, **extra: str) -> tuple[int, Any]:
        headers = {"X-CSRF-Token": self.csrf, "Origin": self.base, **self._h(), **extra}
        status, answer, response_headers = await trio.to_thread.run_sync(
            http, self.base + path, body, headers
        )
        self._cookie_from(response_headers)
        if isinstance(answer, dict) and "csrf" in answer:
            self.csrf = answer["csrf"]
        return status, answer

    def _h(self) -> dict[str, str]:
        return {"Cookie": self.cookie} if self.cookie else {}

    def _cookie_from(self, headers: dict[str, str]) -> None:
        cookie = headers.get("set-cookie") or headers.get("Set-Cookie")
        if cookie:
            assert "HttpOnly" in cookie and "SameSite=strict" in cookie
            self.cookie = cookie.split(";")[0]
