"""A prepared room's start position (the `<state>` of `<prepare>`, "play from here"): the game
starts there with the side to move of its turn, by the normal rules and clocks, and the replay
starts with it; a position no game can be played from, or with a last move that cannot have
led to it, is refused and the server goes on."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from engine import Direction, FieldState, GameState, Move, Team
from protocol.events import GAME_TYPE, JoinPrepared, Prepare, SlotDescriptor
from protocol.messages import (
    ErrorPacket,
    Memento,
    MoveRequest,
    Prepared,
    ResultMessage,
    WelcomeMessage,
)
from protocol.replay import read_replay
from tests.helpers.lobby import FakePeer, Harness, HarnessFactory
from tests.server.test_lobby_admin import PASSWORD, admin_harness

SLOTS = (SlotDescriptor("one", True, True), SlotDescriptor("two", True, True))


def played(moves: int, seed: int = 3) -> GameState:
    rng = random.Random(seed)
    state = GameState.initial(seed=seed)
    for _ in range(moves):
        state = state.apply(rng.choice(state.legal_moves()))
    return state


def prepare_from(
    harness: Harness, admin: FakePeer, state: GameState, seed: int | None = None
) -> object:
    harness.send(admin, Prepare(GAME_TYPE, False, SLOTS, seed=seed, state=state))
    return admin.messages[-1]


async def test_the_game_starts_from_the_position_with_its_side_to_move(
    make_harness: HarnessFactory, tmp_path: Path
) -> None:
    harness, admin = await admin_harness(make_harness, save_replay=True, replay_dir=tmp_path)
    start = played(13)  # odd: TWO to move
    prepared = prepare_from(harness, admin, start)
    assert isinstance(prepared, Prepared)
    one, two = harness.peer("one"), harness.peer("two")
    harness.send(one, JoinPrepared(prepared.reservations[0]))
    harness.send(two, JoinPrepared(prepared.reservations[1]))
    assert one.of(WelcomeMessage)[0].team is Team.ONE
    assert one.of(Memento)[0].state == start and two.of(Memento)[0].state == start
    # The side to move of turn 13 is asked, not the room's first slot.
    assert not one.of(MoveRequest) and len(two.of(MoveRequest)) == 1
    room_id = prepared.room_id
    rng = random.Random(1)
    state = start
    while not state.is_over:
        mover = two if state.current_team is Team.TWO else one
        move = rng.choice(state.legal_moves())
        harness.move(mover, room_id, move)
        state = state.apply(move)
    result = one.of(ResultMessage)[0].result
    assert result.regular and result.winner == state.current_winner().winner
    await harness.settle()
    (path,) = tmp_path.iterdir()
    replay = read_replay(path.read_bytes())
    assert replay.states[0] == start and replay.states[-1] == state
    assert [seen.turn for seen in replay.states] == list(range(start.turn, state.turn + 1))
    assert replay.result == result


def board(fill: FieldState, size: int = 10) -> list[list[FieldState]]:
    return [[fill] * size for _ in range(size)]


def with_last_move(state: GameState, move: Move) -> GameState:
    return GameState.from_rows(state.rows(), state.turn, state.first_union, move)


def pointing_off(state: GameState) -> GameState:
    """`state` with a last move from an empty field of the top row UP: off the board, where
    no fish can have gone."""
    x = next(x for x in range(10) if state.field(x, 9) is FieldState.EMPTY)
    return with_last_move(state, Move(x, 9, Direction.UP))


@pytest.mark.parametrize(
    ("state", "seed", "word"),
    [
        (played(4), 7, "not both"),
        (GameState.from_rows(board(FieldState.EMPTY, 8), 3), None, "10×10"),
        (GameState.from_rows(played(2).rows(), 60), None, "past the last turn"),
        (GameState.from_rows(board(FieldState.EMPTY), 4), None, "already over"),
        # A last move that cannot have led to the position: never kept in a replay.
        (with_last_move(played(9), played(9).legal_moves()[0]), None, "lastMove: its start"),
        (with_last_move(played(0), Move(0, 0, Direction.UP)), None, "lastMove: turn 0"),
        (pointing_off(played(11)), None, "lastMove: no fish of ONE"),
    ],
)
async def test_a_position_no_game_can_start_from_is_refused_and_the_server_goes_on(
    make_harness: HarnessFactory, state: GameState, seed: int | None, word: str
) -> None:
    harness, admin = await admin_harness(make_harness)
    answer = prepare_from(harness, admin, state, seed)
    assert isinstance(answer, ErrorPacket) and word in answer.message, answer
    assert "Invalid start state" in answer.message
    assert not harness.lobby.rooms
    # The connection and the server go on: the next prepare works.
    assert isinstance(prepare_from(harness, admin, played(6)), Prepared)


async def test_only_an_admin_may_give_a_start_position(make_harness: HarnessFactory) -> None:
    harness: Harness = await make_harness(password=PASSWORD)
    stranger = harness.peer("stranger")
    answer = prepare_from(harness, stranger, played(5))
    assert isinstance(answer, ErrorPacket) and "UnauthenticatedException" in answer.message
    assert not harness.lobby.rooms


async def test_rooms_prepared_with_one_seed_start_on_its_board_made_once(
    make_harness: HarnessFactory,
) -> None:
    # The seed's board is made once and shared (a GameState never changes); each room still
    # plays its own game from it, and another seed gets another board.
    harness, admin = await admin_harness(make_harness)
    starts = []
    for seed in (2026, 2026, 7):
        harness.send(admin, Prepare(GAME_TYPE, False, SLOTS, seed=seed))
        prepared = admin.messages[-1]
        assert isinstance(prepared, Prepared)
        starts.append(harness.lobby.rooms[prepared.room_id].state)
    first, again, other = starts
    assert first is again and first == GameState.initial(seed=2026)
    assert other == GameState.initial(seed=7) and other != first
