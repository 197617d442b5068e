"""The ladder site's tests: a site on the real LadderStore (SQLite) served on loopback, and
a client that keeps cookies and the pages' CSRF token like a browser (urllib in a worker
thread, redirects not followed so a test sees them)."""

from __future__ import annotations

import http.cookiejar
import io
import json
import re
import secrets
import urllib.error
import urllib.parse
import urllib.request
import zipfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trio
from argon2 import PasswordHasher
from argon2.profiles import CHEAPEST

from ladder.site import sessions
from ladder.site.app import LadderSite, create_app
from ladder.site.server import serve_site
from ladder.site.sessions import hash_password
from ladder.store import LadderStore

PASSWORD = "correct horse battery"
# Hashes as the site makes them, at the cheapest cost (a default hash is ~0.3 s of a core).
sessions.HASHER = PasswordHasher.from_parameters(CHEAPEST)
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


@dataclass
class Answer:
    """One HTTP answer."""

    status: int
    body: bytes
    headers: dict[str, str]

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class Client:
    """A browser-like client of the site: cookies, the last page's CSRF token."""

    def __init__(self, base: str) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(
            urllib.request.HTTPCookieProcessor(self.jar), _NoRedirects()
        )
        self.csrf = ""

    def _open(self, request: urllib.request.Request) -> Answer:
        try:
            with self.opener.open(request, timeout=20) as response:
                answer = Answer(response.status, response.read(), dict(response.headers))
        except urllib.error.HTTPError as failure:
            answer = Answer(failure.code, failure.read(), dict(failure.headers))
        found = (
            CSRF.search(answer.text) if "html" in answer.headers.get("content-type", "") else None
        )
        if found:
            self.csrf = found[1]
        return answer

    def request(
        self,
        path: str,
        data: bytes | None = None,
        headers: dict[str, str] | None = None,
        method: str | None = None,
    ) -> Answer:
        request = urllib.request.Request(
            self.base + path, data=data, headers=headers or {}, method=method
        )
        return self._open(request)

    async def get(self, path: str, headers: dict[str, str] | None = None) -> Answer:
        return await trio.to_thread.run_sync(lambda: self.request(path, headers=headers))

    async def post(
        self,
        path: str,
        fields: dict[str, str] | None = None,
        files: dict[str, tuple[str, bytes]] | None = None,
        headers: dict[str, str] | None = None,
        *,
        csrf: bool = True,
    ) -> Answer:
        """A form POST (multipart with `files`), with the CSRF token unless `csrf=False`."""
        fields = dict(fields or {})
        if csrf:
            fields.setdefault("csrf", self.csrf)
        body, content_type = encode_form(fields, files)
        all_headers = {"Content-Type": content_type, "Origin": self.base, **(headers or {})}
        return await trio.to_thread.run_sync(lambda: self.request(path, body, all_headers, "POST"))

    async def post_json(
        self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> Answer:
        """A JSON POST (the API's)."""
        data = json.dumps(body).encode()
        all_headers = {"Content-Type": "application/json", **(headers or {})}
        return await trio.to_thread.run_sync(lambda: self.request(path, data, all_headers, "POST"))


def encode_form(
    fields: dict[str, str], files: dict[str, tuple[str, bytes]] | None = None
) -> tuple[bytes, str]:
    """An urlencoded form, or a multipart one when there are files."""
    if not files:
        return urllib.parse.urlencode(fields).encode(), "application/x-www-form-urlencoded"
    boundary = secrets.token_hex(12)
    parts: list[bytes] = []
    for name, value in fields.items():
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n'.encode()
            + f"{value}\r\n".encode()
        )
    for name, (filename, data) in files.items():
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; '
            f'filename="{filename}"\r\nContent-Type: application/zip\r\n\r\n'.encode()
            + data
            + b"\r\n"
        )
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def zip_bytes(files: dict[str, str | bytes]) -> bytes:
    """A ZIP of `files` (name -> content), start.sh executable."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, content in files.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o100000 | (0o755 if name.endswith(".sh") else 0o644)) << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, content)
    return buffer.getvalue()


@dataclass
class Site:
    """A running site and a store connection of the test's own."""

    url: str
    site: LadderSite
    store: LadderStore
    data_dir: Path

    def client(self) -> Client:
        return Client(self.url)

    def team_with_member(self, team: str, username: str) -> tuple[int, int]:
        """A team and a member of it (through an invite, as the site makes them)."""
        team_id = self.store.create_team(team)
        token = self.store.create_invite(team_id, by="test")
        member = self.store.accept_invite(token, username, hash_password(PASSWORD))
        return team_id, member


@asynccontextmanager
async def running_site(data_dir: Path, **options: Any) -> AsyncIterator[Site]:
    """The site on 127.0.0.1 (a free port) until the block ends."""
    database = str(data_dir / "ladder.sqlite")
    store = LadderStore.open(database)
    site = create_app(lambda: LadderStore.open(database), data_dir, **options)
    try:
        async with trio.open_nursery() as nursery:
            url = await nursery.start(serve_site, site, "127.0.0.1", 0)
            yield Site(url, site, store, data_dir)
            nursery.cancel_scope.cancel()
    finally:
        site.close()
        store.close()


async def sign_in(client: Client, username: str, password: str = PASSWORD) -> Answer:
    """Sign in through the form (the login page first, for its CSRF token)."""
    await client.get("/login")
    return await client.post("/login", {"username": username, "password": password})
