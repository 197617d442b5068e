"""The lobby: every room, slot, reservation, admin and observer (docs/protocol.md §4, §5, §6).

A dispatcher: `Lobby.handle` matches each packet to one handler: joining (rooms, slots,
reservations, admission limits), admin requests, and the moves, pauses, steps and cancels it
hands to the room's game (`server.game`, every transition of a room under its rule); a
`<prepare>` is checked, and its start position given, by `server.prepare`. Logins are
counted and locked out by `server.logins`; the lobby delays the answer to a failed one (a timer)
and keeps the connection's later requests in order behind it. Each handler runs on the trio
thread, atomic, and its messages go out in one write per connection (`server.batch`).
"""

from __future__ import annotations

import hmac
import itertools
import os
from collections.abc import Callable
from dataclasses import dataclass, field

import trio

from engine import GameState, Move, Team
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
from protocol.messages import ErrorPacket, Joined, JoinedGameRoom, Observed, Prepared
from server import errors
from server.batch import SendBatch
from server.config import Settings
from server.errors import ClientError
from server.feed import NoFeed, ObserverFeed
from server.game import MAX_SLOTS, Peer, RoomStatus, Slot, Table
from server.game import DisconnectCause as DisconnectCause  # re-exported: known from here
from server.game import Room as Room
from server.game import wall_clock_reason as wall_clock_reason
from server.limits import Episode
from server.logins import Logins
from server.logs import get_logger
from server.prepare import check_prepare, start_position
from server.recorder import FinishedGame, Recorder
from server.timers import Timers

log = get_logger("server.lobby")

SHUTDOWN_REASON = "Das Spiel wurde abgebrochen: der Server wird beendet"

# server/healthcheck.py asks to join a room with this prefix: answered, logged at debug only.
HEALTHCHECK_ROOM_PREFIX = "healthcheck-"
# Requests one connection may pipeline behind a delayed failed-login answer; more closes it.
MAX_HELD_PACKETS = 1000


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


class Lobby:
    """The game server's dispatcher: every room, slot, reservation, admin and observer; each
    room's game is its `server.game.Room`.

    Connections call `connect`, `handle` (one parsed packet, stamped with the time its bytes
    arrived) and `disconnect`; the lobby answers through `Peer.send`. Everything runs on the trio
    thread and each call is atomic. `run()` must be running (timers, recording); `shutdown()`
    ends every game with an aborted result. Finished games go to the `Recorder`. `logins` is
    the admin-login guard; pass one to share it (the web viewer's login, `server.feed.LoginGate`).
    """

    def __init__(
        self,
        settings: Settings,
        *,
        recorder: Recorder | None = None,
        feed: ObserverFeed | None = None,
        logins: Logins | None = None,
    ) -> None:
        self.settings = settings
        self.feed: ObserverFeed = feed if feed is not None else NoFeed()
        self.recorder = recorder if recorder is not None else Recorder.from_settings(settings)
        self.timers = Timers()
        # What one handler sends goes out in one write per connection (server/batch.py).
        self.batch = SendBatch()
        self.logins = logins if logins is not None else Logins.from_settings(settings, run_clock())
        self.table = Table(settings, self.timers, self.feed, self._game_over)
        self.rooms: dict[str, Room] = {}
        self._joinable: dict[str, Room] = {}  # rooms <join> may enter, oldest first
        # Prepared rooms, from their creation until a <prepare> finds them started or over
        # (a room never returns to CREATED): counting the waiting ones looks at these, not at
        # every open room on every <prepare>.
        self._prepared: dict[Room, None] = {}
        self._reservations: dict[str, tuple[Room, Slot]] = {}
        self._fill_order = itertools.count(1)
        self._members: dict[Peer, _Member] = {}
        self._admins: dict[Peer, None] = {}
        self._closing_rooms = 0
        self._rooms_closed = trio.Event()
        self._nursery: trio.Nursery | None = None
        # Ended rooms with nothing to record, for the closer task (`_close_unrecorded`): their
        # <left> and removal in a later turn of the loop, as after a recording, without a task
        # of their own per game. None while the closer is not running.
        self._unrecorded: list[Room] | None = None
        self._unrecorded_added = trio.Event()
        self._shutting_down = False
        self._room_limit = Episode("room limit reached: refusing new rooms", cap=settings.max_rooms)
        self._prepared_limit = Episode(
            "prepared room limit reached: refusing <prepare>", cap=settings.max_prepared_rooms
        )

    # ------------------------------------------------------------------ lifecycle

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Serve timers and room endings until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            nursery.start_soon(self.timers.run)
            self._unrecorded = []
            nursery.start_soon(self._close_unrecorded)
            task_status.started()
            await trio.sleep_forever()

    async def shutdown(self, reason: str = SHUTDOWN_REASON) -> None:
        """End every room with an aborted result (sent and recorded) and wait until all of
        them are persisted and removed. New joins are refused from now on."""
        self._shutting_down = True
        for room in list(self.rooms.values()):
            room.finish(aborted=reason, end="shutdown")
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
            room.player_left(peer, cause)

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
        with self.batch:
            try:
                if type(packet) is MovePacket:  # (most packets: without _dispatch's call)
                    self._move(peer, packet.room_id, packet.move, received_at)
                else:
                    self._dispatch(peer, member, packet, received_at)
            except ClientError as error:
                self._refused(peer, error, packet)

    def handle_move(self, peer: Peer, room_id: str, move: Move, received_at: float) -> None:
        """`handle(peer, MovePacket(room_id, move), received_at)`, the packet made only when
        it is needed (held behind a failed login, refused): the read loop's move, every move
        of a bot (a frozen dataclass is ~4.5k instructions)."""
        member = self._members.get(peer)
        if member is None:
            return
        if member.held is not None:
            self.handle(peer, MovePacket(room_id, move), received_at)
            return
        with self.batch:
            try:
                self._move(peer, room_id, move, received_at)
            except ClientError as error:
                self._refused(peer, error, MovePacket(room_id, move))

    def _refused(self, peer: Peer, error: ClientError, packet: ClientPacket) -> None:
        (log.debug if error.quiet else log.info)(
            "request refused", peer=peer.name, error=str(error)
        )
        peer.send(ErrorPacket(str(error), packet))

    def _dispatch(self, peer: Peer, member: _Member, packet: ClientPacket, now: float) -> None:
        match packet:
            case MovePacket():
                self._move(peer, packet.room_id, packet.move, now)
            case Join():
                self._on_join(peer, member, packet)
            case JoinPrepared():
                self._on_join_prepared(peer, member, packet)
            case JoinRoom():
                self._on_join_room(peer, member, packet)
            case Authenticate():
                self._on_authenticate(peer, member, packet)
            case Prepare():
                self._on_prepare(peer, member, packet)
            case Observe():
                self._on_observe(peer, member, packet)
            case PauseRequest():
                self._require_admin(member, packet)
                self._room(packet.room_id).pause(packet.pause)
            case StepRequest():
                self._on_step(member, packet)
            case CancelRequest():
                self._on_cancel(peer, member, packet)
            case RoomDataPacket():
                self._room(packet.room_id)
                raise ClientError(
                    f"{errors.ROOM_EXCEPTION}: Received non-move packet: {packet.java_repr()}"
                )
            case ResponsePacket():
                raise ClientError(
                    f"{errors.RESCUABLE}: Unhandled Packet of type: class {packet.java_class}"
                )
            case _:
                raise ClientError(f"{errors.RESCUABLE}: Unhandled Packet: {packet.java_repr()}")

    def _room(self, room_id: str | None) -> Room:
        room = self.rooms.get(room_id) if room_id is not None else None
        if room is None:
            raise ClientError(
                f"{errors.ROOM_EXCEPTION}: Couldn't find a room with id {kotlin_str(room_id)}"
            )
        return room

    # ------------------------------------------------------------------ the game

    def _move(self, peer: Peer, room_id: str | None, move: Move, received_at: float) -> None:
        """A move packet's (`MovePacket(room_id, move)`) handling."""
        # (once per move: _room only for its error)
        room = self.rooms.get(room_id) if room_id is not None else None
        if room is None:
            room = self._room(room_id)
        if room.status is RoomStatus.OVER:
            raise ClientError(f"{errors.GAME_EXCEPTION}: Game is already over, but got {move}")
        for slot in room.slots:  # (room.slot_of inlined: once per move)
            if slot.peer is peer:
                room.move(slot, move, received_at)
                return
        raise ClientError(f"{errors.ROOM_EXCEPTION}: Client is not a member of game {room.id}")

    def _on_step(self, member: _Member, packet: StepRequest) -> None:
        self._require_admin(member, packet)
        room = self._room(packet.room_id)
        room.step(packet.forced)
        if not room.joinable:
            self._joinable.pop(room.id, None)

    def _on_cancel(self, peer: Peer, member: _Member, packet: CancelRequest) -> None:
        self._require_admin(member, packet)
        if packet.room_id is None:
            raise ClientError(f"{errors.ROOM_EXCEPTION}: <cancel> needs a roomId")
        room = self._room(packet.room_id)
        if room.status is not RoomStatus.OVER:
            log.info("cancel", room=room.id, peer=peer.name)
            room.cancel()

    def _game_over(self, room: Room, game: FinishedGame) -> None:
        """A room's game ended (its result is sent): forget its joins and reservations, record
        it, then <left> and removal."""
        self._joinable.pop(room.id, None)
        for code in room.reservations:
            self._reservations.pop(code, None)
        room.reservations.clear()
        self._closing_rooms += 1
        if self._rooms_closed.is_set():
            self._rooms_closed = trio.Event()
        if self._nursery is None:
            raise RuntimeError("Lobby.run() is not running")
        if not self.recorder.has_work(game):
            # Nothing to persist (no results log, sink or replay): the closer task sends
            # <left> and removes the room in its next turn.
            if self._unrecorded is not None:
                self._unrecorded.append(room)
                self._unrecorded_added.set()
            else:  # the closer is gone (the lobby was cancelled): now
                self._room_closed(room)
            return
        try:
            self._nursery.start_soon(self._close_room, room, game)
        except RuntimeError:
            # The lobby was cancelled and its nursery is closed (a connection's clean-up
            # after a stop that was not graceful): no task to record in, so record here,
            # blocking, rather than lose the result.
            self.recorder.record_now(game)
            self._room_closed(room)

    async def _close_room(self, room: Room, game: FinishedGame) -> None:
        """Record the game (durably), then <left> and removal."""
        try:
            # Shielded: a stop that cancels the lobby must not cost a finished game its
            # record (the graceful shutdown waits for it anyway).
            with trio.CancelScope(shield=True):
                await self.recorder.record(game)
        finally:
            self._room_closed(room)

    async def _close_unrecorded(self) -> None:
        """The closer: <left> and removal of the ended rooms with nothing to record, each in
        a later turn of the loop than its end (as `_close_room` does after recording; a move
        sent meanwhile is "already over", not for an unknown room)."""
        try:
            while True:
                await self._unrecorded_added.wait()
                self._unrecorded_added = trio.Event()
                # (In a call: its locals would hold the last rooms, their slots and
                # connections, until the next game ended.)
                self._close_ended([])
        finally:
            # Cancelled (the lobby stops): nothing to record, so close what is left now, and
            # every later end at once (_game_over).
            self._close_ended(None)

    def _close_ended(self, then: list[Room] | None) -> None:
        """Close the ended rooms with nothing to record; `then` holds the later ones (None:
        every later end closes at once)."""
        rooms, self._unrecorded = self._unrecorded, then
        for room in rooms or ():
            self._room_closed(room)

    def _room_closed(self, room: Room) -> None:
        self._remove(room)
        self._closing_rooms -= 1
        if not self._closing_rooms:
            self._rooms_closed.set()

    def _remove(self, room: Room) -> None:
        room.send_left()
        self.rooms.pop(room.id, None)
        self._prepared.pop(room, None)
        for slot in room.slots:
            if slot.peer is not None:
                member = self._members.get(slot.peer)
                if member is not None and room in member.rooms:
                    member.rooms.remove(room)
        for observer in room.observers:
            member = self._members.get(observer)
            if member is not None and room in member.observing:
                member.observing.remove(room)

    # ------------------------------------------------------------------ joining

    def _on_join(self, peer: Peer, member: _Member, packet: Join) -> None:
        if packet.game_type is not None and packet.game_type != GAME_TYPE:
            raise ClientError(errors.unknown_game_type(packet.game_type))
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

    def _on_join_prepared(self, peer: Peer, member: _Member, packet: JoinPrepared) -> None:
        code = packet.reservation_code or ""  # never a code: they are UUIDs
        found = self._reservations.get(code)
        if found is None:
            raise ClientError(
                f"{errors.RESERVATION_EXCEPTION}: "
                "Couldn't find a reservation for the provided token."
            )
        room, slot = found
        if room not in member.rooms:
            self._check_rooms_per_connection(peer, member)
        del self._reservations[code]
        room.reservations.remove(code)
        self._fill(room, slot, peer, member)

    def _on_join_room(self, peer: Peer, member: _Member, packet: JoinRoom) -> None:
        room_id = packet.room_id
        if room_id is not None and room_id.startswith(HEALTHCHECK_ROOM_PREFIX):
            member.probe = True
            if room_id not in self.rooms:
                raise ClientError(
                    f"{errors.ROOM_EXCEPTION}: Couldn't find a room with id {room_id}", quiet=True
                )
        room = self._room(room_id)
        slot = self._free_slot(room) if room.status is RoomStatus.CREATED else None
        if slot is None:
            raise ClientError(f"{errors.ROOM_EXCEPTION}: Room {room.id} is already full!")
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
        room.feed_players()
        if room.ready:
            room.start()

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
            f"{errors.ROOM_EXCEPTION}: This connection is already in {len(member.rooms)} rooms, "
            f"the server allows {cap} at once",
            quiet=True,
        )

    def _check_room_capacity(self, *, prepared: bool) -> None:
        """Refuse a new room over maxRooms (or a prepared one over maxPreparedRooms). Rooms
        still being recorded count: they hold memory and a place in the recording queue."""
        if len(self.rooms) >= self.settings.max_rooms:
            self._room_limit.hit()
            raise ClientError(
                f"{errors.ROOM_EXCEPTION}: The server has {len(self.rooms)} open rooms, "
                f"its limit; try again later",
                quiet=True,
            )
        if prepared:
            for room in [room for room in self._prepared if room.status is not RoomStatus.CREATED]:
                del self._prepared[room]
            waiting = len(self._prepared)
            if waiting >= self.settings.max_prepared_rooms:
                self._prepared_limit.hit()
                raise ClientError(
                    f"{errors.ROOM_EXCEPTION}: The server has {waiting} prepared rooms "
                    "that have not started, its limit; try again later",
                    quiet=True,
                )
            self._prepared_limit.relieved()
        self._room_limit.relieved()

    def _create_room(self, *, prepared: bool, paused: bool, state: GameState) -> Room:
        self._check_room_capacity(prepared=prepared)
        room = Room(
            id=random_uuid(),
            state=state,
            prepared=prepared,
            paused=paused,
            table=self.table,
            replay=[] if self.settings.save_replay else None,
        )
        self.rooms[room.id] = room
        self._joinable[room.id] = room
        if prepared:
            self._prepared[room] = None
        log.info("room created", room=room.id, prepared=prepared, paused=paused)
        self.feed.room_opened(room.id, paused=paused, prepared=prepared)
        return room

    def _refuse_when_shutting_down(self) -> None:
        if self._shutting_down:
            raise ClientError(f"{errors.ROOM_EXCEPTION}: The server is shutting down")

    # ------------------------------------------------------------------ admin

    def _on_authenticate(self, peer: Peer, member: _Member, packet: Authenticate) -> None:
        address = _address_of(peer)
        remaining = self.logins.check(address)
        if remaining > 0:
            # Refused without looking at the password: guessing gains nothing here.
            log.debug("admin login refused: address locked out", peer=peer.name)
            peer.send(
                ErrorPacket(
                    f"{errors.AUTH_FAILED}: Too many failed logins from {address}; "
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
            self.logins.succeed(address)
            member.admin = True
            self._admins[peer] = None
            log.info("admin authenticated", peer=peer.name)
            return
        self._login_failed(peer, member, address, packet)

    def _login_failed(
        self, peer: Peer, member: _Member, address: str, packet: Authenticate
    ) -> None:
        """Count the failure of `address` (a lockout after loginFailures within the window).
        The answer comes after loginFailureDelay (a timer: the lobby is not blocked)."""
        failure = self.logins.fail(address)
        if failure.locked_until is not None:
            log.warning(
                "admin login locked out: too many failures",
                address=address,
                failures=failure.failures,
                window_seconds=self.logins.window,
                seconds=self.logins.lockout,
            )
            self.timers.call_at(failure.locked_until, lambda: self._lockout_over(address))
        else:
            log.info("admin login failed", peer=peer.name, failures=failure.failures)
        error = ErrorPacket(
            f"{errors.AUTH_FAILED}: Failed to authenticate as administrator", packet
        )
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

    def _lockout_over(self, address: str) -> None:
        refused = self.logins.lockout_over(address)
        if refused is not None:  # else locked out again meanwhile: that lockout's timer reports
            log.info("admin login lockout over", address=address, refused=refused)

    def _require_admin(self, member: _Member, packet: ClientPacket) -> None:
        if not member.admin:
            raise ClientError(
                f"{errors.UNAUTHENTICATED}: Request {packet.java_repr()} requires authentication"
            )

    def _on_prepare(self, peer: Peer, member: _Member, packet: Prepare) -> None:
        self._require_admin(member, packet)
        check_prepare(packet)
        self._refuse_when_shutting_down()
        state = start_position(packet)
        room = self._create_room(prepared=True, paused=packet.pause, state=state)
        if packet.state is not None:
            log.info("room starts from a given position", room=room.id, turn=state.turn)
        for team, descriptor in zip((Team.ONE, Team.TWO), packet.slots, strict=False):
            slot = Slot(team, descriptor.display_name, descriptor.can_timeout, descriptor.reserved)
            room.slots.append(slot)
            if descriptor.reserved:
                code = random_uuid()
                self._reservations[code] = (room, slot)
                room.reservations.append(code)
        if not room.joinable:
            self._joinable.pop(room.id, None)
        room.feed_players()
        ttl = self.settings.reservation_ttl
        if ttl > 0:
            room.timer = self.timers.call_later(ttl, room.expire)
        peer.send(Prepared(room.id, tuple(room.reservations)))

    def _on_observe(self, peer: Peer, member: _Member, packet: Observe) -> None:
        self._require_admin(member, packet)
        room = self._room(packet.room_id)
        if peer not in room.observers:
            room.observers[peer] = None
            member.observing.append(room)
        peer.send(Observed(room.id))


def random_uuid() -> str:
    """`str(uuid.uuid4())` (16 random bytes, version 4, RFC 4122 variant), without the UUID
    object: a fifth of the time, three times a game (room id and reservation codes)."""
    digits = os.urandom(16).hex()
    # Version 4 in the 13th digit; variant bits 10 in the 17th (keeping its two low bits).
    variant = "89ab"[int(digits[16], 16) & 3]
    return f"{digits[:8]}-{digits[8:12]}-4{digits[13:16]}-{variant}{digits[17:20]}-{digits[20:]}"


def _address_of(peer: Peer) -> str:
    """The remote address failed logins are counted for (a connection's `address`; fakes in
    tests have only a name)."""
    address = getattr(peer, "address", None)
    return address if isinstance(address, str) and address else peer.name


def run_clock() -> Callable[[], float]:
    """The clock of the running trio run, readable from any thread (the web viewer's login
    runs in its own); trio.current_time itself outside a run."""
    try:
        return trio.lowlevel.current_clock().current_time
    except RuntimeError:
        return trio.current_time
