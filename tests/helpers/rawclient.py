"""A raw protocol test client: typed packets out, typed messages in, and every received byte
kept for exact-bytes checks. Works over TCP or any trio stream (memory streams in tests).

Built on `client.ClientSession` (the project's one client session) over a `RecordingStream`
that keeps the bytes; what it adds is for tests only: exact bytes out (`send_raw`, the
session's escape hatch), a strict `expect` (the next message must be of that kind, where the
session's skips others) and `expect_closed` (the server's stream must end with
`</protocol>`).
"""

from __future__ import annotations

from typing import TypeVar

import trio

from client import ClientSession, ConnectionClosed
from protocol.events import ClientPacket
from protocol.messages import ServerMessage

M = TypeVar("M")

TIMEOUT = 5.0

# The server ended its stream, closed the connection, or broke the protocol (`reason`).
ServerClosed = ConnectionClosed


class RecordingStream(trio.abc.Stream):
    """A stream that keeps every byte it receives (`raw`) and whether it ended (`eof`)."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.raw = bytearray()
        self.eof = False

    async def send_all(self, data: bytes | bytearray | memoryview) -> None:
        """Send through the wrapped stream."""
        await self.stream.send_all(data)

    async def wait_send_all_might_not_block(self) -> None:
        """As the wrapped stream."""
        await self.stream.wait_send_all_might_not_block()

    async def receive_some(self, max_bytes: int | None = None) -> bytes | bytearray:
        """Receive from the wrapped stream, keeping a copy."""
        data = await self.stream.receive_some(max_bytes)
        if not data:
            self.eof = True
        self.raw += data
        return data

    async def aclose(self) -> None:
        """Close the wrapped stream."""
        await self.stream.aclose()


class RawClient:
    """One connection for a test; `session` is the ClientSession underneath."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream  # the connection itself: bytes read here are not recorded
        self.recording = RecordingStream(stream)
        self.session = ClientSession(self.recording)
        self.received: list[ServerMessage] = []

    @classmethod
    async def connect(cls, port: int, host: str = "127.0.0.1") -> RawClient:
        """A new client connected over TCP."""
        return cls(await trio.open_tcp_stream(host, port))

    @property
    def raw(self) -> bytearray:
        """Everything the server sent, verbatim."""
        return self.recording.raw

    @property
    def eof(self) -> bool:
        """Whether the server's side of the stream has ended."""
        return self.recording.eof

    async def send(self, *packets: ClientPacket) -> None:
        """`packets` in one write."""
        await self.session.send(*packets)

    async def send_raw(self, data: bytes) -> None:
        """`data` exactly as given."""
        await self.session.send_raw(data)

    async def receive(self, timeout: float = TIMEOUT) -> ServerMessage:
        """The next message; raises ServerClosed when the server ended the stream."""
        with trio.fail_after(timeout):
            message = await self.session.receive()
        self.received.append(message)
        return message

    async def expect(self, kind: type[M], timeout: float = TIMEOUT) -> M:
        """The next message, which must be a `kind`."""
        message = await self.receive(timeout)
        assert isinstance(message, kind), f"expected {kind.__name__}, got {message!r}"
        return message

    async def receive_until(self, kind: type[M], timeout: float = TIMEOUT) -> list[ServerMessage]:
        """Messages up to and including the first `kind`."""
        messages = []
        with trio.fail_after(timeout):
            while True:
                message = await self.receive()
                messages.append(message)
                if isinstance(message, kind):
                    return messages

    async def expect_closed(self, timeout: float = TIMEOUT) -> None:
        """Read until the server closes the connection; its stream must end with
        `</protocol>` (or be `<protocol/>` if it never sent anything)."""
        with trio.fail_after(timeout):
            while not self.eof:
                try:
                    await self.recording.receive_some(65536)
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    break
        assert self.raw.endswith(b"\n</protocol>") or self.raw == b"<protocol/>", bytes(
            self.raw[-200:]
        )

    async def aclose(self) -> None:
        """Close the connection (no goodbye: tests say it themselves when they mean to)."""
        await self.stream.aclose()
