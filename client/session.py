"""One SC client session over trio TCP: thin I/O around the sans-IO `protocol.ClientConnection`.

The session pulls bytes only when a caller asks for the next message, so the server's stream
is never read further ahead than one `receive_some` (a bounded buffer, and natural back
pressure: a slow reader slows the server's writes to it, not our memory). A caller that must
wait for the server and for something else at once (the runner waits for player processes
too) runs `receive()` in a task of its own.

Errors are few and say whose fault they are:

- `ConnectionClosed`: the stream ended or broke (`reason` says how, `protocol_error`
  whether the server's bytes were at fault); every later call raises it again.
- `ServerRefused`: the server answered a request with an `<errorpacket>` (`packet` holds it).
- `trio.TooSlowError`: a `timeout` passed before the awaited message came.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import TypeVar

import trio

from engine import GameResult, GameState, Move
from protocol import GAME_TYPE, ClientConnection, NeedData, RemoteProtocolError
from protocol.events import (
    Authenticate,
    CancelRequest,
    ClientPacket,
    CloseRequest,
    Join,
    JoinPrepared,
    JoinRoom,
    MovePacket,
    Observe,
    PauseRequest,
    Prepare,
    SlotDescriptor,
    StepRequest,
    StreamEnd,
)
from protocol.limits import ProtocolLimits
from protocol.messages import (
    ErrorPacket,
    Joined,
    Left,
    Memento,
    MoveRequest,
    Observed,
    Prepared,
    ResultMessage,
    ServerMessage,
)

RECEIVE_SIZE = 65536  # bytes read per receive_some: the most we buffer ahead of the caller
DEFAULT_TIMEOUT = 15.0  # for the server's answer to a request (prepare, observe, join)
GOODBYE_TIMEOUT = 2.0  # for saying goodbye while closing

M = TypeVar("M", bound=ServerMessage)


class ConnectionClosed(Exception):
    """The connection to the server ended or broke; `reason` says how. `protocol_error`:
    the server's bytes broke the protocol (bad XML, an unknown packet) rather than just
    ending: the server's fault, worth a bug report."""

    def __init__(self, reason: str, *, protocol_error: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.protocol_error = protocol_error


class ServerRefused(Exception):
    """The server answered with an `<errorpacket>`: a refused request."""

    def __init__(self, packet: ErrorPacket) -> None:
        super().__init__(packet.message)
        self.packet = packet


class ClientSession:
    """One connection to a game server, speaking as a client (player, admin or observer).

    Create it with `open_session(host, port)` (an async context manager that closes the
    connection politely), or wrap a connected stream: `ClientSession(stream)`.
    """

    def __init__(self, stream: trio.abc.Stream, *, limits: ProtocolLimits | None = None) -> None:
        self.stream = stream
        self.connection = ClientConnection(limits)
        self._closed: ConnectionClosed | None = None
        self._send_lock = trio.Lock()  # one packet's bytes are never interleaved with another's

    # ------------------------------------------------------------------ sending

    async def send(self, *packets: ClientPacket) -> None:
        """Send `packets` in one write, so the server reads them together (StreamEnd closes
        our document). Raises ConnectionClosed."""
        if self._closed is not None:
            raise self._closed
        await self._write(b"".join(self.connection.send(packet) for packet in packets))

    async def send_raw(self, data: bytes) -> None:
        """The escape hatch: write `data` exactly as given, for tests and benchmarks that
        must break the protocol (a malformed or unrequested packet). The session's own
        bookkeeping does not see these bytes: a first `send` after them still opens the
        document with `<protocol>`. Raises ConnectionClosed."""
        if self._closed is not None:
            raise self._closed
        await self._write(data)

    async def _write(self, data: bytes) -> None:
        # Uncontended, the bytes go out without a scheduler yield first (send_all still
        # checkpoints): a move leaves the moment it is sent, not after other tasks ran.
        try:
            self._send_lock.acquire_nowait()
        except trio.WouldBlock:
            await self._send_lock.acquire()
        try:
            await self.stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError) as error:
            raise self._close(f"lost the connection: {error or type(error).__name__}") from None
        finally:
            self._send_lock.release()

    async def authenticate(self, password: str) -> None:
        """Log in as administrator. The server answers only a wrong password (with an
        errorpacket): the next `expect` raises it as ServerRefused."""
        await self.send(Authenticate(password))

    async def prepare(
        self,
        slots: Sequence[SlotDescriptor],
        *,
        pause: bool = False,
        seed: int | None = None,
        state: GameState | None = None,
        game_type: str = GAME_TYPE,
        timeout: float = DEFAULT_TIMEOUT,
    ) -> Prepared:
        """Prepare a room (admin); returns its id and one reservation code per reserved slot.
        `seed` asks for the start board `GameState.initial(seed)`, `state` for a start
        position (extensions of this server, docs/server.md; a refused position raises as any
        errorpacket does)."""
        await self.send(Prepare(game_type, pause, tuple(slots), seed, state))
        return await self.expect(Prepared, timeout=timeout)

    async def observe(self, room_id: str, *, timeout: float = DEFAULT_TIMEOUT) -> Observed:
        """Observe a room (admin): its mementos and result come to this session from now on."""
        await self.send(Observe(room_id))
        return await self.expect(Observed, timeout=timeout)

    async def join(
        self, game_type: str | None = GAME_TYPE, *, timeout: float = DEFAULT_TIMEOUT
    ) -> Joined:
        """Join any open room, or a new one (`<join>`)."""
        await self.send(Join(game_type))
        return await self.expect(Joined, timeout=timeout)

    async def join_prepared(self, code: str, *, timeout: float = DEFAULT_TIMEOUT) -> Joined:
        """Take a reserved slot (`<joinPrepared>`)."""
        await self.send(JoinPrepared(code))
        return await self.expect(Joined, timeout=timeout)

    async def join_room(self, room_id: str, *, timeout: float = DEFAULT_TIMEOUT) -> Joined:
        """Join a given room (`<joinRoom>`)."""
        await self.send(JoinRoom(room_id))
        return await self.expect(Joined, timeout=timeout)

    async def send_move(self, room_id: str, move: Move) -> None:
        """Send a move for a room."""
        await self.send(MovePacket(room_id, move))

    async def pause(self, room_id: str, paused: bool = True) -> None:
        """Pause or resume a room (admin)."""
        await self.send(PauseRequest(room_id, paused))

    async def step(self, room_id: str, *, forced: bool = False) -> None:
        """Let a paused room play one move (admin)."""
        await self.send(StepRequest(room_id, forced))

    async def cancel(self, room_id: str) -> None:
        """End a room at once (admin)."""
        await self.send(CancelRequest(room_id))

    # ------------------------------------------------------------------ receiving

    async def receive(self) -> ServerMessage:
        """The server's next message (an ErrorPacket too). Raises ConnectionClosed."""
        if self._closed is not None:
            raise self._closed
        while True:
            try:
                event = self.connection.next_event()
            except RemoteProtocolError as error:
                if error.eof:
                    raise self._close("the server closed the connection") from None
                raise self._close(error.message, protocol_error=True) from None
            if not isinstance(event, NeedData):
                return event
            try:
                data = await self.stream.receive_some(RECEIVE_SIZE)
            except (trio.BrokenResourceError, trio.ClosedResourceError) as error:
                raise self._close(f"lost the connection: {error or type(error).__name__}") from None
            self.connection.receive_data(bytes(data))

    async def receive_until(
        self,
        predicate: Callable[[ServerMessage], bool],
        *,
        timeout: float = math.inf,
        refuse: bool = True,
    ) -> ServerMessage:
        """Skip messages until one matches `predicate` and return it. With `refuse`, an
        ErrorPacket raises ServerRefused. Raises trio.TooSlowError after `timeout` s."""
        with trio.fail_after(timeout):
            while True:
                message = await self.receive()
                if refuse and isinstance(message, ErrorPacket):
                    raise ServerRefused(message)
                if predicate(message):
                    return message

    async def expect(self, kind: type[M], *, timeout: float = DEFAULT_TIMEOUT) -> M:
        """The next message of type `kind` (others are skipped; an errorpacket raises
        ServerRefused)."""
        message = await self.receive_until(lambda m: isinstance(m, kind), timeout=timeout)
        assert isinstance(message, kind)
        return message

    async def play(self, choose: Callable[[GameState], Awaitable[Move]]) -> GameResult | None:
        """Play the game this session joined: answer every move request with
        `await choose(state)` (the state of the last memento), return the game's result once
        `<left>` came (None if the server sent none). A move request before any memento is
        the server's protocol error: ConnectionClosed."""
        state: GameState | None = None
        result: GameResult | None = None
        while True:
            message = await self.receive()
            if isinstance(message, Memento):
                state = message.state
            elif isinstance(message, MoveRequest):
                if state is None:
                    raise self._close("a move request before any memento", protocol_error=True)
                await self.send_move(message.room_id, await choose(state))
            elif isinstance(message, ResultMessage):
                result = message.result
            elif isinstance(message, Left):
                return result

    # ------------------------------------------------------------------ closing

    @property
    def closed(self) -> bool:
        """Whether the connection has ended (by us or by the server)."""
        return self._closed is not None

    async def aclose(self) -> None:
        """Say goodbye like the official clients (`<close/>`, then `</protocol>`), so the
        server logs a disconnect rather than a lost connection; then close the stream.
        Best effort and bounded: a dead server does not hold us up."""
        # Shielded: closing also happens in cleanups after a cancellation (Ctrl+C).
        with trio.CancelScope(shield=True):
            if self._closed is None:
                with trio.move_on_after(GOODBYE_TIMEOUT), contextlib.suppress(ConnectionClosed):
                    await self.send(CloseRequest())
                    await self.send(StreamEnd())
                self._close("closed by us")
            await self.stream.aclose()

    def _close(self, reason: str, *, protocol_error: bool = False) -> ConnectionClosed:
        if self._closed is None:
            self._closed = ConnectionClosed(reason, protocol_error=protocol_error)
        return self._closed


@contextlib.asynccontextmanager
async def open_session(
    host: str,
    port: int,
    *,
    password: str | None = None,
    limits: ProtocolLimits | None = None,
    connect_timeout: float = DEFAULT_TIMEOUT,
) -> AsyncIterator[ClientSession]:
    """Connect to a game server; with `password`, log in as administrator. The session is
    closed politely on exit. Raises ConnectionClosed when the server cannot be reached."""
    try:
        with trio.fail_after(connect_timeout):
            stream = await trio.open_tcp_stream(host, port)
    except (OSError, trio.TooSlowError) as error:
        reason = str(error) or type(error).__name__
        raise ConnectionClosed(f"cannot connect to {host}:{port}: {reason}") from None
    session = ClientSession(stream, limits=limits)
    try:
        if password is not None:
            await session.authenticate(password)
        yield session
    finally:
        await session.aclose()
