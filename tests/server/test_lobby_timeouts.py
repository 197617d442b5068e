"""Every lobby timer on trio's MockClock (autojump): soft and hard timeout, reservation expiry,
wall-clock limit, and shutdown."""

from __future__ import annotations

import json
import math
from pathlib import Path

import trio
import trio.testing

from engine import Team, ViolationKind
from protocol.events import (
    Authenticate,
    Join,
    JoinPrepared,
    MovePacket,
    Observe,
    Prepare,
    SlotDescriptor,
)
from protocol.messages import Left, Memento, MoveRequest, Prepared, ResultMessage, RoomError
from server.lobby import SHUTDOWN_REASON, wall_clock_reason
from tests.helpers.lobby import Harness, HarnessFactory, start_game


async def test_soft_timeout_ends_the_game_without_applying_the_move(
    make_harness: HarnessFactory, autojump_clock: trio.testing.MockClock
) -> None:
    harness, one, two, room_id = await start_game(make_harness)
    state = one.last_state()
    await trio.sleep(2.001)
    harness.move(one, room_id, state.legal_moves()[0])
    result = two.of(ResultMessage)[0].result
    assert result.winner is Team.TWO
    assert not result.regular
    assert result.reason == (
        "ONE hat fuer die Antwort auf die Zugaufforderung laenger als 2 Sekunden gebraucht."
    )
    assert one.last_state() == state  # no new state: the late move was dropped
    assert not one.of(RoomError)


async def test_a_move_at_exactly_the_soft_limit_is_in_time(
    make_harness: HarnessFactory, autojump_clock: trio.testing.MockClock
) -> None:
    harness, one, two, room_id = await start_game(make_harness)
    await trio.sleep(2.0)
    harness.move(one, room_id, one.last_state().legal_moves()[0])
    assert two.messages[-1] == MoveRequest(room_id)
    assert not two.of(ResultMessage)


async def test_move_time_counts_to_the_arrival_not_to_the_processing(
    make_harness: HarnessFactory, autojump_clock: trio.testing.MockClock
) -> None:
    harness, one, two, room_id = await start_game(make_harness)
    arrived = trio.current_time() + 1.5
    await trio.sleep(3)  # the server was busy; the packet had arrived long before
    harness.lobby.handle(one, MovePacket(room_id, one.last_state().legal_moves()[0]), arrived)
    assert two.messages[-1] == MoveRequest(room_id)


async def test_move_time_starts_when_the_request_left_the_server(
    make_harness: HarnessFactory, autojump_clock: trio.testing.MockClock
) -> None:
    harness: Harness = await make_harness()
    one, two = harness.peer("one"), harness.peer("two")
    one.hold_sent = True
    harness.send(one, Join())
    harness.send(two, Join())
    await trio.sleep(9)  # the request sat in the outgoing queue
    one.release_sent()
    await trio.sleep(9.5)  # 18.5 s after queueing, 9.5 s after sending: no hard timeout
    assert not two.of(ResultMessage)
    await trio.sleep(1)
    assert two.of(ResultMessage)[0].result.winner is Team.TWO


async def test_hard_timeout_ends_the_game(
    make_harness: HarnessFactory, autojump_clock: trio.testing.MockClock
) -> None:
    harness, one, two, room_id = await start_game(make_harness)
    start = trio.current_time()
    with trio.fail_after(60):
        while not two.of(ResultMessage):
            await trio.sleep(0.5)
    assert 10 <= trio.current_time() - start <= 10.5
    result = two.of(ResultMessage)[0].result
    assert result.winner is Team.TWO
    assert (
        result.reason == "ONE hat innerhalb von 2 Sekunden nach Aufforderung keinen Zug gesendet."
    )
    entries = [entry for entry, _ in result.scores]
    assert entries[0].violation is not None
    assert entries[0].violation.kind is ViolationKind.HARD_TIMEOUT
    await harness.settle()
    assert one.messages[-1:] == [Left(room_id)]
    # The late move now finds no room.
    harness.move(one, room_id, one.last_state().legal_moves()[0])
    assert "Couldn't find a room" in one.messages[-1].message  # type: ignore[union-attr]


async def test_the_hard_timeout_counts_from_each_request_after_many_quick_moves(
    make_harness: HarnessFactory, autojump_clock: trio.testing.MockClock
) -> None:
    """One timer per room stays armed across moves: after moves for longer than the hard
    timeout, the bot that stops still gets its full time from its own request, no more."""
    harness, one, two, room_id = await start_game(make_harness, hard_timeout=1)
    start = trio.current_time()
    while trio.current_time() - start < 3.3:  # three timer periods of quick moves
        for player in (one, two):
            await trio.sleep(0.15)
            state = player.last_state()
            if state.is_over:
                break
            harness.move(player, room_id, state.legal_moves()[0])
    assert not two.of(ResultMessage), "a timer of an earlier request ended the game"
    stopped = trio.current_time()
    with trio.fail_after(60):
        while not one.of(ResultMessage):
            await trio.sleep(0.01)
    assert 1 <= trio.current_time() - stopped <= 1.02
    entries = [entry for entry, _ in one.of(ResultMessage)[0].result.scores]
    assert entries[0].violation is not None
    assert entries[0].violation.kind is ViolationKind.HARD_TIMEOUT


async def test_configured_timeouts_apply(
    make_harness: HarnessFactory, autojump_clock: trio.testing.MockClock
) -> None:
    harness, one, two, room_id = await start_game(make_harness, soft_timeout=0.2, hard_timeout=1)
    await trio.sleep(0.1)
    harness.move(one, room_id, one.last_state().legal_moves()[0])
    assert two.messages[-1] == MoveRequest(room_id)
    await trio.sleep(1.01)
    result = one.of(ResultMessage)[0].result
    assert result.winner is Team.ONE
    assert "0.2 Sekunden" in result.reason


async def test_no_timeout_lets_players_think_forever(
    make_harness: HarnessFactory, autojump_clock: trio.testing.MockClock
) -> None:
    harness, one, two, room_id = await start_game(
        make_harness, timeout=False, game_wall_clock_limit=0
    )
    await trio.sleep(3600)
    assert not two.of(ResultMessage)
    harness.move(one, room_id, one.last_state().legal_moves()[0])
    assert two.messages[-1] == MoveRequest(room_id)


async def test_prepared_slot_can_timeout_overrides_the_setting(
    make_harness: HarnessFactory, autojump_clock: trio.testing.MockClock
) -> None:
    harness: Harness = await make_harness(timeout=True, game_wall_clock_limit=0)
    admin = harness.peer("admin")
    harness.send(admin, Authenticate("examplepassword"))
    slots = (SlotDescriptor("slow", False, True), SlotDescriptor("fast", True, True))
    harness.send(admin, Prepare(None, False, slots))
    prepared = admin.messages[-1]
    assert isinstance(prepared, Prepared)
    one, two = harness.peer("one"), harness.peer("two")
    harness.send(one, JoinPrepared(prepared.reservations[0]))
    harness.send(two, JoinPrepared(prepared.reservations[1]))
    await trio.sleep(100)
    harness.move(one, prepared.room_id, one.last_state().legal_moves()[0])
    assert two.messages[-1] == MoveRequest(prepared.room_id)
    await trio.sleep(10.5)
    assert one.of(ResultMessage)[0].result.winner is Team.ONE


async def test_unjoined_prepared_room_expires(
    make_harness: HarnessFactory, autojump_clock: trio.testing.MockClock
) -> None:
    harness: Harness = await make_harness(reservation_ttl=60)
    admin = harness.peer("admin")
    harness.send(admin, Authenticate("examplepassword"))
    slots = (SlotDescriptor("a", True, True), SlotDescriptor("b", True, True))
    harness.send(admin, Prepare(None, True, slots))
    prepared = admin.messages[-1]
    assert isinstance(prepared, Prepared)
    harness.send(admin, Observe(prepared.room_id))
    one = harness.peer("one")
    harness.send(one, JoinPrepared(prepared.reservations[0]))
    await trio.sleep(59)
    assert not admin.of(ResultMessage)
    await trio.sleep(2)
    result = admin.of(ResultMessage)[0].result
    assert result.winner is Team.ONE
    assert result.reason == "b hat das Spiel verlassen: NOT_CONNECTED"
    assert one.of(ResultMessage)[0] == admin.of(ResultMessage)[0]
    await harness.settle()
    assert admin.messages[-1] == Left(prepared.room_id)
    late = harness.peer("late")
    harness.send(late, JoinPrepared(prepared.reservations[1]))
    assert "Couldn't find a reservation" in late.messages[0].message  # type: ignore[union-attr]


async def test_started_game_is_not_expired_by_the_reservation_ttl(
    make_harness: HarnessFactory, autojump_clock: trio.testing.MockClock
) -> None:
    harness: Harness = await make_harness(reservation_ttl=60, timeout=False)
    admin = harness.peer("admin")
    harness.send(admin, Authenticate("examplepassword"))
    slots = (SlotDescriptor("a", False, True), SlotDescriptor("b", False, True))
    harness.send(admin, Prepare(None, False, slots))
    prepared = admin.messages[-1]
    assert isinstance(prepared, Prepared)
    one, two = harness.peer("one"), harness.peer("two")
    harness.send(one, JoinPrepared(prepared.reservations[0]))
    harness.send(two, JoinPrepared(prepared.reservations[1]))
    await trio.sleep(120)
    assert not one.of(ResultMessage)


async def test_wall_clock_limit_aborts_a_silent_game(
    make_harness: HarnessFactory, autojump_clock: trio.testing.MockClock
) -> None:
    harness, one, two, room_id = await start_game(
        make_harness, timeout=False, game_wall_clock_limit=300
    )
    await trio.sleep(299)
    assert not one.of(ResultMessage)
    await trio.sleep(2)
    result = one.of(ResultMessage)[0].result
    assert result.winner is None
    assert not result.regular
    assert result.reason == wall_clock_reason(300)
    assert [score for _, score in result.scores] == [(0, 0), (0, 0)]
    await harness.settle()
    assert two.messages[-1] == Left(room_id)


async def test_shutdown_ends_every_room_with_a_recorded_result(
    make_harness: HarnessFactory, tmp_path: Path
) -> None:
    results_file = tmp_path / "results.jsonl"
    harness, one, two, room_id = await start_game(make_harness, results_file=results_file)
    waiting = harness.peer("waiting")
    harness.send(waiting, Join())
    harness.move(one, room_id, one.last_state().legal_moves()[0])
    with trio.fail_after(5):
        await harness.lobby.shutdown()
    assert harness.lobby.rooms == {}
    for peer in (one, two, waiting):
        result_message, left = peer.messages[-2:]
        assert isinstance(result_message, ResultMessage)
        assert result_message.result.reason == SHUTDOWN_REASON
        assert not result_message.result.regular
        assert isinstance(left, Left)
    records = [json.loads(line) for line in results_file.read_text().splitlines()]
    assert {record["room"] for record in records} == set(
        {room_id, waiting.messages[0].room_id}  # type: ignore[union-attr]
    )
    game = next(record for record in records if record["room"] == room_id)
    assert game["end"] == "shutdown"
    assert len(game["moves"]) == 1
    # No new games after the shutdown began.
    late = harness.peer("late")
    harness.send(late, Join())
    assert "shutting down" in late.messages[0].message  # type: ignore[union-attr]
    # Mementos seen by players so far all came before the result.
    assert isinstance(one.messages[-3], Memento | MoveRequest)


async def test_a_move_is_timed_from_its_request_never_below_zero(
    make_harness: HarnessFactory, autojump_clock: trio.testing.MockClock
) -> None:
    """Bytes stamped before the request was seen leaving count as an instant answer (0.0 ms,
    positive zero); later ones by their arrival after it."""
    harness, one, two, room_id = await start_game(make_harness)
    room = harness.lobby.rooms[room_id]
    sent = trio.current_time()
    harness.lobby.handle(one, MovePacket(room_id, one.last_state().legal_moves()[0]), sent - 1)
    assert room.move_ms == [0.0] and math.copysign(1.0, room.move_ms[0]) == 1.0
    await trio.sleep(0.25)
    arrived = trio.current_time()
    await trio.sleep(1)  # handled later than it arrived: timed to its arrival
    harness.lobby.handle(two, MovePacket(room_id, two.last_state().legal_moves()[0]), arrived)
    assert room.move_ms == [0.0, 250.0]
