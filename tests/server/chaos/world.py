"""The chaos run's settings and shared state: what every client saw (World), one bot's
connection and its rooms (Bot)."""

from __future__ import annotations

import socket
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import trio

from client import ClientSession, ConnectionClosed
from engine import GameResult, GameState, Team
from protocol.events import (
    ClientPacket,
    CloseRequest,
)
from protocol.messages import (
    Joined,
    Left,
    Memento,
    MoveRequest,
    Prepared,
    ResultMessage,
    ServerMessage,
    WelcomeMessage,
)
from tests.helpers.rawclient import RecordingStream

PASSWORD = "chaos-pw"
SOFT_TIMEOUT = 0.2
HARD_TIMEOUT = 0.5
RESERVATION_TTL = 1.5
# Far beyond any run: whether a bot starved by a loaded machine looked idle for a second must
# not decide the test. Idlers check that silence is not punished early; the idle close itself
# is tested on a MockClock (tests/server/test_connection.py).
IDLE_TIMEOUT = 3600.0
MAX_PACKET = 8192
SEND_BUFFER = 64
WAIT = 20.0  # a single expected answer; the overall fail_after is what bounds the test
NAMES = ["", "alice", "Bob Smith", "../..", "a/b\\c", "<&\"'>", "Ünïcødé 🐟", "x" * 120, "."]


# ---------------------------------------------------------------------------- shared state


@dataclass
class World:
    """What the clients share: known rooms, reservation codes, and what they observed."""

    port: int
    stop_spawning: trio.Event = field(default_factory=trio.Event)
    stopping: bool = False  # the server is being stopped: refusals and closes are expected
    rooms: list[str] = field(default_factory=list)
    codes: list[str] = field(default_factory=list)  # fresh reservation codes
    used_codes: list[str] = field(default_factory=list)  # redeemed or refused: never valid again
    welcomed: set[str] = field(default_factory=set)
    results: dict[str, list[GameResult]] = field(default_factory=dict)  # as clients got them
    stats: Counter[str] = field(default_factory=Counter)


class Bot:
    """One TCP client: typed packets out, every server message in (validated as it comes).
    A `client.ClientSession` over a recording stream; the misbehaving kinds break the
    protocol through the session's escape hatch, `send_raw`."""

    def __init__(self, world: World, kind: str, stream: trio.SocketStream) -> None:
        self.world = world
        self.kind = kind
        self.stream = stream
        self.recording = RecordingStream(stream)
        self.session = ClientSession(self.recording)
        self.messages: list[ServerMessage] = []
        self.ended = False  # the server ended the stream (EOF or reset)
        self.joined: list[str] = []
        self.teams: dict[str, Team] = {}
        self.states: dict[str, GameState] = {}
        self.moved: dict[str, int] = {}  # room → turn of the last move sent

    def fresh_request(self, message: ServerMessage) -> bool:
        """A move request for a turn this bot has not moved in yet (an admin's step while
        a request is pending repeats it, officially)."""
        if not isinstance(message, MoveRequest):
            return False
        return self.moved.get(message.room_id) != self.states[message.room_id].turn

    @classmethod
    async def connect(cls, world: World, kind: str, *, receive_buffer: int | None = None) -> Bot:
        world.stats[kind] += 1
        if receive_buffer is None:
            stream = await trio.open_tcp_stream("127.0.0.1", world.port)
        else:
            # A tiny receive window: a client that does not read fills the server's buffers.
            sock = trio.socket.socket()
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
            await sock.connect(("127.0.0.1", world.port))
            stream = trio.SocketStream(sock)
        return cls(world, kind, stream)

    def __repr__(self) -> str:
        return f"<{self.kind} bot, last messages {self.messages[-4:]!r}>"

    @property
    def raw(self) -> bytearray:
        """Everything the server sent, verbatim."""
        return self.recording.raw

    async def send(self, *packets: ClientPacket) -> bool:
        """False if the connection is gone."""
        try:
            await self.session.send(*packets)
        except ConnectionClosed:
            return False
        return True

    async def send_raw(self, data: bytes) -> bool:
        """False if the connection is gone."""
        try:
            await self.session.send_raw(data)
        except ConnectionClosed:
            return False
        return True

    async def receive(self, timeout: float = WAIT) -> ServerMessage | None:
        """The next message, or None once the server ended the stream."""
        try:
            with trio.fail_after(timeout):
                message = await self.session.receive()
        except trio.TooSlowError:
            raise AssertionError(f"{self!r}: no message from the server for {timeout} s") from None
        except ConnectionClosed as closed:
            assert not closed.protocol_error, f"{self!r}: the server sent broken XML: {closed}"
            self.ended = True
            return None
        self._note(message)
        return message

    async def until(self, done: Callable[[ServerMessage], bool]) -> ServerMessage | None:
        while True:
            message = await self.receive()
            if message is None or done(message):
                return message

    def _note(self, message: ServerMessage) -> None:
        self.messages.append(message)
        world = self.world
        if isinstance(message, Joined):
            self.joined.append(message.room_id)
            world.rooms.append(message.room_id)
        elif isinstance(message, WelcomeMessage):
            world.welcomed.add(message.room_id)
            self.teams[message.room_id] = message.team
        elif isinstance(message, Memento):
            self.states[message.room_id] = message.state
        elif isinstance(message, ResultMessage):
            world.results.setdefault(message.room_id, []).append(message.result)
        elif isinstance(message, Prepared):
            world.rooms.append(message.room_id)

    @property
    def cleanly_ended(self) -> bool:
        return self.raw.endswith(b"\n</protocol>") or self.raw == b"<protocol/>"

    async def close_politely(self) -> None:
        """`<close/>`, then everything up to the server's `</protocol>`."""
        if await self.send(CloseRequest()):
            while await self.receive() is not None:
                pass
            assert self.cleanly_ended, f"{self!r}: stream ended without </protocol>"

    async def abort(self) -> None:
        await trio.aclose_forcefully(self.stream)

    def check_rooms(self) -> None:
        """Each room this bot joined and stayed in: result, then <left>, then nothing more."""
        for room_id in set(self.joined):
            # A connection in both slots of a room gets everything once per slot.
            copies = self.joined.count(room_id)
            of_room = [m for m in self.messages if getattr(m, "room_id", None) == room_id]
            kinds = [type(m) for m in of_room]
            assert kinds.count(ResultMessage) == copies, f"{self!r}: room {room_id}: {kinds}"
            assert kinds.count(Left) == copies and kinds[-1] is Left, f"{self!r}: {kinds}"
            assert kinds.index(ResultMessage) < kinds.index(Left)
            if WelcomeMessage in kinds:
                assert kinds.count(WelcomeMessage) == copies
                assert kinds.index(WelcomeMessage) < kinds.index(ResultMessage)
        for message in self.messages:
            message_room = getattr(message, "room_id", None)
            assert message_room is None or message_room in self.joined, (
                f"{self!r}: foreign {message!r}"
            )
