"""Live snapshots to many WebSocket viewers: one rendering and one frame per update, however
many watch.

Rule: a `Broadcast` (one per watched game, and one for the lobby) ticks at most `rate` times a
second while anyone watches; on a tick after a change it renders the snapshot once — the JSON,
the envelope with the server's clock, the WebSocket frame (deflated once more for viewers that
negotiated permessage-deflate) — and puts that one `Snapshot` into every viewer's slot. A slot
holds one snapshot, the latest: a viewer whose socket is slow skips states (latest state wins)
and delays nobody else, and its task wakes only when its slot is filled. On an HTTP/1.1
connection the frame's bytes go straight to the viewer's TCP stream (hypercorn's own send lock
keeps them whole between its frames); elsewhere (HTTP/2) through the ASGI send, per viewer.
"""

from __future__ import annotations

import os
import struct
import time
import zlib
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import trio

from web.hub import Change

# The scope's per-connection state key under which `web.listen` puts hypercorn's TCPServer.
RAW_CONNECTION = "piranhas.raw_connection"
_OPEN = (trio.BrokenResourceError, trio.ClosedResourceError)


def envelope(payload: str) -> str:
    """The message of one snapshot: the server's wall clock lets the page show running clocks
    without clock skew."""
    return f'{{"now":{time.time():.3f},"data":{payload}}}'


def text_frame(payload: bytes, *, compressed: bool = False) -> bytes:
    """One unfragmented, unmasked (server to client) WebSocket text frame (RFC 6455, section
    5.2); `compressed`: the payload is permessage-deflate data (RSV1 set, RFC 7692, section 6)."""
    first = 0xC1 if compressed else 0x81
    size = len(payload)
    if size < 126:
        header = struct.pack("!BB", first, size)
    elif size < 1 << 16:
        header = struct.pack("!BBH", first, 126, size)
    else:
        header = struct.pack("!BBQ", first, 127, size)
    return header + payload


def deflate(payload: bytes, window_bits: int) -> bytes:
    """`payload` as one permessage-deflate message from a fresh compressor (no context taken
    over, so the same bytes suit every viewer; a client keeping its context may: RFC 7692,
    section 7.1.1.1), the final empty block's four bytes cut off (section 7.2.1)."""
    compressor = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -window_bits)
    return (compressor.compress(payload) + compressor.flush(zlib.Z_SYNC_FLUSH))[:-4]


class Snapshot:
    """One rendered snapshot: its text and its frames, each built once on first use."""

    __slots__ = ("_frames", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._frames: dict[int, bytes] = {}  # window bits (0: not compressed) -> frame

    def frame(self, window_bits: int) -> bytes:
        """The frame for a viewer with that deflate window (0: none negotiated)."""
        frame = self._frames.get(window_bits)
        if frame is None:
            data = self.text.encode()
            frame = self._frames[window_bits] = (
                text_frame(deflate(data, window_bits), compressed=True)
                if window_bits
                else text_frame(data)
            )
        return frame


class RawSocket:
    """A viewer's HTTP/1.1 connection, written to directly with whole frames."""

    def __init__(self, stream: trio.SocketStream, lock: trio.Lock, window_bits: int) -> None:
        self.stream = stream
        self.lock = lock
        self.window_bits = window_bits  # the negotiated deflate window, 0 without deflate

    async def send(self, snapshot: Snapshot) -> None:
        """Write the snapshot's frame; trio.BrokenResourceError (or an OSError) when the viewer
        is gone.

        Usually at once: when hypercorn's send lock is free, the frame goes to the socket in
        one non-blocking write without yielding to the scheduler, and only what the socket did
        not take (a slow viewer) waits for it in `send_all`, still under the lock. Through
        `send_all` alone every snapshot cost each viewer's task two more trips through trio's
        scheduler (the lock's and the send's checkpoints): most of the web process's CPU per
        snapshot, taken from the players' CPU (`bench.viewer`)."""
        frame = snapshot.frame(self.window_bits)
        lock = self.lock  # hypercorn's: its own frames (pongs, the close) stay whole
        try:
            lock.acquire_nowait()
        except trio.WouldBlock:
            async with lock:
                await self.stream.send_all(frame)
            return
        try:
            # Nothing yields between reading the descriptor and writing: a socket closed by
            # another task shows as -1 here, never as a reused number.
            descriptor = self.stream.socket.fileno()
            if descriptor < 0:
                raise trio.ClosedResourceError("the viewer's connection is closed")
            try:
                written = os.write(descriptor, frame)
            except BlockingIOError:
                written = 0
            if written < len(frame):
                await self.stream.send_all(memoryview(frame)[written:])
        finally:
            lock.release()


def raw_socket(scope: Mapping[str, Any]) -> RawSocket | None:
    """Direct access to an accepted WebSocket's connection, or None where there is none (HTTP/2
    shares a connection between streams; an extension other than permessage-deflate; a
    hypercorn whose insides differ: then the ASGI send is used)."""
    server = scope.get("state", {}).get(RAW_CONNECTION)
    if server is None or scope.get("http_version") != "1.1":
        return None
    try:
        from hypercorn.protocol.h11 import H11Protocol
        from hypercorn.protocol.ws_stream import WSStream
        from wsproto.extensions import PerMessageDeflate

        protocol = server.protocol.protocol
        if not isinstance(protocol, H11Protocol) or not isinstance(protocol.stream, WSStream):
            return None
        extensions = protocol.stream.connection._proto.extensions
        stream, lock = server.stream, server.send_lock
    except (AttributeError, ImportError):
        return None
    if not isinstance(stream, trio.SocketStream) or not isinstance(lock, trio.Lock):
        return None  # TLS (an SSLStream): its own framing
    window_bits = 0
    for extension in extensions:
        if not isinstance(extension, PerMessageDeflate):
            return None
        window_bits = extension.server_max_window_bits
    return RawSocket(stream, lock, window_bits)


class Viewer:
    """One viewer's slot: the latest snapshot it has not sent yet."""

    __slots__ = ("_ready", "pending", "version")

    def __init__(self, version: int) -> None:
        self.pending: Snapshot | None = None
        self.version = version  # of the latest snapshot handed to it
        self._ready = trio.Event()

    def offer(self, snapshot: Snapshot, version: int) -> None:
        """Replace what is waiting (latest state wins) and wake the viewer's task."""
        if version != self.version:
            self.pending, self.version = snapshot, version
            self._ready.set()

    async def next(self) -> Snapshot:
        """The latest snapshot, once there is one."""
        while self.pending is None:
            await self._ready.wait()
            self._ready = trio.Event()
        snapshot, self.pending = self.pending, None
        return snapshot


class Broadcast:
    """One source's snapshots to its viewers (module docstring)."""

    def __init__(
        self,
        change: Change,
        payload: Callable[[], str],
        rate: float,
        spawn: Callable[[Callable[[], Awaitable[None]]], None],
    ) -> None:
        self.change = change
        self.payload = payload
        self.interval = 1.0 / rate
        self.viewers: set[Viewer] = set()
        self.renders = 0  # snapshots rendered (the tests count them)
        self._spawn = spawn
        self._ticking = False

    def render(self) -> Snapshot:
        """The latest state, stamped with the clock of now (the payload is the hub's, built
        once per version)."""
        self.renders += 1
        return Snapshot(envelope(self.payload()))

    async def serve(self, send: Callable[[Snapshot], Awaitable[None]]) -> None:
        """Send this source's snapshots with `send` until cancelled: the current one at once,
        then one per tick that changed it (skipping those `send` was too slow for)."""
        viewer = Viewer(self.change.version)
        self.viewers.add(viewer)
        if not self._ticking:
            self._ticking = True
            self._spawn(self._tick)
        try:
            await send(self.render())  # a newcomer's own: its clock is now
            while True:
                await send(await viewer.next())
        finally:
            self.viewers.discard(viewer)

    async def _tick(self) -> None:
        try:
            version = self.change.version
            while self.viewers:
                await trio.sleep(self.interval)
                if self.change.version != version:
                    version = self.change.version
                    snapshot = self.render()
                    for viewer in self.viewers:
                        viewer.offer(snapshot, version)
        finally:
            self._ticking = False
