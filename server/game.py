"""A room's game: every transition of one room, in one place (docs/protocol.md §4, §5, §6).

The rule. A room is in one of five phases (`Room.phase`); only the methods of `Room` below
move it, each on one event, and nothing else writes its status, pause flag or pending request:

    phase           event                                  next phase, and what is sent
    --------------  -------------------------------------  ------------------------------------
    WAITING         the last slot is filled (the lobby),   start: welcomeMessage to each
                    or a forced <step> with both filled    player, then `next`
    WAITING         a forced <step> with a slot empty,     OVER (cancel: an empty slot is
                    <cancel>                               LEFT(NOT_CONNECTED))
    WAITING         the reservation time ran out           OVER ("expired")
    WAITING         <pause p>                              WAITING; the game starts paused if p
    `next`          (after the start and after each move)  memento to observers, and to the
                                                           players unless paused; game over →
                                                           OVER; else unless paused →
                                                           AWAITING_MOVE; paused → PAUSED
    AWAITING_MOVE   the requested move, legal and in time  `next`
    AWAITING_MOVE   it came after the soft timeout         OVER (SOFT_TIMEOUT, move not applied)
    AWAITING_MOVE   no move by the hard timeout            OVER (HARD_TIMEOUT)
    AWAITING_MOVE   an illegal move                        OVER (RULE_VIOLATION, error to the
                                                           mover and observers)
    AWAITING_MOVE   <pause true>                           AWAITING_MOVE; PAUSED after the move
    AWAITING_MOVE   <step> (paused)                        ignored: no second request (not
                                                           official, docs/protocol.md §5.4)
    PAUSED          <step>                                 AWAITING_MOVE: memento to everyone,
                                                           moveRequest
    PAUSED          <pause false>                          as <step>, then not paused
    RUNNING         <pause false> while a move is awaited  AWAITING_MOVE (the move's `next`
                                                           goes on unpaused)
    not OVER        a move out of turn or not requested    OVER (PROCESS_VIOLATION, error to
                                                           the mover; cancel)
    not OVER        a player's connection ends             OVER (LEFT(cause); cancel)
    not OVER        <cancel>; wall-clock limit; shutdown   OVER (the last two: aborted, no winner)
    OVER            anything                               OVER (ignored)

On OVER the result goes to the players, then the observers, and the room hands its
`FinishedGame` to `on_over` (the lobby records it, then removes the room). RUNNING is the
instant between a move and its `next`: no event sees it, except the unpause above (a paused
flag cleared while a move is awaited).

Everything runs on the trio thread inside one lobby handler or timer: each transition is
atomic. The room reaches its players and observers only through `Peer`.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

import trio

from engine import (
    GameState,
    InvalidMoveError,
    Move,
    PlayerEntry,
    Team,
    Violation,
    ViolationKind,
    game_result,
)
from protocol.messages import (
    Left,
    Memento,
    MoveRequest,
    Paused,
    ResultMessage,
    RoomError,
    ServerMessage,
    WelcomeMessage,
)
from server.config import Settings
from server.feed import NoFeed, ObserverFeed, RoomPlayer
from server.logs import PreparedLine, get_logger
from server.recorder import FinishedGame
from server.timers import Timer, Timers

log = get_logger("server.lobby")

MAX_SLOTS = 2

# 1.5 * 2**52: a float in [0, 2**51) plus this is rounded to a whole number (ulp 1 there).
_WHOLE = 6755399441055744.0


def move_milliseconds(elapsed: float) -> float:
    """`round(elapsed * 1000, 3)` (a move's time in ms as the log line and the results have
    it) by float arithmetic: the builtin's correctly rounded decimal conversion is ~3k
    instructions, once a move. `t` is `x * 1000` rounded to a whole number; it is the
    correctly rounded number of thousandths of `x` unless `x * 1000`'s own rounding (at most
    6.2e-5 below 1e12) could have moved it across a half, and then `t / 1000` (an exact
    whole number divided, rounded once) is the float nearest `t` thousandths: what round
    gives. Anything else (near a half, not above 0 (the sign of a zero), large, inf, NaN)
    goes to round itself."""
    x = elapsed * 1000
    y = x * 1000.0
    t = (y + _WHOLE) - _WHOLE
    d = y - t  # exact (Sterbenz): y and t are within a half of each other
    if 0.0 < y < 1e12 and -0.4999 < d < 0.4999:
        return t / 1000.0
    return round(x, 3)


# The official Move.toString of the moves logged, by (x, y, direction name): the tuple the
# room keeps of each move anyway, hashed instead of formatting the text (~3k instructions,
# once a move). Only applied moves are logged: bounded by the boards' squares; cleared if full.
_MOVE_TEXTS: dict[tuple[int, int, str], str] = {}
_MOVE_TEXTS_SIZE = 4096


def _move_text(key: tuple[int, int, str], move: Move) -> str:
    """`str(move)`, kept under `key` (the move's x, y and direction name)."""
    text = str(move)
    if type(move) is Move:  # (a subclass may have its own text: not kept)
        if len(_MOVE_TEXTS) >= _MOVE_TEXTS_SIZE:
            _MOVE_TEXTS.clear()  # (threads: a lost entry is only made again)
        _MOVE_TEXTS[key] = text
    return text


class DisconnectCause(enum.StrEnum):
    """Why a connection ended: the official server's DisconnectCause names (§6.4), which a
    LEFT violation carries as its detail (a StrEnum, so it is that text wherever a str goes)."""

    RECEIVED_DISCONNECT = "RECEIVED_DISCONNECT"  # the client said <close/>
    LOST_CONNECTION = "LOST_CONNECTION"  # the stream ended, broke, or the client stopped reading
    PROTOCOL_ERROR = "PROTOCOL_ERROR"  # the client sent what the protocol does not allow
    NOT_CONNECTED = "NOT_CONNECTED"  # a slot nobody ever joined
    TIMEOUT = "TIMEOUT"  # idle, or a deadline of the connection passed
    UNKNOWN = "UNKNOWN"  # a bug of ours: it costs only this connection
    INITIATED_DISCONNECT = "INITIATED_DISCONNECT"  # the server closed it (shutdown)


class Peer(Protocol):
    """What the lobby and the rooms need from a client connection. Both calls return at once."""

    @property
    def name(self) -> str:
        """Short identification for logs (address and a connection number)."""
        ...

    def send(self, message: ServerMessage, on_sent: Callable[[float], None] | None = None) -> None:
        """Queue `message`; `on_sent(trio time)` runs once its bytes were handed to the socket.
        Never blocks and never raises: a peer that cannot keep up disconnects itself."""
        ...

    def close(self) -> None:
        """Write what is queued, end the stream and close (server shutdown)."""
        ...


class RoomStatus(enum.Enum):
    """A room's life: waiting for players, playing, over (being recorded, then removed)."""

    CREATED = "created"
    ACTIVE = "active"
    OVER = "over"


class Phase(enum.Enum):
    """The five phases of the rule above (derived from status, pause flag and request)."""

    WAITING = "waiting"
    PAUSED = "paused"
    RUNNING = "running"
    AWAITING_MOVE = "awaiting a move"
    OVER = "over"


@dataclass(eq=False)
class Slot:
    """One player's place in a room: its team, descriptor, connection and first violation."""

    team: Team
    display_name: str = ""
    can_timeout: bool = True
    reserved: bool = False
    peer: Peer | None = None
    connected: bool = False
    violation: Violation | None = None
    filled: int = 0  # when a connection took the slot (lobby-wide order)

    @property
    def free(self) -> bool:
        """Joinable by <join>/<joinRoom>: empty and not kept for a reservation."""
        return self.peer is None and not self.reserved

    def violate(self, violation: Violation) -> None:
        """Charge `violation`; only the first one counts (official Player.violation)."""
        if self.violation is None:
            self.violation = violation

    def java_repr(self) -> str:
        """Player.toString() of the official server, for its messages: TEAM(displayName)."""
        return f"{self.team.name}({self.display_name})"


@dataclass(eq=False, slots=True)
class PendingRequest:
    """A moveRequest waiting for its move; times on trio's clock."""

    slot: Slot
    requested_at: float
    sent_at: float | None = None

    def mark_sent(self, when: float) -> None:
        """The request left the server at `when`: the bot's clock starts then."""
        self.sent_at = when

    @property
    def started_at(self) -> float:
        """When the bot's clock started: when the request left the server, not when it was
        queued (the server's own delay is never charged to the bot)."""
        return self.sent_at if self.sent_at is not None else self.requested_at


@dataclass(eq=False)
class Table:
    """What every room of one lobby shares: settings, timers, the observer feed, and where a
    finished game goes (`on_over`: record it, then remove the room)."""

    settings: Settings
    timers: Timers
    feed: ObserverFeed
    on_over: Callable[[Room, FinishedGame], None]
    # The feed's observe, None when nobody watches (NoFeed): no call a move for nothing.
    observe: Callable[[ServerMessage], None] | None = field(init=False)

    def __post_init__(self) -> None:
        self.observe = None if isinstance(self.feed, NoFeed) else self.feed.observe

    @property
    def soft_seconds(self) -> str:
        """The soft timeout as the official timeout texts print it."""
        return f"{self.settings.soft_timeout:g}"


@dataclass(eq=False)
class Room:
    """One game room: its state, slots, observers, pending request, timers and the record
    of the game so far; its methods are the transitions of the module's rule."""

    id: str
    state: GameState
    prepared: bool
    paused: bool
    table: Table
    slots: list[Slot] = field(default_factory=list)
    observers: dict[Peer, None] = field(default_factory=dict)  # ordered set
    status: RoomStatus = RoomStatus.CREATED
    pending: PendingRequest | None = None
    timer: Timer | None = None  # reservation expiry before the start, wall clock after it
    move_timer: Timer | None = None  # hard timeouts (see _request_move)
    created: datetime = field(default_factory=lambda: datetime.now(UTC))
    started: datetime | None = None
    moves: list[tuple[int, int, str]] = field(default_factory=list)
    move_ms: list[float] = field(default_factory=list)
    replay: list[Memento | RoomError | ResultMessage] | None = None
    reservations: list[str] = field(default_factory=list)
    move_request: MoveRequest | None = None  # the same for every request: made once
    # The move's log line of each slot, made at its first move (its room and team fixed).
    move_lines: dict[Slot, PreparedLine] = field(default_factory=dict)

    # ------------------------------------------------------------------ what it is

    @property
    def phase(self) -> Phase:
        """Where the room is in the rule of this module."""
        if self.status is RoomStatus.CREATED:
            return Phase.WAITING
        if self.status is RoomStatus.OVER:
            return Phase.OVER
        if self.pending is not None:
            return Phase.AWAITING_MOVE
        return Phase.PAUSED if self.paused else Phase.RUNNING

    @property
    def joinable(self) -> bool:
        """A `<join>` may take a place here: not started, with a free or missing slot."""
        return self.status is RoomStatus.CREATED and (
            len(self.slots) < MAX_SLOTS or any(slot.free for slot in self.slots)
        )

    @property
    def ready(self) -> bool:
        """Both slots are filled: the game can start."""
        return len(self.slots) == MAX_SLOTS and all(slot.peer is not None for slot in self.slots)

    def slot_of(self, peer: Peer) -> Slot | None:
        """The slot `peer` plays in; the first one when it holds both (official
        resolvePlayer)."""
        for slot in self.slots:
            if slot.peer is peer:
                return slot
        return None

    def record(self, packet: Memento | RoomError | ResultMessage) -> None:
        """Keep `packet` for the replay (if this room keeps one)."""
        if self.replay is not None:
            self.replay.append(packet)

    # ------------------------------------------------------------------ WAITING

    def start(self) -> None:
        """WAITING → the game: welcome each player, then `next` (§4.1)."""
        self.status = RoomStatus.ACTIVE
        self.started = datetime.now(UTC)
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        limit = self.table.settings.game_wall_clock_limit
        if limit > 0:
            self.timer = self.table.timers.call_later(limit, self._wall_clock_exceeded)
        log.info(
            "game started",
            room=self.id,
            players=[slot.peer.name for slot in self.slots if slot.peer is not None],
            paused=self.paused,
        )
        for slot in self.slots:
            if slot.connected and slot.peer is not None:
                slot.peer.send(WelcomeMessage(self.id, slot.team))
        self._next()

    def expire(self) -> None:
        """The reservation time ran out before the start: OVER ("expired")."""
        if self.status is RoomStatus.CREATED:
            log.info("prepared room expired", room=self.id)
            self.timer = None
            for slot in self.slots:
                if slot.peer is None:
                    slot.violate(Violation(ViolationKind.LEFT, DisconnectCause.NOT_CONNECTED))
            self.finish(end="expired")

    # ------------------------------------------------------------------ admin

    def pause(self, pause: bool) -> None:
        """<pause>: observers learn it; pausing takes effect after the pending move, and
        unpausing while no move is requested continues the game at once (§4.2, §5.4)."""
        if self.status is RoomStatus.OVER or self.paused == pause:
            log.info("pause ignored", room=self.id, pause=pause)
            return
        self.paused = pause
        self._to_observers(Paused(self.id, pause))
        log.info("pause", room=self.id, pause=pause)
        if not pause and self.status is RoomStatus.ACTIVE and self.pending is None:
            self._step()

    def step(self, forced: bool) -> None:
        """<step>: start (forced, both slots filled) or cancel (forced, a slot empty) a
        waiting room; one move of a paused game, unless a move is awaited already (§5.4)."""
        if self.status is RoomStatus.CREATED:
            if not forced:
                log.info("step ignored: game not started and step not forced", room=self.id)
            elif self.ready:
                self.start()
            else:
                self.cancel()
        elif self.status is RoomStatus.ACTIVE:
            if not self.paused:
                log.info("step ignored: game not paused", room=self.id)
            elif self.pending is not None:
                # Not official: 26.1.0 sends another moveRequest and then charges the bot a
                # PROCESS_VIOLATION for answering it (§5.4). A bot never pays for the server.
                log.info("step ignored: a move is awaited", room=self.id)
            else:
                self._step()

    # ------------------------------------------------------------------ the game

    def _next(self) -> None:
        """Publish the current state; end the game or ask for the next move (AbstractGame.next)."""
        memento = Memento(self.id, self.state)
        # _to_observers, _to_players and record inlined: once per move.
        for observer in self.observers:
            observer.send(memento)
        observe = self.table.observe
        if observe is not None:
            observe(memento)
        if not self.paused:
            for slot in self.slots:
                if slot.connected and slot.peer is not None:
                    slot.peer.send(memento)
            if self.replay is not None:
                self.replay.append(memento)
        if self.state.is_over:
            self.finish()
        elif not self.paused:
            self._request_move()

    def _step(self) -> None:
        """One step of a paused game: the state to everyone, then a moveRequest."""
        memento = Memento(self.id, self.state)
        self._to_observers(memento)
        self._to_players(memento)
        self.record(memento)
        self._request_move()

    def _request_move(self) -> None:
        slot = self.slots[self.state.current_team._value_]  # (_value_: no enum property call)
        now = self.table.timers.now()
        pending = PendingRequest(slot, now)
        self.pending = pending
        if slot.can_timeout and self.move_timer is None:
            # One timer per room, not per request: a move leaves it armed, and when it fires
            # it looks at the request pending then (a heap entry per move cost more).
            self.move_timer = self.table.timers.call_at(
                now + self.table.settings.hard_timeout, self._move_timer_fired
            )
        if slot.connected and slot.peer is not None:
            request = self.move_request
            if request is None:
                request = self.move_request = MoveRequest(self.id)
            slot.peer.send(request, pending.mark_sent)

    def _move_timer_fired(self) -> None:
        """The earliest hard-timeout deadline of the requests since the timer was armed: the
        pending request's own may be later (re-armed), or has passed (HARD_TIMEOUT)."""
        self.move_timer = None
        pending = self.pending
        if pending is None or self.status is not RoomStatus.ACTIVE or not pending.slot.can_timeout:
            return  # the next request arms it again
        due = pending.started_at + self.table.settings.hard_timeout
        if due > trio.current_time():
            # A later request, or the request left the server later than it was queued: the
            # bot gets its full time.
            self.move_timer = self.table.timers.call_at(due, self._move_timer_fired)
            return
        self.pending = None
        log.info("hard timeout", room=self.id, team=pending.slot.team.name)
        # The official text names the soft limit here too (§5.6); kept for compatibility.
        pending.slot.violate(Violation(ViolationKind.HARD_TIMEOUT, self.table.soft_seconds))
        self.finish()

    def move(self, slot: Slot, move: Move, received_at: float) -> None:
        """A move from the player of `slot` (not OVER; the lobby checked membership), whose
        bytes arrived at `received_at` (trio time)."""
        pending = self.pending
        if pending is None or pending.slot is not slot:
            # (A move that was requested is the turn's: a request asks the slot of the team
            # to move, and the state changes only once the request is answered.)
            self._unrequested_move(slot, move)
            return
        self.pending = None
        # A move that arrives before its request was seen leaving (the writer task had not
        # resumed yet) was answered at once: the request had just left.
        sent_at = pending.sent_at
        # max(0.0, received_at - sent_at) by a comparison (the same float, NaN and -0.0
        # included: max keeps its first argument unless the second is greater); the builtin
        # max is ~1.9k instructions a call, once a move.
        elapsed = 0.0 if sent_at is None else received_at - sent_at
        if not elapsed > 0.0:
            elapsed = 0.0
        if slot.can_timeout and elapsed > self.table.settings.soft_timeout:
            # Official: the late move is not applied and nobody gets an error message.
            log.info("soft timeout", room=self.id, team=slot.team.name, ms=round(elapsed * 1000, 3))
            slot.violate(Violation(ViolationKind.SOFT_TIMEOUT, self.table.soft_seconds))
            self.finish()
            return
        try:
            self.state = self.state.apply(move)
        except InvalidMoveError as error:
            self._rule_violation(slot, move, error)
            return
        ms = move_milliseconds(elapsed)
        # _name_: Enum.name is a Python-level property (the hot path: once per move).
        key = (move.x, move.y, move.direction._name_)
        self.moves.append(key)
        self.move_ms.append(ms)
        # log.info("move", room=self.id, team=slot.team._name_, move=str(move), ms=ms), its
        # constant parts made once per slot (a move's line was 8 % of the server's CPU).
        line = self.move_lines.get(slot)
        if line is None:
            line = self.move_lines[slot] = log.prepare(
                "move", "move", "ms", room=self.id, team=slot.team._name_
            )
        text = _MOVE_TEXTS.get(key) if type(move) is Move else None
        line.info(text if text is not None else _move_text(key, move), ms)
        self._next()

    def _unrequested_move(self, slot: Slot, move: Move) -> None:
        # Official onAction checks the turn first, whatever the room's status: also before the
        # start and while paused (§5.3 step 2). A team without a slot yet (a <join> room
        # started from an odd turn) cannot be "expected"; that move is simply not requested.
        team = self.state.current_team
        if slot.team is not team and team.value < len(self.slots):
            active = self.slots[team.value]
            self._process_violation(
                slot,
                move,
                f"It's not your turn yet; expected: {active.java_repr()}, "
                f"got {slot.java_repr()} (msg was {move}).",
            )
            return
        self._process_violation(slot, move, f"Move from {slot.java_repr()} has not been requested.")

    def _process_violation(self, slot: Slot, move: Move, message: str) -> None:
        log.info("process violation", room=self.id, team=slot.team.name, error=message)
        slot.violate(Violation(ViolationKind.PROCESS_VIOLATION, message))
        if slot.connected and slot.peer is not None:
            slot.peer.send(RoomError(self.id, message, move))
        # Official GameRoom.onEvent calls cancel(): slots nobody joined count as NOT_CONNECTED.
        self.cancel()

    def _rule_violation(self, slot: Slot, move: Move, error: InvalidMoveError) -> None:
        log.info("rule violation", room=self.id, team=slot.team.name, error=str(error))
        slot.violate(Violation(ViolationKind.RULE_VIOLATION, str(error)))
        message = f"Ungueltiger Zug von '{slot.display_name}'.\n{error.official_repr()}"
        room_error = RoomError(self.id, message, move)
        if slot.connected and slot.peer is not None:
            slot.peer.send(room_error)
        self._to_observers(room_error)
        self.record(room_error)
        self.cancel()

    # ------------------------------------------------------------------ ends

    def player_left(self, peer: Peer, cause: DisconnectCause) -> None:
        """The connection of `peer` ended: OVER with LEFT(cause) for it (§5.5)."""
        if self.status is RoomStatus.OVER:
            return
        mine = [slot for slot in self.slots if slot.peer is peer]
        if not mine:
            return
        for slot in mine:
            slot.connected = False
        # Officially each filled slot listens to the connection, in fill order; the first
        # one's removePlayer ends the game, so only that player is the leaver (matters when
        # one connection holds both slots).
        min(mine, key=lambda slot: slot.filled).violate(Violation(ViolationKind.LEFT, cause))
        # Official removePlayer → cancel(): slots nobody joined count as NOT_CONNECTED,
        # so a never-joined player cannot win a prepared room its opponent left.
        self.cancel()

    def cancel(self) -> None:
        """Official GameRoom.cancel: empty slots count as never connected (§5.9)."""
        for slot in self.slots:
            if slot.peer is None:
                slot.violate(Violation(ViolationKind.LEFT, DisconnectCause.NOT_CONNECTED))
        self.finish()

    def _wall_clock_exceeded(self) -> None:
        if self.status is not RoomStatus.OVER:
            self.timer = None
            limit = self.table.settings.game_wall_clock_limit
            log.info("game wall-clock limit reached", room=self.id, seconds=limit)
            self.finish(aborted=wall_clock_reason(limit), end="wall_clock")

    def finish(self, *, aborted: str | None = None, end: str = "over") -> None:
        """→ OVER: the result to everyone now; `on_over` records it, then sends <left> and
        removes the room (after the results log has it)."""
        if self.status is RoomStatus.OVER:
            return
        self.status = RoomStatus.OVER
        if self.move_timer is not None:
            self.move_timer.cancel()
            self.move_timer = None
        self.pending = None
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        finished = datetime.now(UTC)
        players = [PlayerEntry(slot.team, slot.display_name, slot.violation) for slot in self.slots]
        result = game_result(self.state, players, aborted=aborted)
        message = ResultMessage(self.id, result)
        self.record(message)
        self._to_players(message)
        self._to_observers(message)
        log.info(
            "game over",
            room=self.id,
            end=end,
            winner=result.winner.name if result.winner is not None else None,
            regular=result.regular,
            reason=result.reason,
            scores=[score for _, score in result.scores],
        )
        self.table.on_over(
            self,
            FinishedGame(
                room_id=self.id,
                names=tuple(slot.display_name for slot in self.slots),
                result=result,
                created=self.created,
                started=self.started,
                finished=finished,
                turn=self.state.turn,
                moves=tuple(self.moves),
                move_ms=tuple(self.move_ms),
                end=end,
                replay=tuple(self.replay) if self.replay is not None else None,
            ),
        )

    def send_left(self) -> None:
        """The game is recorded: <left> to players and observers (the room is then removed)."""
        left = Left(self.id)
        self._to_players(left)
        self._to_observers(left)

    # ------------------------------------------------------------------ sending

    def _to_players(self, message: ServerMessage) -> None:
        for slot in self.slots:
            if slot.connected and slot.peer is not None:
                slot.peer.send(message)

    def _to_observers(self, message: ServerMessage) -> None:
        for observer in self.observers:
            observer.send(message)
        observe = self.table.observe
        if observe is not None:
            observe(message)

    def feed_players(self) -> None:
        """Tell the feed who sits in the slots now."""
        if isinstance(self.table.feed, NoFeed):
            return  # nobody watches: no list built (three times a game)
        self.table.feed.players_changed(
            self.id,
            [
                RoomPlayer(slot.team.name, slot.display_name, slot.peer is not None)
                for slot in self.slots
            ],
        )


def wall_clock_reason(limit: float) -> str:
    """The result's reason when a game ran past the wall-clock limit (not official)."""
    return f"Das Spiel wurde abgebrochen: es hat länger als {limit:g} Sekunden gedauert"
