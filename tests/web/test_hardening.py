"""The web viewer holds like the game port (issue 17): bounded listings, bodies, sockets,
uploads and sessions; no link followed out of the replay directory; behind a proxy; the play
page open on loopback."""

from __future__ import annotations

import gzip
import os
import time
from pathlib import Path
from typing import Any

import pytest
import structlog
import trio
from wsproto.events import BytesMessage, TextMessage

from protocol.messages import Memento
from protocol.replay import write_replay
from server.config import Settings
from web import app as web_app
from web import auth as web_auth
from web import http as web_http
from web import replays as web_replays
from web.auth import Sessions
from web.sc import admin_request
from web.wsclient import WebSocketClosed, WsClient

from .conftest import Running
from .httpclient import Browser
from .test_web import random_states


@pytest.fixture
def settings(tmp_path: Path, request: pytest.FixtureRequest) -> Settings:
    extra: dict[str, Any] = getattr(request, "param", {})
    return Settings(
        port=0, replay_dir=tmp_path / "replays", save_replay=True, password="secret-pw", **extra
    )


def host_port(running: Running) -> tuple[str, int]:
    host, port = running.url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


async def raw(running: Running, data: bytes, *, then_wait: float = 5.0) -> bytes:
    """Send `data` on a fresh connection and read until the server closes or `then_wait`."""
    host, port = host_port(running)
    stream = await trio.open_tcp_stream(host, port)
    await stream.send_all(data)
    answer = b""
    with trio.move_on_after(then_wait):
        while chunk := await stream.receive_some(65536):
            answer += chunk
            if b"\r\n\r\n" in answer and b'"}' in answer:
                break
    await stream.aclose()
    return answer


# ---------------------------------------------------------------------- 1, 8: replay directory


async def test_the_replay_listing_comes_in_bounded_pages_from_one_scan(running: Running) -> None:
    replay_dir = running.viewer.settings.replay_dir
    replay_dir.mkdir(parents=True, exist_ok=True)
    for index in range(250):
        path = replay_dir / f"replay_{index:03d}.xml"
        path.write_bytes(b"<protocol/>")
        os.utime(path, (1000 + index, 1000 + index))
    browser = Browser(running.url)
    with trio.fail_after(20):
        _status, first = await browser.get("/api/replays")
        assert len(first["replays"]) == 100 and first["total"] == 250 and first["next"] == 100
        assert first["replays"][0]["name"] == "replay_249.xml"  # newest first
        _status, last = await browser.get("/api/replays?offset=200&limit=100000")
        assert len(last["replays"]) == 50 and last["next"] is None
        _status, big = await browser.get("/api/replays?limit=100000")
        assert len(big["replays"]) == web_replays.MAX_PAGE or big["total"] < web_replays.MAX_PAGE
        # Asked again at once: the same scan answers (a loop of listings costs one scan).
        (replay_dir / "replay_new.xml").write_bytes(b"<protocol/>")
        assert (await browser.get("/api/replays"))[1]["total"] == 250
        status, _ = await browser.get("/api/replays?offset=x")
        assert status == 400


async def test_links_and_special_files_in_the_replay_dir_are_never_followed(
    running: Running, tmp_path: Path
) -> None:
    replay_dir = running.viewer.settings.replay_dir
    replay_dir.mkdir(parents=True, exist_ok=True)
    secret = tmp_path / "secret.txt"
    secret.write_text("root:x:0:0:root:/root:/bin/bash SECRET")
    (replay_dir / "passwd.xml").symlink_to(secret)
    (replay_dir / "environ.xml").symlink_to("/proc/self/environ")
    os.mkfifo(replay_dir / "fifo.xml")
    (replay_dir / "notes.xml").write_text("root:x:0:0:root SECRET")
    browser = Browser(running.url)
    with trio.fail_after(20):
        _status, body = await browser.get("/api/replays")
        assert [entry["name"] for entry in body["replays"]] == ["notes.xml"]
        for name in ("passwd.xml", "environ.xml", "fifo.xml"):
            status, answer = await browser.get(f"/api/replays/{name}")
            assert status == 404, name
            assert "SECRET" not in str(answer) and "PATH" not in str(answer)
        status, answer = await browser.get("/api/replays/notes.xml")
        assert status == 400 and "not a replay" in answer["error"]
        assert "root" not in answer["error"] and "SECRET" not in answer["error"]


# ---------------------------------------------------------------------- 3, 7: request bodies


async def test_a_body_over_its_bound_is_refused_before_it_is_read(running: Running) -> None:
    with trio.fail_after(20):
        # Answered at once, 300 MB announced and 1 KB sent: nothing waits for the rest.
        for path, status in ((b"/api/login", b"403"), (b"/api/replays/upload", b"413")):
            answer = await raw(
                running,
                b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: 300000000\r\n\r\n" % path
                + b"x" * 1000,
            )
            assert answer.startswith(b"HTTP/1.1 " + status), answer[:100]
        # Chunked, no length given: cut at the bound.
        chunk = b"x" * 65536
        answer = await raw(
            running,
            b"POST /api/replays/upload HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
            + (b"%x\r\n%s\r\n" % (len(chunk), chunk)) * 20,
        )
        assert answer.startswith(b"HTTP/1.1 413")


async def test_a_body_sent_a_byte_at_a_time_is_timed_out(
    running: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(web_http, "BODY_SECONDS", 0.5)
    host, port = host_port(running)
    with trio.fail_after(20):
        stream = await trio.open_tcp_stream(host, port)
        await stream.send_all(
            b"POST /api/replays/upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n"
        )
        started = trio.current_time()
        answer = b""
        while b"408" not in answer:
            await stream.send_all(b"x")
            with trio.move_on_after(0.2):
                answer += await stream.receive_some(65536)
        assert answer.startswith(b"HTTP/1.1 408") and trio.current_time() - started < 3
        await stream.aclose()


async def test_an_aborted_upload_logs_one_line_and_no_traceback(
    running: Running, caplog: pytest.LogCaptureFixture
) -> None:
    host, port = host_port(running)
    with trio.fail_after(20), structlog.testing.capture_logs() as logs:
        stream = await trio.open_tcp_stream(host, port)
        await stream.send_all(
            b"POST /api/replays/upload HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\nabc"
        )
        await trio.sleep(0.2)
        await stream.aclose()
        while not any("left before" in entry["event"] for entry in logs):
            await trio.sleep(0.05)
        await trio.sleep(0.3)
    assert sum("left before" in entry["event"] for entry in logs) == 1
    assert not [record for record in caplog.records if record.exc_info]


# ---------------------------------------------------------------------- 5: sessions


def test_anonymous_visitors_never_displace_a_logged_in_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(web_auth, "MAX_SESSIONS", 1000)
    sessions = Sessions("pw")
    admin = sessions.login(sessions.create(), "pw")
    assert admin is not None
    first = sessions.create()
    for _ in range(1050):
        sessions.create()
    assert sessions.get(admin.token) is admin and admin.admin
    assert sessions.get(first.token) is None  # the oldest anonymous one made room


# ---------------------------------------------------------------------- 2, 10: WebSockets


async def test_a_large_websocket_message_closes_the_socket_unbuffered(running: Running) -> None:
    host, port = host_port(running)
    with trio.fail_after(20):
        ws = await WsClient.connect(host, port, "/ws/lobby")
        await ws.receive_json()
        # One unfinished fragmented message, far over the limit.
        for _ in range(8):
            data = ws.ws.send(TextMessage(data="x" * 4096, message_finished=False))
            try:
                await ws.stream.send_all(data)
            except trio.BrokenResourceError:
                break
        with pytest.raises((WebSocketClosed, trio.BrokenResourceError)):
            while True:
                await ws.receive_text()
        await ws.aclose()
        # The viewer counted the socket out again.
        while running.viewer.viewers:
            await trio.sleep(0.02)


@pytest.mark.parametrize(
    "settings",
    [{"web_max_connections_per_address": 2, "per_address_limit_on_loopback": True}],
    indirect=True,
)
async def test_sockets_per_address_are_capped_and_given_back(running: Running) -> None:
    host, port = host_port(running)
    with trio.fail_after(20):
        first = await WsClient.connect(host, port, "/ws/lobby")
        second = await WsClient.connect(host, port, "/ws/lobby")
        with pytest.raises((WebSocketClosed, OSError, trio.BrokenResourceError)):
            third = await WsClient.connect(host, port, "/ws/lobby")
            await third.receive_text()
        await first.aclose()
        while running.viewer.admission.total > 1:
            await trio.sleep(0.02)
        again = await WsClient.connect(host, port, "/ws/lobby")
        assert "rooms" in (await again.receive_json())["data"]
        await again.aclose()
        await second.aclose()


async def test_a_binary_frame_on_the_play_socket_closes_it_cleanly(
    running: Running, caplog: pytest.LogCaptureFixture
) -> None:
    host, port = host_port(running)
    with trio.fail_after(20):
        browser = Browser(running.url)
        await browser.session()
        status, body = await browser.post("/api/play", {"name": "Ada"})
        assert status == 200
        ws = await WsClient.connect(
            host, port, f"/ws/play/{body['token']}", cookie=browser.cookie, origin=running.url
        )
        await ws.receive_json()
        await ws.stream.send_all(ws.ws.send(BytesMessage(data=b"\x00\x01")))
        with pytest.raises(WebSocketClosed):
            while True:
                await ws.receive_text()
        await ws.aclose()
    assert not [record for record in caplog.records if record.exc_info]


# ---------------------------------------------------------------------- 6: uploads


async def test_a_gzip_bomb_costs_bounded_work_and_parsers_are_capped(
    running: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    browser = Browser(running.url)
    with trio.fail_after(30):
        bomb = gzip.compress(b" " * (20 * 1024 * 1024))  # 20 KB on the wire
        started = time.monotonic()
        status, body = await browser.post("/api/replays/upload", bomb)
        assert status == 400 and "uncompressed" in body["error"]
        assert time.monotonic() - started < 2
        # Parsers at once are capped: beyond the cap an upload is refused at once.
        monkeypatch.setattr(web_replays, "parser_slots", trio.Semaphore(1))
        real = web_replays.replay_json

        def slow(data: bytes) -> str:
            time.sleep(1.0)
            return real(data)

        monkeypatch.setattr(web_replays, "replay_json", slow)
        data = write_replay("room", [Memento("room", state) for state in random_states(5, 3)])
        statuses: list[int] = []

        async def upload() -> None:
            statuses.append((await browser.post("/api/replays/upload", data))[0])

        async with trio.open_nursery() as nursery:
            nursery.start_soon(upload)
            await trio.sleep(0.3)
            nursery.start_soon(upload)
        assert sorted(statuses) == [200, 503]


# ---------------------------------------------------------------------- 9: reverse proxy


@pytest.mark.parametrize("settings", [{"web_trusted_proxies": ("127.0.0.1",)}], indirect=True)
async def test_behind_a_trusted_https_proxy_cookies_are_secure_and_origins_https(
    running: Running,
) -> None:
    with trio.fail_after(20):
        browser = Browser(running.url)
        host = running.url.removeprefix("http://")
        answer = await raw(
            running,
            f"GET /api/session HTTP/1.1\r\nHost: {host}\r\nX-Forwarded-Proto: https\r\n"
            "X-Forwarded-For: 203.0.113.7\r\nConnection: close\r\n\r\n".encode(),
        )
        cookie_line = next(
            line for line in answer.split(b"\r\n") if line.lower().startswith(b"set-cookie")
        )
        assert b"Secure" in cookie_line
        browser.cookie = cookie_line.split(b":", 1)[1].split(b";")[0].strip().decode()
        _status, session = await browser.get("/api/session")
        browser.csrf = session["csrf"]
        # The browser's Origin is https://host: accepted with the forwarded scheme only.
        status, _ = await browser.post(
            "/api/admin/prepare", {}, Origin=f"https://{host}", **{"X-Forwarded-Proto": "https"}
        )
        assert status == 401  # past the Origin check: only the login is missing
        status, _ = await browser.post("/api/admin/prepare", {}, Origin=f"https://{host}")
        assert status == 403
        # Others may reach the viewer through the proxy: playing needs a login again.
        status, _body = await browser.post(
            "/api/play", {}, Origin=f"https://{host}", **{"X-Forwarded-Proto": "https"}
        )
        assert status == 401


async def test_forwarded_headers_from_anyone_else_are_ignored(running: Running) -> None:
    host = running.url.removeprefix("http://")
    answer = await raw(
        running,
        f"GET /api/session HTTP/1.1\r\nHost: {host}\r\nX-Forwarded-Proto: https\r\n"
        "Connection: close\r\n\r\n".encode(),
    )
    cookie_line = next(
        line for line in answer.split(b"\r\n") if line.lower().startswith(b"set-cookie")
    )
    assert b"Secure" not in cookie_line


# ---------------------------------------------------------------------- 12: open play


async def test_on_a_loopback_viewer_a_visitor_plays_without_the_password_bounded(
    running: Running,
) -> None:
    with trio.fail_after(20):
        browser = Browser(running.url)
        await browser.session()
        _status, session = await browser.get("/api/session")
        assert session["play"] is True and session["admin"] is False
        for _ in range(2):
            assert (await browser.post("/api/play", {"name": "Ada"}))[0] == 200
        status, body = await browser.post("/api/play", {"name": "Ada"})
        assert status == 429 and "at most 2" in body["error"]
        # Prepare and the other admin actions still need the login.
        assert (await browser.post("/api/admin/prepare", {}))[0] == 401


# ---------------------------------------------------------------------- 4: one lockout


@pytest.mark.parametrize(
    "settings",
    [{"login_failures": 3, "login_lockout": 60.0, "login_failure_delay": 0.0}],
    indirect=True,
)
async def test_web_logins_share_the_admin_ports_lockout(
    running: Running, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(web_app, "LOGIN_FAILURE_DELAY", 0.0)
    with trio.fail_after(20):
        browser = Browser(running.url)
        await browser.session()
        for _ in range(3):
            assert (await browser.post("/api/login", {"password": "guess"}))[0] == 403
        # Locked out: the right password is refused without a look, on both ports.
        status, body = await browser.post("/api/login", {"password": "secret-pw"})
        assert status == 429 and "try again" in body["error"]
        reply = await admin_request(running.port, "secret-pw", [])
        assert any("Too many failed logins" in text for text in reply.errors)
