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

    async def post_announcing(self, path: str, length: int) -> int:
        """POST that announces a `length`-byte body and sends none of it: the status.

        A body over its bound is refused before it is read, and the server closes; a client
        still writing megabytes then gets a broken pipe instead of the answer (urllib does),
        so the bound is tested the way it is enforced: by the announced length.
        """
        host, _, port = self.base.removeprefix("http://").partition(":")
        headers = {"X-CSRF-Token": self.csrf, "Origin": self.base, **self._h()}
        head = f"POST {path} HTTP/1.1\r\nHost: {host}:{port}\r\nContent-Length: {length}\r\n"
        head += "".join(f"{name}: {value}\r\n" for name, value in headers.items())
        stream = await trio.open_tcp_stream(host, int(port))
        async with stream:
            await stream.send_all(head.encode() + b"\r\n")
            answer = b""
            while b"\r\n" not in answer and (chunk := await stream.receive_some(65536)):
                answer += chunk
        return int(answer.split(b" ", 2)[1])

    def _h(self) -> dict[str, str]:
        return {"Cookie": self.cookie} if self.cookie else {}

    def _cookie_from(self, headers: dict[str, str]) -> None:
        cookie = headers.get("set-cookie") or headers.get("Set-Cookie")
        if cookie:
            assert "HttpOnly" in cookie and "SameSite=strict" in cookie
            self.cookie = cookie.split(";")[0]
