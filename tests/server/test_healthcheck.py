"""The protocol-speaking health check: against scripted peers and against the real server."""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import pytest
import trio

from server import healthcheck
from tests.helpers.server import running_server

pytestmark = pytest.mark.timeout(30)

Handler = Callable[[trio.SocketStream], Awaitable[None]]


async def _serve_once(nursery: trio.Nursery, handler: Handler) -> int:
    """Start a loopback listener that runs ``handler`` per connection; return its port."""
    listeners = await nursery.start(partial(trio.serve_tcp, handler, 0, host="127.0.0.1"))
    port: int = listeners[0].socket.getsockname()[1]
    return port


async def _read_until(stream: trio.SocketStream, marker: bytes) -> bytes:
    data = b""
    while marker not in data:
        chunk = await stream.receive_some()
        if not chunk:
            break
        data += chunk
    return data


def _official_answer(request: bytes) -> bytes:
    """What the official server sends for a joinRoom to an unknown room (§1.2, §3.9)."""
    room_id = request.split(b'roomId="')[1].split(b'"')[0]
    return (
        b'<protocol>\n  <errorpacket message="sc.api.plugins.exceptions.GameRoomException: '
        b"Couldn&apos;t find a room with id " + room_id + b'">\n'
        b'    <originalRequest class="joinRoom" roomId="' + room_id + b'"/>\n'
        b"  </errorpacket>"
    )


def _free_port() -> int:
    """A port nobody listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def _check(port: int, timeout: float = 5.0) -> int:
    return await trio.to_thread.run_sync(
        healthcheck.main, ["--host", "127.0.0.1", "--port", str(port), "--timeout", str(timeout)]
    )


async def test_healthy_when_answered_like_the_official_server() -> None:
    seen: list[bytes] = []

    async def handler(stream: trio.SocketStream) -> None:
        request = await _read_until(stream, b"/>")
        seen.append(request)
        await stream.send_all(_official_answer(request))
        # The check says goodbye with <close/> and half-closes; answer like the server does.
        rest = await _read_until(stream, b"<close/>")
        seen.append(rest)
        await stream.send_all(b"\n</protocol>")

    async with trio.open_nursery() as nursery:
        port = await _serve_once(nursery, handler)
        packet = await trio.to_thread.run_sync(healthcheck.probe, "127.0.0.1", port, 5.0)
        assert await _check(port) == 0
        nursery.cancel_scope.cancel()
    assert packet.startswith("<errorpacket ") and packet.endswith("</errorpacket>")
    assert seen[0].startswith(b'<protocol><joinRoom roomId="healthcheck-')
    assert seen[1].startswith(b"<close/>")


async def test_unhealthy_fast_on_a_dead_port() -> None:
    port = _free_port()
    started = time.monotonic()
    assert await _check(port) == 1
    assert time.monotonic() - started < 2.0


async def test_unhealthy_within_the_timeout_when_the_server_is_silent() -> None:
    async def handler(stream: trio.SocketStream) -> None:
        await trio.sleep_forever()

    async with trio.open_nursery() as nursery:
        port = await _serve_once(nursery, handler)
        started = time.monotonic()
        assert await _check(port, timeout=0.5) == 1
        elapsed = time.monotonic() - started
        nursery.cancel_scope.cancel()
    assert 0.4 < elapsed < 3.0


@pytest.mark.parametrize(
    "answer",
    [
        b"",  # closes at once
        b"HTTP/1.1 400 Bad Request\r\n\r\n",  # some other service on the port
        b'<protocol>\n  <joined roomId="x"/>',  # answers, but not with an error
        # An errorpacket that is not the answer to this probe.
        b'<protocol>\n  <errorpacket message="x">\n    <originalRequest class="join"/>\n'
        b"  </errorpacket>",
        # The right packet without the stream's root element.
        b'<errorpacket message="ROOM"><originalRequest class="joinRoom" roomId="ROOM"/>'
        b"</errorpacket>",
    ],
)
async def test_unhealthy_on_a_wrong_answer(answer: bytes) -> None:
    async def handler(stream: trio.SocketStream) -> None:
        request = await _read_until(stream, b"/>")
        room_id = request.split(b'roomId="')[1].split(b'"')[0]
        if answer:
            await stream.send_all(answer.replace(b"ROOM", room_id))

    async with trio.open_nursery() as nursery:
        port = await _serve_once(nursery, handler)
        assert await _check(port, timeout=1.0) == 1
        nursery.cancel_scope.cancel()


async def test_command_line_entry_point_on_a_dead_port() -> None:
    port = _free_port()
    with trio.fail_after(20):
        proc = await trio.run_process(
            [sys.executable, "-m", "server.healthcheck", "--port", str(port), "--timeout", "2"],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert proc.returncode == 1
    assert b"unhealthy" in proc.stderr


async def test_healthy_against_the_real_server(tmp_path: Path) -> None:
    async with running_server(replay_dir=tmp_path / "replays") as server:
        port = server.port
        with trio.fail_after(10):
            assert await _check(port) == 0
            # An errorpacket (not <joined>) means no room was opened for the probe, and the
            # next probe is answered the same way.
            first = await trio.to_thread.run_sync(healthcheck.probe, "127.0.0.1", port, 5.0)
            second = await trio.to_thread.run_sync(healthcheck.probe, "127.0.0.1", port, 5.0)
        assert "Couldn&apos;t find a room with id healthcheck-" in first
        assert first.split("healthcheck-")[0] == second.split("healthcheck-")[0]
        with trio.fail_after(20):
            proc = await trio.run_process(
                [sys.executable, "-m", "server.healthcheck", "--port", str(port)],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
            )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith(b"healthy")
