"""A minimal WebSocket client (wsproto over a trio stream): how tests, benchmarks and tools
watch the viewer's live snapshots without a browser."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import trio
from wsproto import ConnectionType, WSConnection
from wsproto.events import (
    AcceptConnection,
    CloseConnection,
    Ping,
    RejectConnection,
    Request,
    TextMessage,
)
from wsproto.extensions import Extension


class WebSocketClosed(Exception):
    """The server closed the socket."""


class WsClient:
    """One WebSocket: `receive_json` the next text message, `send_json`, `aclose`."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.ws = WSConnection(ConnectionType.CLIENT)
        self._text: list[str] = []
        self._pending: list[str] = []
        self._closed: str | None = None  # the close's reason, once it came

    @classmethod
    async def connect(
        cls,
        host: str,
        port: int,
        path: str,
        cookie: str | None = None,
        origin: str | None = None,
        extensions: Sequence[Extension] = (),
    ) -> WsClient:
        """Open the socket at ws://host:port/path (with a session cookie, an Origin header and
        the offer of `extensions`, e.g. permessage-deflate as browsers offer it, if given)."""
        client = cls(await trio.open_tcp_stream(host, port))
        headers = [(b"cookie", cookie.encode())] if cookie else []
        if origin:
            headers.append((b"origin", origin.encode()))
        await client.stream.send_all(
            client.ws.send(
                Request(
                    host=f"{host}:{port}",
                    target=path,
                    extra_headers=headers,
                    extensions=list(extensions),
                )
            )
        )
        while True:
            events = await client._events()
            for index, event in enumerate(events):
                if isinstance(event, AcceptConnection):
                    # The first message may come in the same segment as the handshake.
                    client._queue(events[index + 1 :])
                    return client
                if isinstance(event, RejectConnection):
                    raise WebSocketClosed(f"rejected with {event.status_code}")

    async def _events(self) -> list[Any]:
        data = await self.stream.receive_some(65536)
        if not data:
            raise WebSocketClosed("connection closed")
        self.ws.receive_data(data)
        events = list(self.ws.events())
        for event in events:
            if isinstance(event, Ping):
                await self.stream.send_all(self.ws.send(event.response()))
        return events

    async def receive_json(self) -> Any:
        """The next text message, decoded."""
        return json.loads(await self.receive_text())

    def _queue(self, events: Sequence[Any]) -> None:
        """Keep the text messages of `events`; the close, once the messages before it are
        taken."""
        for event in events:
            if isinstance(event, TextMessage):
                self._text.append(event.data)
                if event.message_finished:
                    self._pending.append("".join(self._text))
                    self._text.clear()
            elif isinstance(event, CloseConnection):
                self._closed = event.reason or "closed"

    async def receive_text(self) -> str:
        """The next text message."""
        while not self._pending:
            if self._closed is not None:
                raise WebSocketClosed(self._closed)
            self._queue(await self._events())
        return self._pending.pop(0)

    async def send_json(self, value: Any) -> None:
        """Send one text message."""
        await self.stream.send_all(self.ws.send(TextMessage(data=json.dumps(value))))

    async def aclose(self) -> None:
        """Close the TCP connection at once (as a departing browser tab may)."""
        await self.stream.aclose()
