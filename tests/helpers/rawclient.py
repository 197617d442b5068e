"""A raw protocol test client: typed packets out, typed messages in, and every received byte
kept for exact-bytes checks. Works over TCP or any trio stream (memory streams in tests)."""

from __future__ import annotations

from typing import TypeVar

import trio

from protocol import NEED_DATA, ClientConnection, RemoteProtocolError
from protocol.events import ClientPacket
from protocol.messages import ServerMessage

M = TypeVar("M")

TIMEOUT = 5.0


class ServerClosed(Exception):
    """The server ended its stream or closed the connection."""


class RawClient:
    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.protocol = ClientConnection()
        self.raw = bytearray()  # everything the server sent, verbatim
        self.received: list[ServerMessage] = []
        self.eof = False

    @classmethod
    async def connect(cls, port: int, host: str = "127.0.0.1") -> RawClient:
        return cls(await trio.open_tcp_stream(host, port))

    async def send(self, *packets: ClientPacket) -> None:
        await self.stream.send_all(b"".join(self.protocol.send(packet) for packet in packets))

    async def send_raw(self, data: bytes) -> None:
        await self.stream.send_all(data)

    async def _read(self) -> None:
        data = await self.stream.receive_some(65536)
        if not data:
            self.eof = True
        self.raw += data
        self.protocol.receive_data(bytes(data))

    async def receive(self, timeout: float = TIMEOUT) -> ServerMessage:
        """The next message; raises ServerClosed when the server ended the stream."""
        with trio.fail_after(timeout):
            while True:
                try:
                    event = self.protocol.next_event()
                except RemoteProtocolError as error:
                    raise ServerClosed(error.message) from None
                if event is not NEED_DATA:
                    assert not isinstance(event, type(NEED_DATA))
                    self.received.append(event)
                    return event
                await self._read()

    async def expect(self, kind: type[M], timeout: float = TIMEOUT) -> M:
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
                    await self._read()
                except trio.BrokenResourceError:
                    break
        assert self.raw.endswith(b"\n</protocol>") or self.raw == b"<protocol/>", bytes(
            self.raw[-200:]
        )

    async def aclose(self) -> None:
        await self.stream.aclose()
