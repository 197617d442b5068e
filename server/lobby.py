"""The lobby: every room, slot, reservation, admin and observer, and the turn/pause/step/timeout
state machine of each game (spec §4, §5, §6).

Everything here is synchronous and runs on the trio thread, so each handler is atomic: no other
packet or timer can interleave with it. The lobby reaches clients only through `Peer`
(`send`, `close`), which lets the tests drive it with fakes. Blocking work (results log fsync,
replay files) happens in a worker thread after a game ends, before the room is removed.
"""

from __future__ import annotations

import enum
import hmac
import itertools
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

import structlog
import trio

from engine import (
    GameResult,
    GameState,
    InvalidMoveError,
    Move,
    PlayerEntry,
    Team,
    Violation,
    ViolationKind,
    game_result,
)
from protocol.events import (
    Authenticate,
    CancelRequest,
    ClientPacket,
    Join,
    JoinPrepared,
    JoinRoom,
    MovePacket,
    Observe,
    PauseRequest,
    Prepare,
    ResponsePacket,
    RoomDataPacket,
    StepRequest,
)
from protocol.messages import (
    ErrorPacket,
    Joined,
    JoinedGameRoom,
    Left,
    Memento,
    MoveRequest,
    Observed,
    Paused,
    Prepared,
    ResultMessage,
    RoomError,
    ServerMessage,
    WelcomeMessage,
)
from server.config import Settings
from server.feed import NoFeed, ObserverFeed, RoomPlayer
from server.replays import save_replay
from server.results import ResultsLog, game_record
from server.timers import Timer, Timers

log = structlog.get_logger("server.lobby")

GAME_TYPE = "swc_2026_piranhas"
MAX_SLOTS = 2

SHUTDOWN_REASON = "Das Spiel wurde abgebrochen: der Server wird beendet"

# DisconnectCause names of the official server (spec §6.4), used in LEFT violations.
RECEIVED_DISCONNECT = "RECEIVED_DISCONNECT"
LOST_CONNECTION = "LOST_CONNECTION"
PROTOCOL_ERROR = "PROTOCOL_ERROR"
NOT_CONNECTED = "NOT_CONNECTED"
TIMEOUT = "TIMEOUT"
UNKNOWN = "UNKNOWN"

# Official exception class names: the errorpacket message is Throwable.toString() (spec §3.9).
_ROOM_EXCEPTION = "sc.api.plugins.exceptions.GameRoomException"
_GAME_EXCEPTION = "sc.api.plugins.exceptions.GameException"
_RESERVATION_EXCEPTION = "sc.server.gaming.UnknownReservationException"
_AUTH_FAILED = "sc.server.network.AuthenticationFailedException"
_UNAUTHENTICATED = "sc.server.network.UnauthenticatedException"
_RESCUABLE = "sc.api.plugins.exceptions.RescuableClientException"
_PLUGIN_LOADER = "sc.server.plugins.PluginLoaderException"
_TOO_MANY_PLAYERS = "sc.api.plugins.exceptions.TooManyPlayersException"


class Peer(Protocol):
    """What the lobby needs from a client connection. Both calls return at once."""

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


class ClientError(Exception):
    """A request the official server refuses with an errorpacket; the connection stays open."""


class RoomStatus(enum.Enum):
    CREATED = "created"
    ACTIVE = "active"
    OVER = "over"


@dataclass(eq=False)
class Slot:
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
        # Only the first violation of a player counts (official Player.violation).
        if self.violation is None:
            self.violation = violation

    def java_repr(self) -> str:
        # Player.toString() of the official server: TEAM(displayName).
        return f"{self.team.name}({self.display_name})"


@dataclass(eq=False)
class PendingRequest:
    """A moveRequest waiting for its move; times on trio's clock."""

    slot: Slot
    requested_at: float
    sent_at: float | None = None
    timer: Timer | None = None

    def mark_sent(self, when: float) -> None:
        self.sent_at = when

    @property
    def started_at(self) -> float:
        # The bot's clock starts when the request left the server, not when it was queued.
        return self.sent_at if self.sent_at is not None else self.requested_at


@dataclass(eq=False)
class Room:
    id: str
    state: GameState
    prepared: bool
    paused: bool
    slots: list[Slot] = field(default_factory=list)
    observers: dict[Peer, None] = field(default_factory=dict)  # ordered set
    status: RoomStatus = RoomStatus.CREATED
    pending: PendingRequest | None = None
    timer: Timer | None = None  # reservation expiry before the start, wall clock after it
    created: datetime = field(default_factory=lambda: datetime.now(UTC))
    started: datetime | None = None
    moves: list[list[object]] = field(default_factory=list)
    move_ms: list[float] = field(default_factory=list)
    replay: list[Memento | RoomError | ResultMessage] | None = None
    reservations: list[str] = field(default_factory=list)

    @property
    def joinable(self) -> bool:
        return self.status is RoomStatus.CREATED and (
            len(self.slots) < MAX_SLOTS or any(slot.free for slot in self.slots)
        )

    @property
    def ready(self) -> bool:
        return len(self.slots) == MAX_SLOTS and all(slot.peer is not None for slot in self.slots)

    def slot_of(self, peer: Peer) -> Slot | None:
        # The first slot wins when one connection holds both (official resolvePlayer).
        for slot in self.slots:
            if slot.peer is peer:
                return slot
        return None

    def record(self, packet: Memento | RoomError | ResultMessage) -> None:
        if self.replay is not None:
            self.replay.append(packet)


@dataclass(eq=False)
class _Member:
    """What the lobby knows about one connection."""

    admin: bool = False
    rooms: list[Room] = field(default_factory=list)  # as a player
    observing: list[Room] = field(default_factory=list)


class Lobby:
    def __init__(
        self,
        settings: Settings,
        *,
        results: ResultsLog | None = None,
        feed: ObserverFeed | None = None,
    ) -> None:
        self.settings = settings
        # Sees what observers see (server/feed.py); a watcher in-process, e.g. the web viewer.
        self.feed: ObserverFeed = feed if feed is not None else NoFeed()
        self.results = results if results is not None else ResultsLog(settings.results_file)
        self.timers = Timers()
        self.rooms: dict[str, Room] = {}
        self._joinable: dict[str, Room] = {}  # rooms <join> may enter, oldest first
        self._reservations: dict[str, tuple[Room, Slot]] = {}
        self._fill_order = itertools.count(1)
        self._members: dict[Peer, _Member] = {}
        self._admins: dict[Peer, None] = {}
        self._closing_rooms = 0
        self._rooms_closed = trio.Event()
        self._nursery: trio.Nursery | None = None
        self._shutting_down = False
        self._soft_seconds = f"{settings.soft_timeout:g}"
        self._handlers: dict[type, Callable[[Peer, _Member, object, float], None]] = {
            MovePacket: self._on_move,  # type: ignore[dict-item]
            Join: self._on_join,  # type: ignore[dict-item]
            JoinPrepared: self._on_join_prepared,  # type: ignore[dict-item]
            JoinRoom: self._on_join_room,  # type: ignore[dict-item]
            Authenticate: self._on_authenticate,  # type: ignore[dict-item]
            Prepare: self._on_prepare,  # type: ignore[dict-item]
            Observe: self._on_observe,  # type: ignore[dict-item]
            PauseRequest: self._on_pause,  # type: ignore[dict-item]
            StepRequest: self._on_step,  # type: ignore[dict-item]
            CancelRequest: self._on_cancel,  # type: ignore[dict-item]
            RoomDataPacket: self._on_room_data,  # type: ignore[dict-item]
            ResponsePacket: self._on_response_packet,  # type: ignore[dict-item]
        }

    # ------------------------------------------------------------------ lifecycle

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve timers and room endings until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self.timers.run)
            task_status.started()
            await trio.sleep_forever()

    async def shutdown(self, reason: str = SHUTDOWN_REASON) -> None:
        """End every room with an aborted result (sent and recorded) and wait until all of
        them are persisted and removed. New joins are refused from now on."""
        self._shutting_down = True
        for room in list(self.rooms.values()):
            self._finish(room, aborted=reason, end="shutdown")
        await self.wait_rooms_closed()

    async def wait_rooms_closed(self) -> None:
        """Wait until no ended room is still being persisted."""
        while self._closing_rooms:
            await self._rooms_closed.wait()

    # ------------------------------------------------------------------ connections

    def connect(self, peer: Peer) -> None:
        self._members[peer] = _Member()
        log.info("connection opened", peer=peer.name)

    def disconnect(self, peer: Peer, cause: str) -> None:
        """The connection is gone; a game it plays in ends with LEFT(cause) (spec §5.5)."""
        member = self._members.pop(peer, None)
        if member is None:
            return
        log.info("connection closed", peer=peer.name, cause=cause)
        self._admins.pop(peer, None)
        for room in member.observing:
            room.observers.pop(peer, None)
        for room in member.rooms:
            if room.status is RoomStatus.OVER:
                continue
            mine = [slot for slot in room.slots if slot.peer is peer]
            if not mine:
                continue
            for slot in mine:
                slot.connected = False
            # Officially each filled slot listens to the connection, in fill order; the first
            # one's removePlayer ends the game, so only that player is the leaver (matters when
            # one connection holds both slots).
            min(mine, key=lambda slot: slot.filled).violate(Violation(ViolationKind.LEFT, cause))
            # Official removePlayer → cancel(): slots nobody joined count as NOT_CONNECTED,
            # so a never-joined player cannot win a prepared room its opponent left.
            self._cancel(room)

    def is_busy(self, peer: Peer) -> bool:
        """Admin, player or observer: such a connection is never closed for being idle."""
        member = self._members.get(peer)
        return member is not None and bool(member.admin or member.rooms or member.observing)

    def handle(self, peer: Peer, packet: ClientPacket, received_at: float) -> None:
        """Act on one packet from `peer`. `received_at` is the trio time when the bytes that
        completed it arrived: move times are measured to that instant."""
        member = self._members.get(peer)
        if member is None:
            return
        handler = self._handlers.get(type(packet))
        try:
            if handler is None:
                raise ClientError(f"{_RESCUABLE}: Unhandled Packet: {packet.java_repr()}")
            handler(peer, member, packet, received_at)
        except ClientError as error:
            log.info("request refused", peer=peer.name, error=str(error))
            peer.send(ErrorPacket(str(error), packet))

    # ------------------------------------------------------------------ joining

    def _on_join(self, peer: Peer, member: _Member, packet: Join, now: float) -> None:
        if packet.game_type is not None and packet.game_type != GAME_TYPE:
            raise ClientError(_unknown_game_type(packet.game_type))
        self._refuse_when_shutting_down()
        room = next(iter(self._joinable.values()), None)
        if room is None:
            room = self._create_room(
                prepared=False,
                paused=self.settings.paused,
                state=self.settings.start_state or GameState.initial(),
            )
        slot = self._free_slot(room)
        assert slot is not None, "a joinable room has a free slot"
        self._fill(room, slot, peer, member)
        joined_game_room = JoinedGameRoom(
            room.id, sum(1 for slot in room.slots if slot.peer is not None)
        )
        for admin in self._admins:
            admin.send(joined_game_room)

    def _on_join_prepared(
        self, peer: Peer, member: _Member, packet: JoinPrepared, now: float
    ) -> None:
        code = packet.reservation_code
        found = self._reservations.pop(code, None) if code is not None else None
        if found is None:
            raise ClientError(
                f"{_RESERVATION_EXCEPTION}: Couldn't find a reservation for the provided token."
            )
        room, slot = found
        room.reservations.remove(code)  # type: ignore[arg-type]
        self._fill(room, slot, peer, member)

    def _on_join_room(self, peer: Peer, member: _Member, packet: JoinRoom, now: float) -> None:
        room = self._room(packet.room_id)
        slot = self._free_slot(room) if room.status is RoomStatus.CREATED else None
        if slot is None:
            raise ClientError(f"{_ROOM_EXCEPTION}: Room {room.id} is already full!")
        self._fill(room, slot, peer, member)

    def _free_slot(self, room: Room) -> Slot | None:
        for slot in room.slots:
            if slot.free:
                return slot
        if len(room.slots) < MAX_SLOTS:
            slot = Slot(Team.ONE if not room.slots else Team.TWO, "", self.settings.timeout)
            room.slots.append(slot)
            return slot
        return None

    def _fill(self, room: Room, slot: Slot, peer: Peer, member: _Member) -> None:
        slot.peer = peer
        slot.connected = True
        slot.filled = next(self._fill_order)
        if room not in member.rooms:
            member.rooms.append(room)
        if not room.joinable:
            self._joinable.pop(room.id, None)
        peer.send(Joined(room.id))
        log.info("joined", room=room.id, peer=peer.name, team=slot.team.name)
        self._feed_players(room)
        if room.ready:
            self._start(room)

    def _create_room(self, *, prepared: bool, paused: bool, state: GameState) -> Room:
        room = Room(
            id=str(uuid.uuid4()),
            state=state,
            prepared=prepared,
            paused=paused,
            replay=[] if self.settings.save_replay else None,
        )
        self.rooms[room.id] = room
        self._joinable[room.id] = room
        log.info("room created", room=room.id, prepared=prepared, paused=paused)
        self.feed.room_opened(room.id, paused=paused, prepared=prepared)
        return room

    def _refuse_when_shutting_down(self) -> None:
        if self._shutting_down:
            raise ClientError(f"{_ROOM_EXCEPTION}: The server is shutting down")

    # ------------------------------------------------------------------ admin

    def _on_authenticate(
        self, peer: Peer, member: _Member, packet: Authenticate, now: float
    ) -> None:
        expected = self.settings.password
        given = packet.password
        # compare_digest: the time taken does not reveal how much of the password matched.
        if (
            expected is None
            or given is None
            or not hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))
        ):
            raise ClientError(f"{_AUTH_FAILED}: Failed to authenticate as administrator")
        member.admin = True
        self._admins[peer] = None
        log.info("admin authenticated", peer=peer.name)

    def _require_admin(self, member: _Member, packet: ClientPacket) -> None:
        if not member.admin:
            raise ClientError(
                f"{_UNAUTHENTICATED}: Request {packet.java_repr()} requires authentication"
            )

    def _on_prepare(self, peer: Peer, member: _Member, packet: Prepare, now: float) -> None:
        self._require_admin(member, packet)
        if packet.game_type is not None and packet.game_type != GAME_TYPE:
            raise ClientError(_unknown_game_type(packet.game_type))
        if not packet.slots:
            raise ClientError(f"{_ROOM_EXCEPTION}: A prepared game needs at least one <slot>")
        if len(packet.slots) > MAX_SLOTS:
            raise ClientError(
                f"{_TOO_MANY_PLAYERS}: A game has at most {MAX_SLOTS} slots, "
                f"got {len(packet.slots)}"
            )
        self._refuse_when_shutting_down()
        room = self._create_room(prepared=True, paused=packet.pause, state=GameState.initial())
        for team, descriptor in zip((Team.ONE, Team.TWO), packet.slots, strict=False):
            slot = Slot(team, descriptor.display_name, descriptor.can_timeout, descriptor.reserved)
            room.slots.append(slot)
            if descriptor.reserved:
                code = str(uuid.uuid4())
                self._reservations[code] = (room, slot)
                room.reservations.append(code)
        if not room.joinable:
            self._joinable.pop(room.id, None)
        self._feed_players(room)
        ttl = self.settings.reservation_ttl
        if ttl > 0:
            room.timer = self.timers.call_later(ttl, lambda: self._expire(room))
        peer.send(Prepared(room.id, tuple(room.reservations)))

    def _on_observe(self, peer: Peer, member: _Member, packet: Observe, now: float) -> None:
        self._require_admin(member, packet)
        room = self._room(packet.room_id)
        if peer not in room.observers:
            room.observers[peer] = None
            member.observing.append(room)
        peer.send(Observed(room.id))

    def _on_pause(self, peer: Peer, member: _Member, packet: PauseRequest, now: float) -> None:
        self._require_admin(member, packet)
        room = self._room(packet.room_id)
        if room.status is RoomStatus.OVER or room.paused == packet.pause:
            log.info("pause ignored", room=room.id, pause=packet.pause)
            return
        room.paused = packet.pause
        self._to_observers(room, Paused(room.id, packet.pause))
        log.info("pause", room=room.id, pause=packet.pause)
        # Unpausing while no move is requested continues the game at once (spec §4.2/§4.3);
        # pausing takes effect after the pending move.
        if not packet.pause and room.status is RoomStatus.ACTIVE and room.pending is None:
            self._step(room)

    def _on_step(self, peer: Peer, member: _Member, packet: StepRequest, now: float) -> None:
        self._require_admin(member, packet)
        room = self._room(packet.room_id)
        if room.status is RoomStatus.CREATED:
            if not packet.forced:
                log.info("step ignored: game not started and step not forced", room=room.id)
            elif room.ready:
                self._start(room)
            else:
                self._cancel(room)
        elif room.status is RoomStatus.ACTIVE:
            if room.paused:
                self._step(room)
            else:
                log.info("step ignored: game not paused", room=room.id)

    def _on_cancel(self, peer: Peer, member: _Member, packet: CancelRequest, now: float) -> None:
        self._require_admin(member, packet)
        if packet.room_id is None:
            raise ClientError(f"{_ROOM_EXCEPTION}: <cancel> needs a roomId")
        room = self._room(packet.room_id)
        if room.status is not RoomStatus.OVER:
            log.info("cancel", room=room.id, peer=peer.name)
            self._cancel(room)

    # ------------------------------------------------------------------ wrong packets

    def _on_room_data(
        self, peer: Peer, member: _Member, packet: RoomDataPacket, now: float
    ) -> None:
        self._room(packet.room_id)
        raise ClientError(f"{_ROOM_EXCEPTION}: Received non-move packet: {packet.java_repr()}")

    def _on_response_packet(
        self, peer: Peer, member: _Member, packet: ResponsePacket, now: float
    ) -> None:
        raise ClientError(f"{_RESCUABLE}: Unhandled Packet of type: class {packet.java_class}")

    def _room(self, room_id: str | None) -> Room:
        room = self.rooms.get(room_id) if room_id is not None else None
        if room is None:
            raise ClientError(
                f"{_ROOM_EXCEPTION}: Couldn't find a room with id {room_id or 'null'}"
            )
        return room

    # ------------------------------------------------------------------ the game

    def _start(self, room: Room) -> None:
        room.status = RoomStatus.ACTIVE
        room.started = datetime.now(UTC)
        self._joinable.pop(room.id, None)
        if room.timer is not None:
            room.timer.cancel()
            room.timer = None
        limit = self.settings.game_wall_clock_limit
        if limit > 0:
            room.timer = self.timers.call_later(limit, lambda: self._wall_clock_exceeded(room))
        log.info(
            "game started",
            room=room.id,
            players=[slot.peer.name for slot in room.slots if slot.peer is not None],
            paused=room.paused,
        )
        for slot in room.slots:
            if slot.connected and slot.peer is not None:
                slot.peer.send(WelcomeMessage(room.id, slot.team))
        self._next(room)

    def _next(self, room: Room) -> None:
        """Publish the current state; end the game or ask for the next move (AbstractGame.next)."""
        memento = Memento(room.id, room.state)
        self._to_observers(room, memento)
        if not room.paused:
            self._to_players(room, memento)
            room.record(memento)
        if room.state.is_over:
            self._finish(room)
        elif not room.paused:
            self._request_move(room)

    def _step(self, room: Room) -> None:
        """One step of a paused game: the state to everyone, then a moveRequest."""
        memento = Memento(room.id, room.state)
        self._to_observers(room, memento)
        self._to_players(room, memento)
        room.record(memento)
        self._request_move(room)

    def _request_move(self, room: Room) -> None:
        if room.pending is not None and room.pending.timer is not None:
            room.pending.timer.cancel()
        slot = room.slots[room.state.current_team.value]
        pending = PendingRequest(slot, trio.current_time())
        room.pending = pending
        if slot.can_timeout:
            pending.timer = self.timers.call_later(
                self.settings.hard_timeout, lambda: self._hard_timeout(room, pending)
            )
        if slot.connected and slot.peer is not None:
            slot.peer.send(MoveRequest(room.id), pending.mark_sent)

    def _hard_timeout(self, room: Room, pending: PendingRequest) -> None:
        if room.pending is not pending or room.status is not RoomStatus.ACTIVE:
            return
        due = pending.started_at + self.settings.hard_timeout
        if due > trio.current_time():
            # The request left the server later than it was queued: the bot gets its full time.
            pending.timer = self.timers.call_at(due, lambda: self._hard_timeout(room, pending))
            return
        room.pending = None
        log.info("hard timeout", room=room.id, team=pending.slot.team.name)
        # The official text names the soft limit here too (spec §5.6); kept for compatibility.
        pending.slot.violate(Violation(ViolationKind.HARD_TIMEOUT, self._soft_seconds))
        self._finish(room)

    def _on_move(self, peer: Peer, member: _Member, packet: MovePacket, received_at: float) -> None:
        room = self._room(packet.room_id)
        move = packet.move
        if room.status is RoomStatus.OVER:
            raise ClientError(f"{_GAME_EXCEPTION}: Game is already over, but got {move}")
        slot = room.slot_of(peer)
        if slot is None:
            raise ClientError(f"{_ROOM_EXCEPTION}: Client is not a member of game {room.id}")
        pending = room.pending
        # Official onAction checks the turn first, whatever the room's status: also before the
        # start and while paused (spec §5.3 step 2). A team without a slot yet (a <join> room
        # started from an odd turn) cannot be "expected"; that move is simply not requested.
        team = room.state.current_team
        if slot.team is not team and team.value < len(room.slots):
            active = room.slots[team.value]
            self._process_violation(
                room,
                slot,
                move,
                f"It's not your turn yet; expected: {active.java_repr()}, "
                f"got {slot.java_repr()} (msg was {move}).",
            )
            return
        if pending is None or pending.slot is not slot:
            self._process_violation(
                room, slot, move, f"Move from {slot.java_repr()} has not been requested."
            )
            return
        room.pending = None
        if pending.timer is not None:
            pending.timer.cancel()
        # A move that arrives before its request was seen leaving (the writer task had not
        # resumed yet) was answered at once: the request had just left.
        sent_at = pending.sent_at
        elapsed = 0.0 if sent_at is None else max(0.0, received_at - sent_at)
        if slot.can_timeout and elapsed > self.settings.soft_timeout:
            # Official: the late move is not applied and nobody gets an error message.
            log.info("soft timeout", room=room.id, team=slot.team.name, ms=round(elapsed * 1000, 3))
            slot.violate(Violation(ViolationKind.SOFT_TIMEOUT, self._soft_seconds))
            self._finish(room)
            return
        try:
            room.state = room.state.apply(move)
        except InvalidMoveError as error:
            self._rule_violation(room, slot, move, error)
            return
        ms = round(elapsed * 1000, 3)
        room.moves.append([move.x, move.y, move.direction.name])
        room.move_ms.append(ms)
        log.info("move", room=room.id, team=slot.team.name, move=str(move), ms=ms)
        self._next(room)

    def _process_violation(self, room: Room, slot: Slot, move: Move, message: str) -> None:
        log.info("process violation", room=room.id, team=slot.team.name, error=message)
        slot.violate(Violation(ViolationKind.PROCESS_VIOLATION, message))
        if slot.connected and slot.peer is not None:
            slot.peer.send(RoomError(room.id, message, move))
        # Official GameRoom.onEvent calls cancel(): slots nobody joined count as NOT_CONNECTED.
        self._cancel(room)

    def _rule_violation(self, room: Room, slot: Slot, move: Move, error: InvalidMoveError) -> None:
        log.info("rule violation", room=room.id, team=slot.team.name, error=str(error))
        slot.violate(Violation(ViolationKind.RULE_VIOLATION, str(error)))
        message = f"Ungueltiger Zug von '{slot.display_name}'.\n{error.official_repr()}"
        room_error = RoomError(room.id, message, move)
        if slot.connected and slot.peer is not None:
            slot.peer.send(room_error)
        self._to_observers(room, room_error)
        room.record(room_error)
        self._cancel(room)

    # ------------------------------------------------------------------ ends

    def _cancel(self, room: Room) -> None:
        """Official GameRoom.cancel: empty slots count as never connected (spec §5.9)."""
        for slot in room.slots:
            if slot.peer is None:
                slot.violate(Violation(ViolationKind.LEFT, NOT_CONNECTED))
        self._finish(room)

    def _expire(self, room: Room) -> None:
        if room.status is RoomStatus.CREATED:
            log.info("prepared room expired", room=room.id)
            room.timer = None
            for slot in room.slots:
                if slot.peer is None:
                    slot.violate(Violation(ViolationKind.LEFT, NOT_CONNECTED))
            self._finish(room, end="expired")

    def _wall_clock_exceeded(self, room: Room) -> None:
        if room.status is not RoomStatus.OVER:
            room.timer = None
            limit = self.settings.game_wall_clock_limit
            log.info("game wall-clock limit reached", room=room.id, seconds=limit)
            self._finish(
                room,
                aborted=wall_clock_reason(limit),
                end="wall_clock",
            )

    def _finish(self, room: Room, *, aborted: str | None = None, end: str = "over") -> None:
        """End the game: result to everyone now; record it, then <left> and removal (after
        the results log has it)."""
        if room.status is RoomStatus.OVER:
            return
        room.status = RoomStatus.OVER
        self._joinable.pop(room.id, None)
        for code in room.reservations:
            self._reservations.pop(code, None)
        room.reservations.clear()
        if room.pending is not None and room.pending.timer is not None:
            room.pending.timer.cancel()
        room.pending = None
        if room.timer is not None:
            room.timer.cancel()
            room.timer = None
        players = [PlayerEntry(slot.team, slot.display_name, slot.violation) for slot in room.slots]
        result = game_result(room.state, players, aborted=aborted)
        message = ResultMessage(room.id, result)
        room.record(message)
        self._to_players(room, message)
        self._to_observers(room, message)
        log.info(
            "game over",
            room=room.id,
            end=end,
            winner=result.winner.name if result.winner is not None else None,
            regular=result.regular,
            reason=result.reason,
            scores=[score for _, score in result.scores],
        )
        self._closing_rooms += 1
        if self._rooms_closed.is_set():
            self._rooms_closed = trio.Event()
        if self._nursery is None:
            raise RuntimeError("Lobby.run() is not running")
        self._nursery.start_soon(self._close_room, room, result, end)

    async def _close_room(self, room: Room, result: GameResult, end: str) -> None:
        try:
            record = self._record(room, result, end)
            if self.settings.save_replay or self.results.path is not None:
                await trio.to_thread.run_sync(self._persist, room, record)
        except Exception:
            log.exception("recording the game failed", room=room.id)
        finally:
            self._remove(room)
            self._closing_rooms -= 1
            if not self._closing_rooms:
                self._rooms_closed.set()

    def _record(self, room: Room, result: GameResult, end: str) -> dict[str, object]:
        record = game_record(
            room.id, result, started=room.started or room.created, turn=room.state.turn
        )
        record["created"] = room.created.isoformat()
        record["end"] = end
        record["moves"] = room.moves
        record["moveMs"] = room.move_ms
        return record

    def _persist(self, room: Room, record: dict[str, object]) -> None:
        """Worker thread: replay file first (its path goes into the record), then the log."""
        if room.replay is not None:
            path: Path | None = save_replay(
                self.settings.replay_dir,
                [slot.display_name for slot in room.slots],
                room.id,
                room.replay,
                datetime.now(),
            )
            if path is not None:
                record["replay"] = str(path)
        self.results.append(record)

    def _remove(self, room: Room) -> None:
        left = Left(room.id)
        self._to_players(room, left)
        self._to_observers(room, left)
        self.rooms.pop(room.id, None)
        for slot in room.slots:
            if slot.peer is not None:
                member = self._members.get(slot.peer)
                if member is not None and room in member.rooms:
                    member.rooms.remove(room)
        for observer in room.observers:
            member = self._members.get(observer)
            if member is not None and room in member.observing:
                member.observing.remove(room)

    # ------------------------------------------------------------------ sending

    def _to_players(self, room: Room, message: ServerMessage) -> None:
        for slot in room.slots:
            if slot.connected and slot.peer is not None:
                slot.peer.send(message)

    def _to_observers(self, room: Room, message: ServerMessage) -> None:
        for observer in room.observers:
            observer.send(message)
        self.feed.observe(message)

    def _feed_players(self, room: Room) -> None:
        self.feed.players_changed(
            room.id,
            [
                RoomPlayer(slot.team.name, slot.display_name, slot.peer is not None)
                for slot in room.slots
            ],
        )


def wall_clock_reason(limit: float) -> str:
    return f"Das Spiel wurde abgebrochen: es hat länger als {limit:g} Sekunden gedauert"


def _unknown_game_type(game_type: str) -> str:
    return f"{_PLUGIN_LOADER}: Unknown gameType '{game_type}'; available game types: {GAME_TYPE}"
