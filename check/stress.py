"""The scripted server of items 2 and 5: the server side of a game (or a stretch of one)
written byte by byte as a case asks, so a bot meets packet boundaries, pauses and endings
that a real server produces only by chance (docs/check.md, item 5).

The bytes are the official ones: `protocol.ServerConnection.send` writes every message, and a
case decides only how they are cut into writes (each its own, several in one, one byte each,
cut inside a tag, an attribute or a UTF-8 character) and when they go (a second's pause before
a move request, a slow opponent). The bot's side is read with the same sans-IO connection;
every move is checked with the engine. The scripted server plays the other side with random
legal moves (seeded, never ending the game when it can avoid it) and ends stretches that are
not about the game's end with an aborted result, as the official server does on shutdown.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import secrets
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import trio

from check.isolation import CpuDemand
from engine import GameState, Move, PlayerEntry, Team, game_result
from protocol import GAME_TYPE, NEED_DATA, RemoteProtocolError, ServerConnection
from protocol.events import CloseRequest, Join, JoinPrepared, MovePacket, StreamEnd
from protocol.messages import (
    Joined,
    Left,
    Memento,
    MoveRequest,
    ResultMessage,
    ServerMessage,
    WelcomeMessage,
)

SOFT_TIMEOUT = 2.0
# An answer later than 2 s has lost the game already; a second more tells a slow answer (FAIL
# "slow") from none (FAIL "hang") without waiting for the official 10 s hard timeout.
ANSWER_WAIT = SOFT_TIMEOUT + 1.0
STARTUP_TIMEOUT = 30.0  # launch to <joinPrepared>
EXIT_WAIT = 5.0  # after <left>, as the official client
PIECE_PAUSE = 0.03  # between the pieces of a cut message: separate TCP segments
BYTE_PAUSE = 0.0005
DUPLICATE_WAIT = 0.05  # after each answer, for a second one
STRETCH_MOVES = 4  # bot moves before a stretch ends with an aborted result
ABORTED = "Das Spiel wurde von piranhas-check beendet"  # a stretch's end, not a real result
TAIL_BYTES = 300


# ---- the bot's connection ------------------------------------------------------------------


@dataclass(frozen=True)
class Arrived:
    """A packet from the bot, with the time its last byte arrived."""

    packet: object
    at: float


@dataclass(frozen=True)
class Closed:
    at: float


@dataclass(frozen=True)
class Garbage:
    message: str
    at: float


Incoming = Arrived | Closed | Garbage


class Wire:
    """One bot connection: official bytes out, cut as asked; the bot's packets in, stamped."""

    def __init__(self, stream: trio.abc.Stream) -> None:
        self.stream = stream
        self.connection = ServerConnection()
        self.received = bytearray()
        self.sent = 0
        send, self.incoming = trio.open_memory_channel[Incoming](math.inf)
        self._send_incoming = send
        self.closed = False

    async def read(self) -> None:
        """Feed the bot's bytes to the sans-IO connection (a task of the case's nursery)."""
        while True:
            try:
                data = await self.stream.receive_some(65536)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                data = b""
            now = trio.current_time()
            self.received += data
            del self.received[: max(0, len(self.received) - 4 * TAIL_BYTES)]
            try:
                self.connection.receive_data(bytes(data))
                while True:
                    event = self.connection.next_event()
                    if event is NEED_DATA:
                        break
                    await self._send_incoming.send(Arrived(event, now))
                    if isinstance(event, StreamEnd):
                        break
            except RemoteProtocolError as error:
                eof = getattr(error, "eof", False)
                await self._send_incoming.send(Closed(now) if eof else Garbage(error.message, now))
                return
            if not data:
                await self._send_incoming.send(Closed(now))
                return

    async def next(self, timeout: float) -> Incoming | None:
        with trio.move_on_after(timeout):
            return await self.incoming.receive()
        return None

    def pending(self) -> Incoming | None:
        try:
            return self.incoming.receive_nowait()
        except trio.WouldBlock:
            return None

    async def write(self, pieces: Sequence[bytes], pause: float) -> None:
        for index, piece in enumerate(pieces):
            if index:
                await trio.sleep(pause)
            if not piece:
                continue
            try:
                await self.stream.send_all(piece)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self.closed = True
                return
            self.sent += len(piece)

    def tail(self) -> str:
        return bytes(self.received[-TAIL_BYTES:]).decode("utf-8", errors="replace")


# ---- how a case cuts the bytes -------------------------------------------------------------

Cutter = Callable[[list[bytes]], tuple[list[bytes], float]]


def each_message(messages: list[bytes]) -> tuple[list[bytes], float]:
    """As the official server writes: one write per message."""
    return messages, 0.002


def all_together(messages: list[bytes]) -> tuple[list[bytes], float]:
    return [b"".join(messages)], 0.0


def cut_at(messages: list[bytes], marks: Callable[[bytes], list[int]]) -> tuple[list[bytes], float]:
    pieces = []
    for message in messages:
        at = 0
        for mark in sorted(set(marks(message))):
            if at < mark < len(message):
                pieces.append(message[at:mark])
                at = mark
        pieces.append(message[at:])
    return pieces, PIECE_PAUSE


def inside_tags(message: bytes) -> list[int]:
    """Inside the first two tag names of the message (`<ro|om`, `<da|ta`)."""
    marks = []
    start = 0
    for _ in range(2):
        index = message.find(b"<", start)
        if index < 0:
            break
        marks.append(index + 3)
        start = index + 1
    return marks


def inside_attributes(message: bytes) -> list[int]:
    """Inside attribute values (`roomId="che|ck..."`, `class="mem|ento"`)."""
    marks = []
    for name in (b'roomId="', b'class="', b'color="', b'turn="'):
        index = message.find(name)
        if index >= 0:
            marks.append(index + len(name) + 2)
    return marks


def inside_characters(message: bytes) -> list[int]:
    """Between the bytes of every multi-byte UTF-8 character (`Schwarmgr\\xc3|\\xb6...`)."""
    return [index + 1 for index, byte in enumerate(message) if 0xC2 <= byte <= 0xF4]


def byte_by_byte(messages: list[bytes]) -> tuple[list[bytes], float]:
    return [bytes([b]) for message in messages for b in message], BYTE_PAUSE


# ---- the cases -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Case:
    """One scripted game or stretch."""

    key: str
    title: str
    bot_team: Team = Team.ONE
    start_turn: int = 0  # a position at this turn (from a seeded random game)
    cutter: Cutter = each_message
    cut_until_request: int = 0  # cut only the first N flushes up to a move request (0: all)
    bot_moves: int | None = STRETCH_MOVES  # then an aborted result; None: to the real end
    request_delay: float = 0.0  # pause between a memento and its move request
    opponent_delay: float = 0.0
    end_together: bool = False  # final memento, result and <left> in one write
    join: bool = False  # the bot started without a reservation: <join>
    style: str = "short"


CASES = (
    Case("one-segment", "memento and moveRequest in one TCP segment", cutter=all_together),
    Case("one-segment-two", "the same as the second player", Team.TWO, cutter=all_together),
    Case(
        "byte-by-byte",
        "every byte in its own segment",
        cutter=byte_by_byte,
        cut_until_request=2,
        bot_moves=2,
    ),
    Case("split-tag", "messages cut inside a tag name", cutter=lambda m: cut_at(m, inside_tags)),
    Case(
        "split-attribute",
        "messages cut inside attribute values",
        cutter=lambda m: cut_at(m, inside_attributes),
    ),
    Case(
        "split-utf8",
        "the result cut inside a UTF-8 character (Schwarmgröße)",
        Team.TWO,
        start_turn=57,
        bot_moves=None,
        cutter=lambda m: cut_at(m, inside_characters),
    ),
    Case(
        "official",
        "a game as the official server writes it, from the first move",
        bot_moves=None,
        start_turn=0,
    ),
    Case("round-30", "a game to round 30", start_turn=54, bot_moves=None),
    Case(
        "decided-after-move",
        "the game decided right after the bot's move",
        Team.TWO,
        start_turn=57,
        bot_moves=None,
    ),
    Case(
        "result-left-together",
        "the result and <left/> in one segment",
        Team.TWO,
        start_turn=57,
        bot_moves=None,
        end_together=True,
    ),
    Case(
        "join",
        "a <join/> game (started without a reservation)",
        join=True,
        style="join",
        bot_moves=2,
    ),
    Case(
        "slow-server",
        "a slow server: 1 s pause before each move request",
        request_delay=1.0,
        bot_moves=3,
    ),
)
CASE_KEYS = tuple(case.key for case in CASES)


def position(turn: int, seed: int = 7) -> GameState:
    """A state at `turn` of a seeded random game that avoids ending (for the late cases)."""
    for attempt in range(200):
        rng = random.Random(seed * 1000 + attempt)
        state = GameState.initial(seed + attempt)
        while state.turn < turn and not state.is_over:
            move = opponent_move(state, rng)
            if move is None:
                break
            state = state.apply(move)
        if state.turn == turn and not state.is_over:
            return state
    raise RuntimeError(f"no random game reaches turn {turn}")


def opponent_move(state: GameState, rng: random.Random) -> Move | None:
    """A random legal move that does not end the game when another does not."""
    moves = state.legal_moves()
    if not moves:
        return None
    rng.shuffle(moves)
    for move in moves:
        if not state.apply(move).is_over:
            return move
    return moves[0]


# ---- playing a case ------------------------------------------------------------------------


@dataclass
class Outcome:
    """What happened in one case."""

    ok: bool
    detail: str
    verdict: str = ""  # for item 7: "crash", "hang", "twice", "garbage", "early", "illegal", ...
    joined: bool = False
    startup: float | None = None  # seconds from launch to the join
    move_ms: list[float] = field(default_factory=list)
    # While the opponent thought: the CPU the bot asked for (used plus waited for, in CPUs:
    # a spinning thread asks for one on any machine) and the CPU it got.
    cpu_wait: float | None = None
    cpu_used: float | None = None
    bot_bytes: str = ""
    turn: int | None = None


class Fault(Exception):
    def __init__(self, verdict: str, detail: str) -> None:
        super().__init__(detail)
        self.verdict = verdict
        self.detail = detail


class Game:
    """The scripted server's side of one case on one connection."""

    def __init__(
        self, case: Case, wire: Wire, reservation: str, meter: Callable[[], CpuDemand | None]
    ) -> None:
        self.case = case
        self.wire = wire
        self.reservation = reservation
        self.meter = meter
        self.room = f"check-{secrets.token_hex(4)}"
        self.queue: list[bytes] = []
        self.flushes = 0
        self.rng = random.Random(case.key)
        self.outcome = Outcome(False, "")
        self.outstanding = False
        self.cpu_samples: list[float] = []

    def emit(self, message: ServerMessage) -> None:
        self.queue.append(self.wire.connection.send(message))

    async def flush(self, *, request: bool = False) -> None:
        if not self.queue:
            return
        cut = self.case.cut_until_request == 0 or self.flushes < self.case.cut_until_request
        pieces, pause = (self.case.cutter if cut else each_message)(self.queue)
        self.queue = []
        await self.wire.write(pieces, pause)
        if request:
            self.flushes += 1

    async def quiet(self, seconds: float, what: str) -> None:
        """Wait, and fail if the bot sends a move meanwhile (it has no request)."""
        deadline = trio.current_time() + seconds
        while True:
            left = deadline - trio.current_time()
            if left <= 0:
                return
            incoming = await self.wire.next(left)
            if incoming is None:
                return
            self.unexpected(incoming, what)

    def unexpected(self, incoming: Incoming, what: str) -> None:
        if isinstance(incoming, Arrived) and isinstance(incoming.packet, MovePacket):
            verdict = "early" if "before" in what else "twice"
            raise Fault(verdict, f"sent a move {what}: {incoming.packet.move}")
        if isinstance(incoming, Garbage):
            raise Fault("garbage", f"sent bytes that are no SC protocol: {incoming.message}")
        if isinstance(incoming, Closed):
            raise Fault("crash", f"closed the connection {what}")
        # <close/> or other requests mid-game: not a move; the official server ignores
        # them or answers with an error, the bot still has to move.

    async def play(self, launched_at: float) -> Outcome:
        case = self.case
        first = await self.wire.next(STARTUP_TIMEOUT)
        if first is None:
            raise Fault("silent", f"connected but sent nothing within {STARTUP_TIMEOUT:g} s")
        if isinstance(first, Garbage):
            raise Fault("garbage", f"sent first bytes that are no SC protocol: {first.message}")
        if isinstance(first, Closed):
            raise Fault("crash", "connected and closed again without joining")
        packet = first.packet
        self.outcome.startup = first.at - launched_at
        if case.join:
            if not isinstance(packet, Join):
                raise Fault("join", f'sent {packet} instead of <join gameType="{GAME_TYPE}"/>')
        elif isinstance(packet, Join):
            raise Fault(
                "reservation",
                "sent <join/> instead of <joinPrepared reservationCode=…/>: "
                "the reservation code did not reach it",
            )
        elif not isinstance(packet, JoinPrepared):
            raise Fault("join", f"sent {packet} first, not <joinPrepared/>")
        elif packet.reservation_code != self.reservation:
            raise Fault(
                "reservation",
                f"joined with reservation {packet.reservation_code!r}, "
                f"not the one it was given ({self.reservation!r})",
            )
        self.outcome.joined = True
        state = position(case.start_turn) if case.start_turn else GameState.initial(11)
        team = case.bot_team
        players = [
            PlayerEntry(Team.ONE, "bot" if team is Team.ONE else "check"),
            PlayerEntry(Team.TWO, "bot" if team is Team.TWO else "check"),
        ]
        self.emit(Joined(self.room))
        self.emit(WelcomeMessage(self.room, team))
        moves = 0
        while True:
            self.emit(Memento(self.room, state))
            self.outcome.turn = state.turn
            stretch_over = case.bot_moves is not None and moves >= case.bot_moves
            if state.is_over or stretch_over:
                result = game_result(state, players, aborted=None if state.is_over else ABORTED)
                self.emit(ResultMessage(self.room, result))
                self.emit(Left(self.room))
                if case.end_together:
                    self.queue = [b"".join(self.queue)]
                await self.flush()
                break
            if state.current_team is team:
                if case.request_delay:
                    await self.flush()
                    await self.quiet(case.request_delay, "before the moveRequest came")
                self.emit(MoveRequest(self.room))
                await self.flush(request=True)
                state = await self.bot_move(state)
                moves += 1
            else:
                if case.opponent_delay:
                    await self.flush()
                    await self.measured_wait(case.opponent_delay)
                move = opponent_move(state, self.rng)
                assert move is not None  # a state that is not over has a move
                # A move arriving now was not asked for (the bot answered twice).
                while (incoming := self.wire.pending()) is not None:
                    self.unexpected(incoming, "without a request (a second answer?)")
                state = state.apply(move)
        await self.after_left()
        if self.outcome.detail == "":
            self.outcome.ok = True
            self.outcome.detail = self.summary(moves)
        return self.outcome

    async def bot_move(self, state: GameState) -> GameState:
        asked = trio.current_time()
        while True:
            incoming = await self.wire.next(max(0.0, asked + ANSWER_WAIT - trio.current_time()))
            if incoming is None:
                raise Fault(
                    "hang",
                    f"sent no move within {ANSWER_WAIT:g} s of the moveRequest (turn {state.turn})",
                )
            if isinstance(incoming, Arrived) and isinstance(incoming.packet, MovePacket):
                break
            self.unexpected(incoming, "instead of moving")
        packet = incoming.packet
        took = incoming.at - asked
        self.outcome.move_ms.append(took * 1000)
        if packet.room_id != self.room:
            raise Fault("room", f"moved in room {packet.room_id!r}, not {self.room!r}")
        mistake = state.check_move(packet.move)
        if mistake is not None:
            raise Fault(
                "illegal",
                f"made an illegal move at turn {state.turn}: {packet.move} ({mistake.message})",
            )
        if took > SOFT_TIMEOUT:
            raise Fault(
                "slow",
                f"answered after {took:.2f} s (the contest allows "
                f"{SOFT_TIMEOUT:g} s): the game would be lost",
            )
        # A second answer comes right behind the first: give it the time to arrive, or it
        # would be taken for the answer to the next request.
        await self.quiet(DUPLICATE_WAIT, "without a request (a second answer?)")
        return state.apply(packet.move)

    async def measured_wait(self, seconds: float) -> None:
        """The opponent thinks: the bot has nothing to do; how much CPU does it ask for? Not
        what it got: on a loaded machine a spinning bot gets a fraction of a CPU, but it is
        ready to run all the time (its run-queue wait fills the rest)."""
        await self.quiet(0.2, "without a request (a second answer?)")
        before, started = self.meter(), trio.current_time()
        await self.quiet(seconds - 0.2, "without a request (a second answer?)")
        after, ended = self.meter(), trio.current_time()
        if before is not None and after is not None and ended > started:
            wall = (ended - started) * 1e9
            self.cpu_samples.append(after.wanted_since(before) / wall)
            self.outcome.cpu_wait = max(self.cpu_samples)
            used = (after.cpu_ns - before.cpu_ns) / wall
            self.outcome.cpu_used = max(used, self.outcome.cpu_used or 0.0)

    async def after_left(self) -> None:
        """After <left/>: the bot may close (<close/>, </protocol>, or the socket); a move now
        is one too many."""
        deadline = trio.current_time() + EXIT_WAIT
        while True:
            incoming = await self.wire.next(max(0.0, deadline - trio.current_time()))
            if incoming is None or isinstance(incoming, Closed):
                return
            if isinstance(incoming, Arrived):
                if isinstance(incoming.packet, MovePacket):
                    raise Fault(
                        "twice", f"sent a move after the game had ended: {incoming.packet.move}"
                    )
                if isinstance(incoming.packet, CloseRequest | StreamEnd):
                    continue
            if isinstance(incoming, Garbage):
                raise Fault("garbage", f"sent garbage after the game: {incoming.message}")

    def summary(self, moves: int) -> str:
        times = self.outcome.move_ms
        slowest = f", slowest answer {max(times):.0f} ms" if times else ""
        return f"{moves} moves answered, game to turn {self.outcome.turn}{slowest}"


# ---- the listener --------------------------------------------------------------------------


class ScriptedServer:
    """Listens on a Unix socket (for bots behind a relay: namespace or container) and on a
    loopback TCP port (for bots without a namespace); hands out connections in order."""

    def __init__(self, socket_dir: Path) -> None:
        self.socket_path = socket_dir / "server.sock"
        self.port = 0
        send, self.connections = trio.open_memory_channel[trio.abc.Stream](math.inf)
        self._send = send

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        unix = trio.socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        await unix.bind(str(self.socket_path))
        os.chmod(self.socket_path, 0o666)
        unix.listen(16)
        listeners: list[trio.abc.Listener[trio.abc.Stream]] = [trio.SocketListener(unix)]
        tcp = await trio.open_tcp_listeners(0, host="127.0.0.1")
        self.port = tcp[0].socket.getsockname()[1]
        listeners += tcp

        async def handle(stream: trio.abc.Stream) -> None:
            await self._send.send(stream)
            await trio.sleep_forever()  # the case owns and closes it

        async with trio.open_nursery() as nursery:
            for listener in listeners:
                nursery.start_soon(trio.serve_listeners, handle, [listener])
            task_status.started()

    async def drain(self) -> None:
        """Close connections left over from an earlier case (a bot that connected twice)."""
        while True:
            try:
                stream = self.connections.receive_nowait()
            except trio.WouldBlock:
                return
            await stream.aclose()


PlayerStarter = Callable[[Case, str], Awaitable[object]]


async def run_case(
    server: ScriptedServer,
    case: Case,
    launched_at: float,
    reservation: str,
    exited: Callable[[], int | None],
    meter: Callable[[], CpuDemand | None],
) -> Outcome:
    """Wait for the bot's connection and play `case` on it."""
    stream = None
    with trio.move_on_after(STARTUP_TIMEOUT):
        while stream is None:
            with trio.move_on_after(0.1):
                stream = await server.connections.receive()
            if stream is None and exited() is not None:
                return Outcome(
                    False, f"exited with status {exited()} before connecting", verdict="crash"
                )
    if stream is None:
        return Outcome(False, f"never connected within {STARTUP_TIMEOUT:g} s", verdict="silent")
    wire = Wire(stream)
    game = Game(case, wire, reservation, meter)
    try:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(wire.read)
            try:
                outcome = await game.play(launched_at)
            except Fault as fault:
                outcome = game.outcome
                outcome.ok = False
                outcome.detail = fault.detail
                outcome.verdict = fault.verdict
            nursery.cancel_scope.cancel()
    finally:
        with contextlib.suppress(trio.BrokenResourceError, trio.ClosedResourceError):
            await stream.aclose()
    outcome.bot_bytes = wire.tail()
    return outcome
