"""The lobby state machine with fake peers (§4, §5, §6): joins, game flow, violations."""

from __future__ import annotations

import json
from pathlib import Path

import trio
import trio.testing

from engine import Direction, GameState, Move, MoveMistake, Team
from protocol import GAME_TYPE
from protocol.events import (
    Authenticate,
    Join,
    JoinRoom,
    MovePacket,
    Observe,
    ResponsePacket,
    RoomDataPacket,
)
from protocol.messages import (
    ErrorPacket,
    Joined,
    JoinedGameRoom,
    Left,
    Memento,
    MoveRequest,
    ResultMessage,
    RoomError,
    WelcomeMessage,
)
from protocol.replay import read_replay
from server.lobby import DisconnectCause
from tests.helpers.lobby import Harness, HarnessFactory, result_of, start_game

PASSWORD = "secret"


async def test_join_creates_room_and_second_join_starts_the_game(
    make_harness: HarnessFactory,
) -> None:
    harness: Harness = await make_harness(password=PASSWORD)
    admin, one, two = harness.peer("admin"), harness.peer("one"), harness.peer("two")
    harness.send(admin, Authenticate(PASSWORD))
    harness.send(one, Join())
    room_id = one.messages[0].room_id  # type: ignore[union-attr]
    assert one.messages == [Joined(room_id)]
    assert admin.messages == [JoinedGameRoom(room_id, 1)]

    harness.send(two, Join(GAME_TYPE))
    state = one.last_state()
    assert state.turn == 0
    assert one.messages[1:] == [
        WelcomeMessage(room_id, Team.ONE),
        Memento(room_id, state),
        MoveRequest(room_id),
    ]
    assert two.messages == [
        Joined(room_id),
        WelcomeMessage(room_id, Team.TWO),
        Memento(room_id, state),
    ]
    # joinedGameRoom goes out after the game start (docs/protocol.md §3.2, §4.1 row 6).
    assert admin.messages[1:] == [JoinedGameRoom(room_id, 2)]


async def test_third_player_gets_a_new_room(make_harness: HarnessFactory) -> None:
    harness, _one, _, room_id = await start_game(make_harness)
    three = harness.peer("three")
    harness.send(three, Join())
    (joined,) = three.messages
    assert isinstance(joined, Joined)
    assert joined.room_id != room_id
    assert set(harness.lobby.rooms) == {room_id, joined.room_id}


async def test_unknown_game_type_is_refused_with_the_known_types(
    make_harness: HarnessFactory,
) -> None:
    harness: Harness = await make_harness()
    peer = harness.peer("p")
    harness.send(peer, Join("swc_2025_hase_und_igel"))
    (error,) = peer.messages
    assert isinstance(error, ErrorPacket)
    assert "swc_2025_hase_und_igel" in error.message
    assert GAME_TYPE in error.message
    assert error.original_request == Join("swc_2025_hase_und_igel")
    assert harness.lobby.rooms == {}


async def test_load_game_file_state_starts_join_rooms(make_harness: HarnessFactory) -> None:
    start = GameState.initial(seed=7).apply(GameState.initial(seed=7).legal_moves()[0])
    _harness, one, two, _ = await start_game(make_harness, start_state=start)
    assert one.last_state() == start
    # turn 1: TWO is to move, so only TWO is asked.
    assert not one.of(MoveRequest)
    assert len(two.of(MoveRequest)) == 1


async def test_full_game_alternates_requests_and_ends_with_result_and_left(
    make_harness: HarnessFactory, tmp_path: Path
) -> None:
    results_file = tmp_path / "results.jsonl"
    harness, one, two, room_id = await start_game(make_harness, results_file=results_file)
    peers = {Team.ONE: one, Team.TWO: two}
    moves = 0
    while room_id in harness.lobby.rooms and not one.of(ResultMessage):
        state = one.last_state()
        mover = peers[state.current_team]
        assert mover.messages[-1] == MoveRequest(room_id)
        assert peers[state.current_team.opponent].messages[-1] == Memento(room_id, state)
        harness.move(mover, room_id, state.legal_moves()[0])
        moves += 1
    final = one.last_state()
    assert final.is_over
    assert two.last_state() == final
    await harness.settle()
    for peer in (one, two):
        assert peer.messages[-3:] == [Memento(room_id, final), result_of(peer), Left(room_id)]
    result = result_of(one).result
    assert result.regular
    assert room_id not in harness.lobby.rooms
    (line,) = results_file.read_text().splitlines()
    record = json.loads(line)
    assert record["room"] == room_id
    assert len(record["moves"]) == moves == final.turn
    assert len(record["moveMs"]) == moves
    assert record["regular"] is True
    assert record["reason"] == result.reason


async def test_left_connection_is_not_closed_by_the_server(make_harness: HarnessFactory) -> None:
    harness, one, two, room_id = await start_game(make_harness)
    harness.send(harness.peer("admin"), Authenticate("examplepassword"))
    admin = next(iter(harness.lobby._admins))
    harness.send(admin, Observe(room_id))  # type: ignore[arg-type]
    harness.move(two, room_id, Move(1, 0, Direction.UP))  # not TWO's turn
    await harness.settle()
    assert one.messages[-1] == Left(room_id)
    assert not one.closed and not two.closed


async def test_rule_violation_sends_room_error_to_mover_and_observers(
    make_harness: HarnessFactory,
) -> None:
    harness, one, two, room_id = await start_game(make_harness)
    observer = harness.peer("observer")
    harness.send(observer, Authenticate("examplepassword"))
    harness.send(observer, Observe(room_id))
    move = Move(0, 0, Direction.UP)  # a corner: always empty at the start
    harness.move(one, room_id, move)
    expected_error = RoomError(
        room_id,
        f"Ungueltiger Zug von ''.\nInvalidMoveException(mistake=WRONG_START, move={move})",
        move,
    )
    assert one.of(RoomError) == [expected_error]
    assert observer.of(RoomError) == [expected_error]
    assert two.of(RoomError) == []
    result = result_of(two).result
    assert result.winner is Team.TWO
    assert not result.regular
    assert result.reason == (
        f"Regelverletzung von ONE: {MoveMistake.WRONG_START.message} bei '{move}'"
    )
    assert next(score for _, score in result.scores) == (0, 0)
    assert result_of(one) == result_of(observer)


async def test_start_outside_the_board_is_a_rule_violation(make_harness: HarnessFactory) -> None:
    harness, one, two, room_id = await start_game(make_harness)
    move = Move(-1, 42, Direction.RIGHT)
    harness.move(one, room_id, move)
    (error,) = one.of(RoomError)
    assert "START_OUT_OF_BOUNDS" in error.message
    assert result_of(two).result.winner is Team.TWO


async def test_not_your_turn_is_a_process_violation(make_harness: HarnessFactory) -> None:
    harness, one, two, room_id = await start_game(make_harness)
    move = Move(1, 0, Direction.UP)
    harness.move(two, room_id, move)
    message = f"It's not your turn yet; expected: ONE(), got TWO() (msg was {move})."
    assert two.of(RoomError) == [RoomError(room_id, message, move)]
    assert one.of(RoomError) == []
    result = result_of(one).result
    assert result.winner is Team.ONE
    assert result.reason == f"Missachtung des Spielablaufs von TWO: {message}"


async def test_unrequested_move_in_a_paused_game_is_a_process_violation(
    make_harness: HarnessFactory,
) -> None:
    harness, one, two, room_id = await start_game(make_harness, paused=True)
    assert not one.of(Memento) and not one.of(MoveRequest)  # paused: observers only
    move = GameState.initial(seed=1).legal_moves()[0]
    harness.move(one, room_id, move)
    message = "Move from ONE() has not been requested."
    assert one.of(RoomError) == [RoomError(room_id, message, move)]
    assert result_of(two).result.winner is Team.TWO


async def test_moves_for_unknown_rooms_and_from_strangers_get_errorpackets(
    make_harness: HarnessFactory,
) -> None:
    harness, one, _two, room_id = await start_game(make_harness)
    stranger = harness.peer("stranger")
    move = Move(0, 1, Direction.RIGHT)
    harness.move(stranger, "nope", move)
    harness.move(stranger, room_id, move)
    harness.send(one, RoomDataPacket(room_id, "moveRequest", ""))
    harness.send(one, ResponsePacket("left", "sc.protocol.RemovedFromGame"))
    messages = [error.message for error in stranger.of(ErrorPacket)]
    assert messages == [
        "sc.api.plugins.exceptions.GameRoomException: Couldn't find a room with id nope",
        f"sc.api.plugins.exceptions.GameRoomException: Client is not a member of game {room_id}",
    ]
    errors = one.of(ErrorPacket)
    assert errors[0].message.startswith(
        "sc.api.plugins.exceptions.GameRoomException: Received non-move packet: RoomPacket("
    )
    assert errors[1].message == (
        "sc.api.plugins.exceptions.RescuableClientException: "
        "Unhandled Packet of type: class sc.protocol.RemovedFromGame"
    )
    # None of this ends the game.
    assert not one.of(ResultMessage) and room_id in harness.lobby.rooms


async def test_join_room_fills_the_open_slot_and_refuses_a_full_room(
    make_harness: HarnessFactory,
) -> None:
    harness: Harness = await make_harness()
    one, two, three = harness.peer("one"), harness.peer("two"), harness.peer("three")
    harness.send(one, Join())
    room_id = one.of(Joined)[0].room_id
    harness.send(two, JoinRoom(room_id))
    assert two.of(Joined) == [Joined(room_id)]
    assert two.of(WelcomeMessage) == [WelcomeMessage(room_id, Team.TWO)]
    harness.send(three, JoinRoom(room_id))
    (error,) = three.messages
    assert isinstance(error, ErrorPacket)
    assert error.message == (
        f"sc.api.plugins.exceptions.GameRoomException: Room {room_id} is already full!"
    )


async def test_disconnect_mid_game_lets_the_opponent_win(make_harness: HarnessFactory) -> None:
    harness, one, two, room_id = await start_game(make_harness)
    harness.lobby.disconnect(one, DisconnectCause.LOST_CONNECTION)
    result = result_of(two).result
    assert result.winner is Team.TWO
    assert not result.regular
    assert result.reason == "ONE hat das Spiel verlassen: LOST_CONNECTION"
    assert next(score for _, score in result.scores) == (0, 0)
    assert one.of(ResultMessage) == []  # gone: nothing more is sent to it
    await harness.settle()
    assert two.messages[-1] == Left(room_id)
    assert room_id not in harness.lobby.rooms


async def test_lone_player_leaving_before_the_start_removes_the_room(
    make_harness: HarnessFactory,
) -> None:
    harness: Harness = await make_harness()
    one = harness.peer("one")
    harness.send(one, Join())
    room_id = one.of(Joined)[0].room_id
    harness.lobby.disconnect(one, DisconnectCause.RECEIVED_DISCONNECT)
    await harness.settle()
    assert harness.lobby.rooms == {}
    # A new joiner gets a fresh room, not the dead one.
    two = harness.peer("two")
    harness.send(two, Join())
    assert two.of(Joined)[0].room_id != room_id


async def test_disconnect_after_the_game_changes_nothing(make_harness: HarnessFactory) -> None:
    harness, one, two, _room_id = await start_game(make_harness)
    harness.lobby.disconnect(one, DisconnectCause.LOST_CONNECTION)
    await harness.settle()
    before = list(two.messages)
    harness.lobby.disconnect(two, DisconnectCause.LOST_CONNECTION)
    await harness.settle()
    assert two.messages == before
    assert not harness.lobby.is_busy(two)


async def test_busy_tracks_rooms_and_admin_role(make_harness: HarnessFactory) -> None:
    harness: Harness = await make_harness()
    one, admin = harness.peer("one"), harness.peer("admin")
    assert not harness.lobby.is_busy(one)
    harness.send(one, Join())
    assert harness.lobby.is_busy(one)
    harness.send(admin, Authenticate("examplepassword"))
    assert harness.lobby.is_busy(admin)


async def test_same_connection_may_fill_both_slots(make_harness: HarnessFactory) -> None:
    harness: Harness = await make_harness()
    both = harness.peer("both")
    harness.send(both, Join())
    harness.send(both, Join())
    joined = both.of(Joined)
    assert len(joined) == 2 and joined[0] == joined[1]
    assert both.of(WelcomeMessage) == [
        WelcomeMessage(joined[0].room_id, Team.ONE),
        WelcomeMessage(joined[0].room_id, Team.TWO),
    ]


async def test_move_while_game_over_is_pending_removal_is_refused(
    make_harness: HarnessFactory,
) -> None:
    harness, one, two, room_id = await start_game(make_harness, results_file=None)
    harness.lobby.disconnect(two, DisconnectCause.LOST_CONNECTION)
    # The room is over but still being recorded: the official race case of §3.9.
    move = Move(0, 1, Direction.RIGHT)
    harness.send(one, MovePacket(room_id, move))
    assert room_id in harness.lobby.rooms
    (error,) = one.of(ErrorPacket)
    assert error.message == (
        f"sc.api.plugins.exceptions.GameException: Game is already over, but got {move}"
    )
    await harness.settle()
    harness.send(one, MovePacket(room_id, move))
    assert one.of(ErrorPacket)[-1].message.endswith(f"Couldn't find a room with id {room_id}")


async def test_timers_do_not_leak_after_games(
    make_harness: HarnessFactory, autojump_clock: trio.testing.MockClock
) -> None:
    harness, one, _two, _room_id = await start_game(make_harness)
    harness.lobby.disconnect(one, DisconnectCause.LOST_CONNECTION)
    await harness.settle()
    await trio.sleep(3600 * 2)
    # Every timer of the room was cancelled or fired; none may hold the room alive.
    assert harness.lobby.rooms == {}
    assert len(harness.lobby.timers) == 0


async def test_replay_holds_player_mementos_rule_error_and_result(
    make_harness: HarnessFactory, tmp_path: Path
) -> None:
    harness, one, two, room_id = await start_game(
        make_harness, save_replay=True, replay_dir=tmp_path
    )
    first = one.last_state()
    harness.move(one, room_id, first.legal_moves()[0])
    harness.move(two, room_id, Move(0, 0, Direction.UP))  # an empty corner: rule violation
    await harness.settle()
    (path,) = tmp_path.iterdir()
    assert path.name.startswith("replay_swc_2026_piranhas_") and path.name.endswith("__.xml")
    data = path.read_bytes()
    replay = read_replay(data)
    assert [state.turn for state in replay.states] == [0, 1]
    assert replay.states[0] == first
    sent = result_of(one).result
    assert replay.result is not None
    assert (replay.result.winner, replay.result.reason) == (sent.winner, sent.reason)
    assert [score for _, score in replay.result.scores] == [score for _, score in sent.scores]
    assert data.count(b'<data class="error"') == 1


async def test_move_without_room_id_is_answered_like_the_official_server(
    make_harness: HarnessFactory,
) -> None:
    # `<room>` without roomId reads as null: "Couldn't find a room with id null", and the
    # connection and the game go on (protocol §3.9).
    harness, one, _two, room_id = await start_game(make_harness)
    move = one.last_state().legal_moves()[0]
    harness.send(one, MovePacket(None, move))
    error = one.messages[-1]
    assert error == ErrorPacket(
        "sc.api.plugins.exceptions.GameRoomException: Couldn't find a room with id null",
        MovePacket(None, move),
    )
    harness.send(one, RoomDataPacket(None, "moveRequest", "x"))
    assert one.messages[-1] == ErrorPacket(
        "sc.api.plugins.exceptions.GameRoomException: Couldn't find a room with id null",
        RoomDataPacket(None, "moveRequest", "x"),
    )
    harness.move(one, room_id, move)
    assert one.last_state().turn == 1
    assert room_id in harness.lobby.rooms


def test_random_uuid_is_a_version_4_uuid_as_uuid4_writes_it() -> None:
    import uuid

    from server.lobby import random_uuid

    codes = {random_uuid() for _ in range(2000)}
    assert len(codes) == 2000
    variants = set()
    for code in codes:
        parsed = uuid.UUID(code)
        assert str(parsed) == code
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
        variants.add(code[19])
    assert variants == set("89ab")  # the variant digit keeps its two random bits
