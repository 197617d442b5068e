"""The pieces of `bench.attack` that its web scenarios (`bench.attack_web`) use too: the
protocol socket of the probe and the command that starts the probe. A module of its own, so
that `bench.attack` (which runs the web scenarios) and `bench.attack_web` (which uses these)
import it instead of each other."""

from __future__ import annotations

import argparse
import sys

import trio

from protocol import ClientConnection, NeedData
from protocol.messages import ServerMessage


class Client:
    """A socket speaking the protocol through ClientConnection. Not `client.ClientSession`:
    the descriptor scenarios open the probe's connections early (`<protocol>` now, the first
    packet when the attack has taken the rest), which the session does not do."""

    def __init__(self, stream: trio.SocketStream) -> None:
        self.stream = stream
        self.connection = ClientConnection()
        self.said_protocol = False  # `<protocol>` already sent by `open_early`

    @classmethod
    async def connect(cls, port: int) -> Client:
        return cls(await trio.open_tcp_stream("127.0.0.1", port))

    async def open_early(self) -> None:
        """Say `<protocol>` now (within the server's protocolDeadline) and the first packet
        later: a connection held open for a game that starts after an attacker took the rest."""
        await self.stream.send_all(b"<protocol>")
        self.said_protocol = True

    async def send(self, packet: object) -> None:
        data = self.connection.send(packet)  # type: ignore[arg-type]
        if self.said_protocol:
            data, self.said_protocol = data.removeprefix(b"<protocol>"), False
        await self.stream.send_all(data)

    async def receive(self) -> ServerMessage | None:
        """The next message, or None at the end of the stream."""
        while True:
            try:
                event = self.connection.next_event()
            except Exception:
                return None
            if not isinstance(event, NeedData):
                return event
            data = await self.stream.receive_some(65536)
            self.connection.receive_data(data)


def probe_command(args: argparse.Namespace, port: int, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "bench.attack",
        "--probe",
        str(port),
        "--probe-seconds",
        str(args.probe_seconds),
        *extra,
    ]
