"""Conformance audit of the lobby against the official server 26.1.0 (§3–§5): the order
in which players and observers get each message, what observers do and do not see, the order
of the move checks (§5.3), pause/step/observe edge cases and the ends of games that never
started. The lobby is driven with fake peers that write into one shared log, so the order
*across* receivers is checked, not only each receiver's own sequence."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import trio
import trio.testing

from engine import Direction, GameState, Move, Team, ViolationKind
from protocol import ServerConnection
from protocol.events import (
    GAME_TYPE,
    Authenticate,
    CancelRequest,
    Join,
    JoinPrepared,
    JoinRoom,
    MovePacket,
    Observe,
    PauseRequest,
    Prepare,
    RoomDataPacket,
    SlotDescriptor,
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
from server.lobby import DisconnectCause
from tests.helpers.lobby import FakePeer, Harness, HarnessFactory, result_of

PASSWORD = "secret"

Log = list[tuple[str, ServerMessage]]


class LoggedPeer(FakePeer):
    """A fake peer that also appends (name, message) to a log shared by all peers."""

    def __init__(self, name: str, log: Log) -> None:
        super().__init__(name)
        self.log = log

    def send(self, message: ServerMessage, on_sent: Callable[[float], None] | None = None) -> None:
        self.log.append((self.name, message))
        super().send(message, on_sent)


class World:
    """A running lobby, an authenticated admin and a shared message log."""

    def __init__(self, harness: Harness) -> None:
        self.harness = harness
        self.lobby = harness.lobby
        self.log: Log = []
        self.admin = self.peer("admin")
        self.send(self.admin, Authenticate(PASSWORD))

    def peer(self, name: str) -> LoggedPeer:
        peer = LoggedPeer(name, self.log)
        self.lobby.connect(peer)
        return peer

    def send(self, peer: FakePeer, packet: object) -> None:
        self.lobby.handle(peer, packet, trio.current_time())  # type: ignore[arg-type]

    def move(self, peer: FakePeer, room_id: str, move: Move) -> None:
        self.send(peer, MovePacket(room_id, move))

    def prepare(
        self, *, pause: bool = False, names: tuple[str, ...] = ("a", "b")
    ) -> tuple[str, tuple[str, ...]]:
        slots = tuple(SlotDescriptor(name, True, True) for name in names)
        self.send(self.admin, Prepare(GAME_TYPE, pause, slots))
        prepared = self.admin.messages[-1]
        assert isinstance(prepared, Prepared)
        return prepared.room_id, prepared.reservations

    def since(self, mark: int) -> Log:
        return self.log[mark:]


async def world(make_harness: HarnessFactory, **settings: Any) -> World:
    harness: Harness = await make_harness(password=PASSWORD, **settings)
    return World(harness)


async def observed_join_game(
    make_harness: HarnessFactory, **settings: Any
) -> tuple[World, LoggedPeer, LoggedPeer, str]:
    """Two <join> players; the admin observes the room after the first join."""
    w = await world(make_harness, **settings)
    one, two = w.peer("one"), w.peer("two")
    w.send(one, Join())
    room_id = one.of(Joined)[0].room_id
    w.send(w.admin, Observe(room_id))
    w.send(two, Join())
    return w, one, two, room_id


def last_move_state(seed: int = 2) -> GameState:
    """A state from which the first legal move ends the game (turn 59)."""
    state = GameState.initial(seed=seed)
    while True:
        after = state.apply(state.legal_moves()[0])
        if after.is_over:
            return state
        state = after


# ---------------------------------------------------------------- §4: who gets what, in which order


async def test_join_game_sequence_across_players_observer_and_admins(
    make_harness: HarnessFactory,
) -> None:
    # §4.1 rows 2–8: joined, welcomes, memento to observers before players, moveRequest,
    # joinedGameRoom after the start; then per move memento (observer, ONE, TWO), request.
    w = await world(make_harness)
    one, two = w.peer("one"), w.peer("two")
    w.send(one, Join())
    room_id = one.of(Joined)[0].room_id
    w.send(w.admin, Observe(room_id))
    mark = len(w.log)
    w.send(two, Join())
    initial = one.last_state()
    assert w.since(mark) == [
        ("two", Joined(room_id)),
        ("one", WelcomeMessage(room_id, Team.ONE)),
        ("two", WelcomeMessage(room_id, Team.TWO)),
        ("admin", Memento(room_id, initial)),
        ("one", Memento(room_id, initial)),
        ("two", Memento(room_id, initial)),
        ("one", MoveRequest(room_id)),
        ("admin", JoinedGameRoom(room_id, 2)),
    ]
    mark = len(w.log)
    w.move(one, room_id, initial.legal_moves()[0])
    after = one.last_state()
    assert w.since(mark) == [
        ("admin", Memento(room_id, after)),
        ("one", Memento(room_id, after)),
        ("two", Memento(room_id, after)),
        ("two", MoveRequest(room_id)),
    ]


async def test_game_end_sends_final_memento_then_result_then_left_players_first(
    make_harness: HarnessFactory,
) -> None:
    # §4.1 rows n..n+2 and §4: memento observers first; result and left players first.
    w, one, two, room_id = await observed_join_game(make_harness, start_state=last_move_state())
    state = one.last_state()
    assert state.current_team is Team.TWO  # turn 59
    mark = len(w.log)
    w.move(two, room_id, state.legal_moves()[0])
    await w.harness.settle()
    final = one.last_state()
    assert final.is_over
    result = result_of(one)
    assert w.since(mark) == [
        ("admin", Memento(room_id, final)),
        ("one", Memento(room_id, final)),
        ("two", Memento(room_id, final)),
        ("one", result),
        ("two", result),
        ("admin", result),
        ("one", Left(room_id)),
        ("two", Left(room_id)),
        ("admin", Left(room_id)),
    ]
    assert result.result.regular


async def test_rule_violation_error_goes_to_the_mover_then_observers_only(
    make_harness: HarnessFactory,
) -> None:
    # §5.3 outcomes table / GameRoom.onEvent: player.notifyListeners, then observerBroadcast.
    w, one, two, room_id = await observed_join_game(make_harness)
    mark = len(w.log)
    move = Move(0, 0, Direction.UP)  # an empty corner
    w.move(one, room_id, move)
    error = one.of(RoomError)[0]
    result = result_of(two)
    assert w.since(mark) == [
        ("one", error),
        ("admin", error),
        ("one", result),
        ("two", result),
        ("admin", result),
    ]


async def test_process_violation_error_goes_to_the_mover_only(make_harness: HarnessFactory) -> None:
    w, one, two, room_id = await observed_join_game(make_harness)
    mark = len(w.log)
    w.move(two, room_id, Move(1, 0, Direction.UP))  # ONE is to move
    error = two.of(RoomError)[0]
    assert error.message.startswith("It's not your turn yet; expected: ONE(), got TWO()")
    result = result_of(one)
    assert w.since(mark) == [("two", error), ("one", result), ("two", result), ("admin", result)]


async def test_observer_gets_no_state_on_observe_and_never_welcome_or_requests(
    make_harness: HarnessFactory,
) -> None:
    # §3.4: no state on observe; §5.4: observers get mementos, result, left only.
    w, one, two, room_id = await observed_join_game(make_harness)
    late = w.peer("late")
    w.send(late, Authenticate(PASSWORD))
    w.send(late, Observe(room_id))
    assert late.messages == [Observed(room_id)]
    peers = {Team.ONE: one, Team.TWO: two}
    for _ in range(4):
        state = one.last_state()
        w.move(peers[state.current_team], room_id, state.legal_moves()[0])
    w.send(w.admin, CancelRequest(room_id))
    await w.harness.settle()
    kinds = {type(message) for message in late.messages}
    assert kinds == {Observed, Memento, ResultMessage, Left}
    assert [m.state.turn for m in late.of(Memento)] == [1, 2, 3, 4]
    assert late.messages[-2:] == [result_of(one), Left(room_id)]
    # The admin observed before the start: it has every state, and no player-only message.
    assert [m.state.turn for m in w.admin.of(Memento)] == [0, 1, 2, 3, 4]
    assert not w.admin.of(WelcomeMessage) and not w.admin.of(MoveRequest)


async def test_joined_game_room_only_follows_a_plain_join(make_harness: HarnessFactory) -> None:
    # §3.2: joinRoom and joinPrepared never produce joinedGameRoom.
    w = await world(make_harness)
    room_id, (first, second) = w.prepare()
    one, two = w.peer("one"), w.peer("two")
    w.send(one, JoinPrepared(first))
    w.send(two, JoinPrepared(second))
    x, y = w.peer("x"), w.peer("y")
    w.send(x, Join())
    join_room = x.of(Joined)[0].room_id
    assert w.admin.messages[-1] == JoinedGameRoom(join_room, 1)
    w.send(y, JoinRoom(join_room))
    assert y.of(WelcomeMessage) == [WelcomeMessage(join_room, Team.TWO)]
    assert w.admin.of(JoinedGameRoom) == [JoinedGameRoom(join_room, 1)]
    assert room_id != join_room


# ---------------------------------------------------------------- §4.2/§4.3: pause and step


async def test_pause_during_a_pending_request_then_unpause(make_harness: HarnessFactory) -> None:
    # §4.3 (RequestTest.kt pauseRequest).
    w, one, two, room_id = await observed_join_game(make_harness)
    mark = len(w.log)
    w.send(w.admin, PauseRequest(room_id, True))
    assert w.since(mark) == [("admin", Paused(room_id, True))]  # observers only
    initial = one.last_state()
    mark = len(w.log)
    w.move(one, room_id, initial.legal_moves()[0])  # the pending request is still valid
    after = w.admin.last_state()
    assert after.turn == 1
    assert w.since(mark) == [("admin", Memento(room_id, after))]
    mark = len(w.log)
    w.send(w.admin, PauseRequest(room_id, False))
    assert w.since(mark) == [
        ("admin", Paused(room_id, False)),
        ("admin", Memento(room_id, after)),
        ("one", Memento(room_id, after)),
        ("two", Memento(room_id, after)),
        ("two", MoveRequest(room_id)),
    ]
    assert not one.of(Paused) and not two.of(Paused)


async def test_step_mode_sends_each_state_twice_to_observers(make_harness: HarnessFactory) -> None:
    # §4.2 step 4: step → memento to all + request; after the move, memento to observers only.
    w = await world(make_harness)
    room_id, (first, second) = w.prepare(pause=True)
    w.send(w.admin, Observe(room_id))
    one, two = w.peer("one"), w.peer("two")
    w.send(one, JoinPrepared(first))
    mark = len(w.log)
    w.send(two, JoinPrepared(second))
    initial = w.admin.last_state()
    assert w.since(mark) == [
        ("two", Joined(room_id)),
        ("one", WelcomeMessage(room_id, Team.ONE)),
        ("two", WelcomeMessage(room_id, Team.TWO)),
        ("admin", Memento(room_id, initial)),
    ]
    peers = {Team.ONE: one, Team.TWO: two}
    state = initial
    for _ in range(3):
        mark = len(w.log)
        w.send(w.admin, StepRequest(room_id, False))
        mover = peers[state.current_team]
        assert w.since(mark) == [
            ("admin", Memento(room_id, state)),
            ("one", Memento(room_id, state)),
            ("two", Memento(room_id, state)),
            (mover.name, MoveRequest(room_id)),
        ]
        mark = len(w.log)
        w.move(mover, room_id, state.legal_moves()[0])
        state = w.admin.last_state()
        assert w.since(mark) == [("admin", Memento(room_id, state))]
    assert state.turn == 3


async def test_game_ending_while_paused_sends_the_final_state_to_observers_only(
    make_harness: HarnessFactory,
) -> None:
    # §4.2 step 5.
    w = await world(make_harness, paused=True, start_state=last_move_state())
    one, two = w.peer("one"), w.peer("two")
    w.send(one, Join())
    room_id = one.of(Joined)[0].room_id
    w.send(w.admin, Observe(room_id))
    w.send(two, Join())
    # server.properties paused=true: a <join> room starts paused (§5.1); nothing for players,
    # and the pause was set at creation, before any observer: no paused message (§5.4).
    assert not one.of(Memento) and not two.of(Memento)
    assert not w.admin.of(Paused)
    state = w.admin.last_state()
    w.send(w.admin, StepRequest(room_id, False))
    assert two.messages[-1] == MoveRequest(room_id)
    mark = len(w.log)
    w.move(two, room_id, state.legal_moves()[0])
    await w.harness.settle()
    final = w.admin.last_state()
    assert final.is_over
    result = result_of(one)
    assert w.since(mark) == [
        ("admin", Memento(room_id, final)),
        ("one", result),
        ("two", result),
        ("admin", result),
        ("one", Left(room_id)),
        ("two", Left(room_id)),
        ("admin", Left(room_id)),
    ]


async def test_pause_and_step_are_ignored_when_they_change_nothing(
    make_harness: HarnessFactory,
) -> None:
    # §5.4: pause to the current state → nothing; step on an unpaused running game → nothing;
    # unforced step before the start → nothing.
    w, one, _two, room_id = await observed_join_game(make_harness)
    mark = len(w.log)
    w.send(w.admin, PauseRequest(room_id, False))
    w.send(w.admin, StepRequest(room_id, False))
    w.send(w.admin, StepRequest(room_id, True))
    assert w.since(mark) == []
    prepared_id, _ = w.prepare()
    w.send(w.admin, Observe(prepared_id))
    mark = len(w.log)
    w.send(w.admin, StepRequest(prepared_id, False))
    assert w.since(mark) == []
    assert one.messages[-1] == MoveRequest(room_id)


async def test_pause_on_a_game_that_is_over_is_ignored(make_harness: HarnessFactory) -> None:
    w, one, _two, room_id = await observed_join_game(make_harness)
    w.lobby.disconnect(one, DisconnectCause.LOST_CONNECTION)
    # Over, still being recorded (the official race window): the pause changes nothing.
    assert room_id in w.lobby.rooms
    mark = len(w.log)
    w.send(w.admin, PauseRequest(room_id, True))
    assert w.since(mark) == []
    await w.harness.settle()
    w.send(w.admin, PauseRequest(room_id, True))
    (error,) = w.admin.of(ErrorPacket)
    assert error.message.endswith(f"Couldn't find a room with id {room_id}")


async def test_unpausing_a_prepared_room_before_the_start_only_tells_observers(
    make_harness: HarnessFactory, autojump_clock: trio.testing.MockClock
) -> None:
    # Intentional difference: 26.1.0's setter calls step() here, which requests a move from
    # a player who is not there yet (its hard timeout then ends the unstarted room). We only
    # flip the flag: observers get paused=false and the game later starts unpaused (§4.1).
    w = await world(make_harness)
    room_id, (first, second) = w.prepare(pause=True)
    w.send(w.admin, Observe(room_id))
    mark = len(w.log)
    w.send(w.admin, PauseRequest(room_id, False))
    assert w.since(mark) == [("admin", Paused(room_id, False))]
    await trio.sleep(30)  # longer than the hard timeout: nothing happens
    assert w.since(mark) == [("admin", Paused(room_id, False))]
    one, two = w.peer("one"), w.peer("two")
    w.send(one, JoinPrepared(first))
    w.send(two, JoinPrepared(second))
    assert one.messages[-1] == MoveRequest(room_id)


async def test_a_pause_does_not_stop_the_pending_move_timer(
    make_harness: HarnessFactory, autojump_clock: trio.testing.MockClock
) -> None:
    # §5.6 last point.
    w, one, two, room_id = await observed_join_game(make_harness)
    w.send(w.admin, PauseRequest(room_id, True))
    await trio.sleep(10.5)
    result = result_of(two).result
    assert result.winner is Team.TWO
    assert result.reason == (
        "ONE hat innerhalb von 2 Sekunden nach Aufforderung keinen Zug gesendet."
    )
    assert one.last_state().turn == 0


# ---------------------------------------------------------------- §5.3: move checks in order


async def test_move_checks_run_in_the_official_order(make_harness: HarnessFactory) -> None:
    # §5.3 step 1: room, then OVER, then membership. A stranger's move to an over room is
    # "already over", not "not a member".
    w, one, _two, room_id = await observed_join_game(make_harness)
    stranger = w.peer("stranger")
    move = Move(0, 1, Direction.RIGHT)
    w.send(one, RoomDataPacket("nope", "moveRequest", ""))  # the room before the data class
    assert one.of(ErrorPacket)[-1].message.endswith("Couldn't find a room with id nope")
    w.move(stranger, room_id, move)
    assert stranger.of(ErrorPacket)[-1].message.endswith(f"not a member of game {room_id}")
    w.lobby.disconnect(one, DisconnectCause.LOST_CONNECTION)
    w.move(stranger, room_id, move)
    assert stranger.of(ErrorPacket)[-1].message == (
        f"sc.api.plugins.exceptions.GameException: Game is already over, but got {move}"
    )


async def test_not_your_turn_also_applies_while_paused(make_harness: HarnessFactory) -> None:
    # §5.3 step 2: the turn is checked before whether a move was requested.
    w = await world(make_harness, paused=True)
    one, two = w.peer("one"), w.peer("two")
    w.send(one, Join())
    w.send(two, Join())
    room_id = one.of(Joined)[0].room_id
    move = Move(1, 0, Direction.UP)
    w.move(two, room_id, move)
    (error,) = two.of(RoomError)
    assert error.message == f"It's not your turn yet; expected: ONE(), got TWO() (msg was {move})."
    assert result_of(one).result.winner is Team.ONE


async def test_a_move_before_the_start_of_a_prepared_game(make_harness: HarnessFactory) -> None:
    # §5.3 applies before the start too (AbstractGame.onAction knows no room status), and the
    # violation ends the room with cancel(): the slot nobody joined is LEFT(NOT_CONNECTED),
    # so nobody wins.
    w = await world(make_harness)
    room_id, (_first, second) = w.prepare(names=("alice", "bob"))
    w.send(w.admin, Observe(room_id))
    two = w.peer("two")
    w.send(two, JoinPrepared(second))
    move = Move(1, 0, Direction.UP)
    w.move(two, room_id, move)
    message = f"It's not your turn yet; expected: ONE(alice), got TWO(bob) (msg was {move})."
    assert two.of(RoomError) == [RoomError(room_id, message, move)]
    result = result_of(w.admin).result
    entries = [entry for entry, _ in result.scores]
    assert [e.violation.kind if e.violation else None for e in entries] == [
        ViolationKind.LEFT,
        ViolationKind.PROCESS_VIOLATION,
    ]
    assert result.winner is None and not result.regular
    assert result.reason == "Alle Spieler hat das Spiel verlassen: NOT_CONNECTED"
    assert [score for _, score in result.scores] == [(0, 0), (0, 0)]


async def test_a_move_from_the_lone_player_of_a_join_room_is_not_requested(
    make_harness: HarnessFactory,
) -> None:
    w = await world(make_harness)
    one = w.peer("one")
    w.send(one, Join())
    room_id = one.of(Joined)[0].room_id
    move = Move(0, 1, Direction.RIGHT)
    w.move(one, room_id, move)
    assert one.of(RoomError) == [
        RoomError(room_id, "Move from ONE() has not been requested.", move)
    ]
    result = result_of(one).result
    assert len(result.scores) == 1
    assert result.winner is None and not result.regular
    assert result.reason == (
        "Missachtung des Spielablaufs von Alle Spieler: Move from ONE() has not been requested."
    )


# ---------------------------------------------------------------- §5.5: disconnects


async def test_one_connection_in_both_slots_leaving_makes_the_first_filled_slot_the_leaver(
    make_harness: HarnessFactory,
) -> None:
    # Official: each slot listens to the connection in fill order; the first removePlayer
    # ends the game, so the other slot has no violation yet and wins.
    w = await world(make_harness)
    room_id, (first, second) = w.prepare(names=("a", "b"))
    w.send(w.admin, Observe(room_id))
    both = w.peer("both")
    w.send(both, JoinPrepared(second))
    w.send(both, JoinPrepared(first))
    w.lobby.disconnect(both, DisconnectCause.LOST_CONNECTION)
    result = result_of(w.admin).result
    assert result.winner is Team.ONE
    assert result.reason == "b hat das Spiel verlassen: LOST_CONNECTION"
    assert [score for _, score in result.scores][1] == (0, 0)


@pytest.mark.parametrize(
    "cause",
    [
        DisconnectCause.RECEIVED_DISCONNECT,
        DisconnectCause.LOST_CONNECTION,
        DisconnectCause.PROTOCOL_ERROR,
    ],
)
async def test_a_leaver_is_named_with_its_cause_and_scores_nothing(
    make_harness: HarnessFactory, cause: DisconnectCause
) -> None:
    # §5.5 / §6.3: the other player gets [2, own swarm], the leaver [0, 0].
    w, one, two, _room_id = await observed_join_game(make_harness)
    state = one.last_state()
    w.lobby.disconnect(two, cause)
    result = result_of(one).result
    assert result.reason == f"TWO hat das Spiel verlassen: {cause}"
    assert [score for _, score in result.scores] == [
        (2, state.greatest_swarm_weight(Team.ONE)),
        (0, 0),
    ]
    assert not result.regular
    assert not two.of(ResultMessage)


# ---------------------------------------------------------------- §5.2: prepared rooms


async def test_prepared_rooms_use_neither_the_paused_setting_nor_the_load_game_file(
    make_harness: HarnessFactory,
) -> None:
    # §5.2 first point: <prepare> takes its own pause flag and a fresh board.
    loaded = last_move_state()
    w = await world(make_harness, paused=True, start_state=loaded)
    room_id, (first, second) = w.prepare(pause=False)
    one, two = w.peer("one"), w.peer("two")
    w.send(one, JoinPrepared(first))
    w.send(two, JoinPrepared(second))
    state = one.last_state()
    assert state.turn == 0 and state != loaded
    assert one.messages[-1] == MoveRequest(room_id)


async def test_prepared_room_with_a_reserved_and_an_open_slot(make_harness: HarnessFactory) -> None:
    # LobbyGameTest "prepared with descriptors": one reservation; joinRoom fills the open
    # slot 1; the reserved slot 0 stays empty but not free; zero reservations would give
    # an empty <prepared/>.
    w = await world(make_harness)
    slots = (SlotDescriptor("reserved", True, True), SlotDescriptor("open", True, False))
    w.send(w.admin, Prepare(None, False, slots))
    prepared = w.admin.messages[-1]
    assert isinstance(prepared, Prepared)
    room_id = prepared.room_id
    assert len(prepared.reservations) == 1
    walk_in, late = w.peer("walk_in"), w.peer("late")
    w.send(walk_in, JoinRoom(room_id))
    assert walk_in.messages == [Joined(room_id)]
    w.send(late, JoinRoom(room_id))
    assert late.of(ErrorPacket)[0].message.endswith(f"Room {room_id} is already full!")
    # A plain <join> does not take the reserved slot either: it opens a new room.
    w.send(late, Join())
    assert late.of(Joined)[0].room_id != room_id
    holder = w.peer("holder")
    w.send(holder, JoinPrepared(prepared.reservations[0]))
    assert holder.of(WelcomeMessage) == [WelcomeMessage(room_id, Team.ONE)]
    assert walk_in.of(WelcomeMessage) == [WelcomeMessage(room_id, Team.TWO)]

    w.send(w.admin, Prepare(None, True, (SlotDescriptor("x"), SlotDescriptor("y"))))
    empty = w.admin.messages[-1]
    assert isinstance(empty, Prepared) and empty.reservations == ()
    rendered = ServerConnection().send(empty)
    assert rendered.endswith(f'\n  <prepared roomId="{empty.room_id}"/>'.encode())


async def test_a_plain_join_takes_the_open_slot_of_a_prepared_room(
    make_harness: HarnessFactory,
) -> None:
    # §5.1 step 1: <join> tries every room; a prepared slot with reserved=false is free.
    w = await world(make_harness)
    slots = (SlotDescriptor("reserved", True, True), SlotDescriptor("open", True, False))
    w.send(w.admin, Prepare(None, False, slots))
    prepared = w.admin.messages[-1]
    assert isinstance(prepared, Prepared)
    walk_in = w.peer("walk_in")
    w.send(walk_in, Join())
    assert walk_in.messages == [Joined(prepared.room_id)]
    assert w.admin.messages[-1] == JoinedGameRoom(prepared.room_id, 1)
    holder = w.peer("holder")
    w.send(holder, JoinPrepared(prepared.reservations[0]))
    assert walk_in.of(WelcomeMessage) == [WelcomeMessage(prepared.room_id, Team.TWO)]
    assert w.admin.of(JoinedGameRoom) == [JoinedGameRoom(prepared.room_id, 1)]


async def test_a_second_step_while_a_request_is_pending_is_ignored(
    make_harness: HarnessFactory,
) -> None:
    # §5.4: 26.1.0 has no guard against a step while a request is pending (Lobby.kt TODO) and
    # sends the state and the request again, which a bot that answers both pays for with "not
    # your turn". A deliberate difference: the second step sends nothing; the move is accepted.
    w = await world(make_harness)
    room_id, (first, second) = w.prepare(pause=True)
    w.send(w.admin, Observe(room_id))
    one, two = w.peer("one"), w.peer("two")
    w.send(one, JoinPrepared(first))
    w.send(two, JoinPrepared(second))
    w.send(w.admin, StepRequest(room_id, False))
    initial = one.last_state()
    mark = len(w.log)
    w.send(w.admin, StepRequest(room_id, False))
    assert w.since(mark) == []
    w.move(one, room_id, initial.legal_moves()[0])
    assert w.admin.last_state().turn == 1
    assert not one.of(RoomError) and not w.admin.of(ResultMessage)
