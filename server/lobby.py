"""The lobby: every room, slot, reservation, admin and observer, and the turn/pause/step/timeout
state machine of each game (docs/protocol.md §4, §5, §6).

Everything here is synchronous and runs on the trio thread, so each handler is atomic: no other
packet or timer can interleave with it. The lobby reaches clients only through `Peer`
(`send`, `close`), which lets the tests drive it with fakes. It only decides: recording a
finished game (results log, replay) is the `Recorder`'s, whose blocking I/O runs in a worker
thread after the game ends and before the room is removed.
"""

from __future__ import annotations

import enum
import hmac
import itertools
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

import structlog
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
from protocol.events import (
    GAME_TYPE,
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
    kotlin_str,
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
from server.limits import Episode
from server.recorder import FinishedGame, Recorder
from server.timers import Timer, Timers

log = structlog.get_logger("server.lobby")

MAX_SLOTS = 2

SHUTDOWN_REASON = "Das Spiel wurde abgebrochen: der Server wird beendet"


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


# Official exception class names: the errorpacket message is Throwable.toString() (§3.9).
_ROOM_EXCEPTION = "sc.api.plugins.exceptions.GameRoomException"
_GAME_EXCEPTION = "sc.api.plugins.exceptions.GameException"
_RESERVATION_EXCEPTION = "sc.server.gaming.UnknownReservationException"
_AUTH_FAILED = "sc.server.network.AuthenticationFailedException"
_UNAUTHENTICATED = "sc.server.network.UnauthenticatedException"
_RESCUABLE = "sc.api.plugins.exceptions.RescuableClientException"
_PLUGIN_LOADER = "sc.server.plugins.PluginLoaderException"
_TOO_MANY_PLAYERS = "sc.api.plugins.exceptions.TooManyPlayersException"

# server/healthcheck.py asks to join a room with this prefix: answered, logged at debug only.
HEALTHCHECK_ROOM_PREFIX = "healthcheck-"
# Addresses with recent failed admin logins that are remembered at most (older ones are
# forgotten first), so a client with many addresses cannot grow the table without bound.
MAX_LOGIN_RECORDS = 4096
# Requests one connection may pipeline behind a delayed failed-login answer; more closes it.
MAX_HELD_PACKETS = 1000


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
    """A request the official server refuses with an errorpacket; the connection stays open.
    `quiet` refusals are logged at debug: they are counted and logged once per episode
    elsewhere (a limit), or expected (the health probe)."""

    def __init__(self, message: str, *, quiet: bool = False) -> None:
        super().__init__(message)
        self.quiet = quiet


class RoomStatus(enum.Enum):
    """A room's life: waiting for players, playing, over (being recorded, then removed)."""

    CREATED = "created"
    ACTIVE = "active"
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


@dataclass(eq=False)
class PendingRequest:
    """A moveRequest waiting for its move; times on trio's clock."""

    slot: Slot
    requested_at: float
    sent_at: float | None = None
    timer: Timer | None = None

    def mark_sent(self, when: float) -> None:
        """The request left the server at `when`: the bot's clock starts then."""
        self.sent_at = when

    @property
    def started_at(self) -> float:
        """When the bot's clock started: when the request left the server, not when it was
        queued (the server's own delay is never charged to the bot)."""
        return self.sent_at if self.sent_at is not None else self.requested_at


@dataclass(eq=False)
class Room:
    """One game room: its state, slots, observers, pending request, timers and the record
    of the game so far."""

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
    moves: list[tuple[int, int, str]] = field(default_factory=list)
    move_ms: list[float] = field(default_factory=list)
    replay: list[Memento | RoomError | ResultMessage] | None = None
    reservations: list[str] = field(default_factory=list)

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


@dataclass(eq=False)
class _Member:
    """What the lobby knows about one connection."""

    admin: bool = False
    rooms: list[Room] = field(default_factory=list)  # as a player
    observing: list[Room] = field(default_factory=list)
    probe: bool = False  # sent the health probe: its connection is logged at debug only
    room_quota: Episode | None = None  # refused for maxRoomsPerConnection, until it fits again
    # Requests that arrived while a failed login's answer is delayed (None: not delaying).
    held: list[tuple[ClientPacket, float]] | None = None
    released: trio.Event | None = None  # set when nothing is held any more


@dataclass(eq=False)
class _LoginRecord:
    """Failed admin logins of one remote address (trio times)."""

    failures: deque[float] = field(default_factory=deque)
    locked_until: float = -float("inf")
    refused: int = 0  # during the current lockout


class Lobby:
    """The one state machine of the game server: every room, slot, reservation, admin and
    observer, and each game's turns, pauses, steps, timeouts and result.

    Connections call `connect`, `handle` (one parsed packet, stamped with the time its bytes
    arrived) and `disconnect`; the lobby answers through `Peer.send`. Everything runs on the trio
    thread and each call is atomic. `run()` must be running (timers, recording); `shutdown()`
    ends every game with an aborted result. Finished games go to the `Recorder`.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        recorder: Recorder | None = None,
        feed: ObserverFeed | None = None,
    ) -> None:
        self.settings = settings
        # Sees what observers see (server/feed.py): an in-process watcher, e.g. the web viewer.
        self.feed: ObserverFeed = feed if feed is not None else NoFeed()
        self.recorder = recorder if recorder is not None else Recorder.from_settings(settings)
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
        self._logins: dict[str, _LoginRecord] = {}
        self._room_limit = Episode("room limit reached: refusing new rooms", cap=settings.max_rooms)
        self._prepared_limit = Episode(
            "prepared room limit reached: refusing <prepare>", cap=settings.max_prepared_rooms
        )
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
        """A new connection: it may now send packets through `handle`."""
        self._members[peer] = _Member()
        # Debug: the health probe connects every few seconds; a real client shows up at info
        # with its first request (joined, refused, admin) and when it closes.
        log.debug("connection opened", peer=peer.name)

    def disconnect(self, peer: Peer, cause: DisconnectCause) -> None:
        """The connection is gone; a game it plays in ends with LEFT(cause) (§5.5)."""
        member = self._members.pop(peer, None)
        if member is None:
            return
        if member.probe and not (member.admin or member.rooms or member.observing):
            log.debug("connection closed", peer=peer.name, cause=cause)
        else:
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
        if member.held is not None:
            # A failed login's answer is still delayed: later requests wait behind it, so
            # the answers keep the order of the requests.
            if len(member.held) >= MAX_HELD_PACKETS:
                log.info("too many requests during a failed-login delay", peer=peer.name)
                member.held = None
                if member.released is not None:
                    member.released.set()
                peer.close()
                return
            member.held.append((packet, received_at))
            return
        handler = self._handlers.get(type(packet))
        try:
            if handler is None:
                raise ClientError(f"{_RESCUABLE}: Unhandled Packet: {packet.java_repr()}")
            handler(peer, member, packet, received_at)
        except ClientError as error:
            (log.debug if error.quiet else log.info)(
                "request refused", peer=peer.name, error=str(error)
            )
            peer.send(ErrorPacket(str(error), packet))

    # ------------------------------------------------------------------ joining

    def _on_join(self, peer: Peer, member: _Member, packet: Join, now: float) -> None:
        if packet.game_type is not None and packet.game_type != GAME_TYPE:
            raise ClientError(_unknown_game_type(packet.game_type))
        self._refuse_when_shutting_down()
        room = next(iter(self._joinable.values()), None)
        if room is None or room not in member.rooms:
            self._check_rooms_per_connection(peer, member)
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
        found = self._reservations.get(code) if code is not None else None
        if found is None:
            raise ClientError(
                f"{_RESERVATION_EXCEPTION}: Couldn't find a reservation for the provided token."
            )
        room, slot = found
        if room not in member.rooms:
            self._check_rooms_per_connection(peer, member)
        del self._reservations[code]  # type: ignore[arg-type]
        room.reservations.remove(code)  # type: ignore[arg-type]
        self._fill(room, slot, peer, member)

    def _on_join_room(self, peer: Peer, member: _Member, packet: JoinRoom, now: float) -> None:
        room_id = packet.room_id
        if room_id is not None and room_id.startswith(HEALTHCHECK_ROOM_PREFIX):
            member.probe = True
            if room_id not in self.rooms:
                raise ClientError(
                    f"{_ROOM_EXCEPTION}: Couldn't find a room with id {room_id}", quiet=True
                )
        room = self._room(room_id)
        slot = self._free_slot(room) if room.status is RoomStatus.CREATED else None
        if slot is None:
            raise ClientError(f"{_ROOM_EXCEPTION}: Room {room.id} is already full!")
        if room not in member.rooms:
            self._check_rooms_per_connection(peer, member)
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

    def _check_rooms_per_connection(self, peer: Peer, member: _Member) -> None:
        """Refuse a connection that would be in more than maxRoomsPerConnection rooms (rooms
        still being recorded count: one connection must not pile up games)."""
        cap = self.settings.max_rooms_per_connection
        if len(member.rooms) < cap:
            if member.room_quota is not None:
                member.room_quota.relieved()
                if not member.room_quota.active:
                    member.room_quota = None
            return
        if member.room_quota is None:
            member.room_quota = Episode(
                "room limit per connection reached: refusing joins", peer=peer.name, cap=cap
            )
        member.room_quota.hit()
        raise ClientError(
            f"{_ROOM_EXCEPTION}: This connection is already in {len(member.rooms)} rooms, "
            f"the server allows {cap} at once",
            quiet=True,
        )

    def _check_room_capacity(self, *, prepared: bool) -> None:
        """Refuse a new room over maxRooms (or a prepared one over maxPreparedRooms). Rooms
        still being recorded count: they hold memory and a place in the recording queue."""
        if len(self.rooms) >= self.settings.max_rooms:
            self._room_limit.hit()
            raise ClientError(
                f"{_ROOM_EXCEPTION}: The server has {len(self.rooms)} open rooms, "
                f"its limit; try again later",
                quiet=True,
            )
        if prepared:
            waiting = sum(
                1
                for room in self.rooms.values()
                if room.prepared and room.status is RoomStatus.CREATED
            )
            if waiting >= self.settings.max_prepared_rooms:
                self._prepared_limit.hit()
                raise ClientError(
                    f"{_ROOM_EXCEPTION}: The server has {waiting} prepared rooms that have not "
                    f"started, its limit; try again later",
                    quiet=True,
                )
            self._prepared_limit.relieved()
        self._room_limit.relieved()

    def _create_room(self, *, prepared: bool, paused: bool, state: GameState) -> Room:
        self._check_room_capacity(prepared=prepared)
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
        address = _address_of(peer)
        record = self._logins.get(address)
        if record is not None and record.locked_until > now:
            # Refused without looking at the password: guessing gains nothing here.
            record.refused += 1
            log.debug("admin login refused: address locked out", peer=peer.name)
            remaining = record.locked_until - now
            peer.send(
                ErrorPacket(
                    f"{_AUTH_FAILED}: Too many failed logins from {address}; "
                    f"try again in {remaining:.0f} s",
                    packet,
                )
            )
            return
        expected = self.settings.password
        given = packet.password
        # compare_digest: the time taken does not reveal how much of the password matched.
        if (
            expected is not None
            and given is not None
            and hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))
        ):
            member.admin = True
            self._admins[peer] = None
            log.info("admin authenticated", peer=peer.name)
            return
        self._login_failed(peer, member, address, packet, now)

    def _login_failed(
        self, peer: Peer, member: _Member, address: str, packet: Authenticate, now: float
    ) -> None:
        """Count the failure of `address`; lock it out after loginFailures within the window.
        The answer comes after loginFailureDelay (a timer: the lobby is not blocked)."""
        record = self._logins.pop(address, None) or _LoginRecord()
        self._logins[address] = record  # most recent last: the oldest are forgotten first
        if len(self._logins) > MAX_LOGIN_RECORDS:
            self._forget_logins(now)
        failures = record.failures
        window = self.settings.login_failure_window
        while failures and failures[0] <= now - window:
            failures.popleft()
        failures.append(now)
        lockout = self.settings.login_lockout
        if lockout > 0 and len(failures) >= self.settings.login_failures:
            failures.clear()
            record.locked_until = now + lockout
            record.refused = 0
            log.warning(
                "admin login locked out: too many failures",
                address=address,
                failures=self.settings.login_failures,
                window_seconds=window,
                seconds=lockout,
            )
            self.timers.call_at(record.locked_until, lambda: self._lockout_over(address, record))
        else:
            log.info("admin login failed", peer=peer.name, failures=len(failures))
        error = ErrorPacket(f"{_AUTH_FAILED}: Failed to authenticate as administrator", packet)
        delay = self.settings.login_failure_delay
        if delay > 0:
            member.held = []
            if member.released is not None:
                member.released.set()  # a waiter on the previous hold looks again
            member.released = trio.Event()
            self.timers.call_later(delay, lambda: self._answer_failed_login(peer, member, error))
        else:
            peer.send(error)

    def _answer_failed_login(self, peer: Peer, member: _Member, error: ErrorPacket) -> None:
        """The delay is over: answer, then handle what the connection sent meanwhile."""
        if self._members.get(peer) is not member or member.held is None:
            return  # gone (or closed for flooding)
        peer.send(error)
        held, member.held = member.held, None
        for index, (packet, received_at) in enumerate(held):
            self.handle(peer, packet, received_at)
            if member.held is not None:  # another failed login: the rest waits behind it
                member.held.extend(held[index + 1 :])
                return
        if member.released is not None:
            member.released.set()

    async def wait_for_held_answers(self, peer: Peer) -> None:
        """Return once no failed-login answer is held back for `peer` (at once when none is):
        its connection said <close/> and must first get the answers to what it sent."""
        member = self._members.get(peer)
        while member is not None and member.held is not None and member.released is not None:
            await member.released.wait()
            member = self._members.get(peer)

    def _lockout_over(self, address: str, record: _LoginRecord) -> None:
        if record.locked_until > trio.current_time():
            return  # locked out again meanwhile: that lockout's own timer reports it
        log.info("admin login lockout over", address=address, refused=record.refused)
        if self._logins.get(address) is record and not record.failures:
            del self._logins[address]

    def _forget_logins(self, now: float) -> None:
        """Drop records that no longer matter; if still too many, the oldest."""
        window = self.settings.login_failure_window
        for address, record in list(self._logins.items()):
            if record.locked_until <= now and (
                not record.failures or record.failures[-1] <= now - window
            ):
                del self._logins[address]
        while len(self._logins) > MAX_LOGIN_RECORDS:
            del self._logins[next(iter(self._logins))]

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
        state = GameState.initial(packet.seed)  # seed: our extension (protocol §2)
        room = self._create_room(prepared=True, paused=packet.pause, state=state)
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
        # Unpausing while no move is requested continues the game at once (§4.2/§4.3);
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
                f"{_ROOM_EXCEPTION}: Couldn't find a room with id {kotlin_str(room_id)}"
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
        # The official text names the soft limit here too (§5.6); kept for compatibility.
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
        # start and while paused (§5.3 step 2). A team without a slot yet (a <join> room
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
        room.moves.append((move.x, move.y, move.direction.name))
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
        """Official GameRoom.cancel: empty slots count as never connected (§5.9)."""
        for slot in room.slots:
            if slot.peer is None:
                slot.violate(Violation(ViolationKind.LEFT, DisconnectCause.NOT_CONNECTED))
        self._finish(room)

    def _expire(self, room: Room) -> None:
        if room.status is RoomStatus.CREATED:
            log.info("prepared room expired", room=room.id)
            room.timer = None
            for slot in room.slots:
                if slot.peer is None:
                    slot.violate(Violation(ViolationKind.LEFT, DisconnectCause.NOT_CONNECTED))
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
        finished = datetime.now(UTC)
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
        game = FinishedGame(
            room_id=room.id,
            names=tuple(slot.display_name for slot in room.slots),
            result=result,
            created=room.created,
            started=room.started,
            finished=finished,
            turn=room.state.turn,
            moves=tuple(room.moves),
            move_ms=tuple(room.move_ms),
            end=end,
            replay=tuple(room.replay) if room.replay is not None else None,
        )
        self._nursery.start_soon(self._close_room, room, game)

    async def _close_room(self, room: Room, game: FinishedGame) -> None:
        """Record the game (durably), then <left> and removal."""
        try:
            await self.recorder.record(game)
        finally:
            self._remove(room)
            self._closing_rooms -= 1
            if not self._closing_rooms:
                self._rooms_closed.set()

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


def _address_of(peer: Peer) -> str:
    """The remote address failed logins are counted for (a connection's `address`; fakes in
    tests have only a name)."""
    address = getattr(peer, "address", None)
    return address if isinstance(address, str) and address else peer.name


def wall_clock_reason(limit: float) -> str:
    """The result's reason when a game ran past the wall-clock limit (not official)."""
    return f"Das Spiel wurde abgebrochen: es hat länger als {limit:g} Sekunden gedauert"


def _unknown_game_type(game_type: str) -> str:
    return f"{_PLUGIN_LOADER}: Unknown gameType '{game_type}'; available game types: {GAME_TYPE}"
