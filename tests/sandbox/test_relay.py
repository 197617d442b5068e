"""The relay script (sandbox/relay.py) on the host, without Docker: it forwards a TCP
connection on loopback to a Unix socket byte for byte in both directions, passes a half-close
on, serves several connections at once and says when it is ready."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import trio

from sandbox.launcher import RELAY_READY, RELAY_SCRIPT

pytestmark = pytest.mark.timeout(30)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


async def echo_upper(stream: trio.SocketStream) -> None:
    """A stand-in game server: answers every chunk in upper case; on end of input it says
    goodbye and closes."""
    # A client that closed without a goodbye (the second one below) is no error.
    with contextlib.suppress(trio.BrokenResourceError):
        async with stream:
            async for chunk in stream:
                await stream.send_all(chunk.upper())
            await stream.send_all(b"</PROTOCOL>")


async def read_until(stream: trio.SocketStream, marker: bytes) -> bytes:
    data = b""
    while marker not in data:
        chunk = await stream.receive_some()
        if not chunk:
            break
        data += chunk
    return data


async def test_the_relay_forwards_to_the_unix_socket(tmp_path: Path) -> None:
    path = tmp_path / "server.sock"
    listener = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    await listener.bind(str(path))
    listener.listen()
    port = free_port()
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(trio.serve_listeners, echo_upper, [trio.SocketListener(listener)])
            relay = await trio.lowlevel.open_process(
                [sys.executable, str(RELAY_SCRIPT), str(path), str(port)],
                stdout=subprocess.PIPE,
            )
            try:
                assert relay.stdout is not None
                ready = await relay.stdout.receive_some()
                assert RELAY_READY.encode() in ready
                first = await trio.open_tcp_stream("127.0.0.1", port)
                second = await trio.open_tcp_stream("127.0.0.1", port)
                await first.send_all(b"<protocol><join/>")
                await second.send_all(b"<protocol><other/>")
                assert await read_until(second, b"<OTHER/>") == b"<PROTOCOL><OTHER/>"
                assert await read_until(first, b"<JOIN/>") == b"<PROTOCOL><JOIN/>"
                # Our half-close reaches the server, whose goodbye and close come back.
                await first.send_eof()
                assert await read_until(first, b"never") == b"</PROTOCOL>"
                await first.aclose()
                await second.aclose()
            finally:
                relay.kill()
                await relay.wait()
            nursery.cancel_scope.cancel()
