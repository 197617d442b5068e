"""The web viewer as an SC client of its own game server (loopback TCP): admin requests and
human players. It uses the same wire protocol as any external tool or bot.

Written on `protocol.ClientConnection` directly; the shared `client/` session can replace
`ScClient` once it exists.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import structlog
import trio

from engine import GameResult, GameState, InvalidMoveError, Move, Team
from protocol import NEED_DATA, ClientConnection, RemoteProtocolError
from protocol.events import Authenticate, ClientPacket, CloseRequest, JoinPrepared, MovePacket
from protocol.messages import (
    ErrorPacket,
    Joined,
    Left,
    Memento,
    MoveRequest,
    Prepared,
    ResultMessage,
    RoomError,
    ServerMessage,
    WelcomeMessage,
)
from web.hub import Change

log = structlog.get_logger("web.sc")

ADMIN_TIMEOUT = 10.0


class ScClient:
    """One SC connection: send packets, receive server messages (None once it ended)."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.protocol = ClientConnection()

    @classmethod
    async def connect(cls, port: int, host: str = "127.0.0.1") -> ScClient:
        """Open a TCP connection to the game server."""
        return cls(await trio.open_tcp_stream(host, port))

    async def send(self, *packets: ClientPacket) -> None:
        """Write `packets` in one go."""
        await self.stream.send_all(b"".join(self.protocol.send(packet) for packet in packets))

    async def receive(self) -> ServerMessage | None:
        """The next message; None when the server closed the stream."""
        while True:
            try:
                event = self.protocol.next_event()
            except RemoteProtocolError as error:
                if error.eof:
                    return None
                raise
            if event is not NEED_DATA:
                return event
            try:
                data = await self.stream.receive_some(65536)
            except trio.BrokenResourceError:
                data = b""
            self.protocol.receive_data(bytes(data))

    async def aclose(self) -> None:
        """Close the stream."""
        await self.stream.aclose()


@dataclass
class AdminReply:
    """What the server answered to an admin request: `<prepared>` and error messages."""

    prepared: list[Prepared] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


async def admin_request(
    port: int, password: str | None, packets: Sequence[ClientPacket]
) -> AdminReply:
    """Authenticate and send `packets` on a fresh loopback connection, then `<close/>`; collect
    the answers until the server closes it. A wrong password shows in `errors`."""
    reply = AdminReply()
    with trio.fail_after(ADMIN_TIMEOUT):
        client = await ScClient.connect(port)
        try:
            await client.send(Authenticate(password), *packets, CloseRequest())
            while (message := await client.receive()) is not None:
                if isinstance(message, Prepared):
                    reply.prepared.append(message)
                elif isinstance(message, ErrorPacket):
                    reply.errors.append(message.message)
        finally:
            await client.aclose()
    return reply


class HumanPlayer:
    """A person in a slot of a room: an SC client that moves when the page says so.

    `run` joins with a reservation and follows the game; the page reads `state`, `my_turn`,
    `result` and calls `move`. `change` wakes the page's socket on every update."""

    def __init__(self, token: str, reservation: str, owner: str) -> None:
        self.token = token
        self.reservation = reservation
        self.owner = owner  # the browser session that may see and move
        self.room_id: str | None = None
        self.team: Team | None = None
        self.state: GameState | None = None
        self.previous: GameState | None = None  # the state before `state` (for the last move)
        self.my_turn = False
        self.requested_at = 0.0  # wall clock of the current move request
        self.result: GameResult | None = None
        self.errors: list[str] = []
        self.ended = False
        self.change = Change()
        self._client: ScClient | None = None

    async def run(self, port: int) -> None:
        """Play until the game ends or the connection breaks."""
        try:
            client = self._client = await ScClient.connect(port)
            await client.send(JoinPrepared(self.reservation))
            while (message := await client.receive()) is not None:
                self._on(message)
                self.change.bump()
                if isinstance(message, Left):
                    break
            await client.send(CloseRequest())
        except (OSError, trio.BrokenResourceError, RemoteProtocolError) as error:
            self.errors.append(f"connection to the game server failed: {error}")
        finally:
            self.ended = True
            self.my_turn = False
            self.change.bump()
            if self._client is not None:
                await self._client.aclose()

    def _on(self, message: ServerMessage) -> None:
        if isinstance(message, Joined):
            self.room_id = message.room_id
        elif isinstance(message, WelcomeMessage):
            self.team = message.team
        elif isinstance(message, Memento):
            if self.state is None or message.state.turn != self.state.turn:
                self.previous = self.state
            self.state = message.state
        elif isinstance(message, MoveRequest):
            self.my_turn = True
            self.requested_at = time.time()
        elif isinstance(message, ResultMessage):
            self.result = message.result
            self.my_turn = False
        elif isinstance(message, (RoomError, ErrorPacket)):
            self.errors.append(message.message)

    async def move(self, move: Move) -> str | None:
        """Send `move` if it is this player's turn and legal; else say why not."""
        if not self.my_turn or self.state is None or self._client is None or self.room_id is None:
            return "it is not your turn"
        try:
            self.state.apply(move)
        except InvalidMoveError as error:
            return str(error)
        self.my_turn = False
        self.change.bump()
        await self._client.send(MovePacket(self.room_id, move))
        return None
