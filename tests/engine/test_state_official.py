"""The behaviour pinned by the official plugin tests (backend 26.1.0,
plugin2026/src/test/kotlin/sc/...), re-expressed on our API."""

from __future__ import annotations

import pytest

from engine import (
    Direction,
    FieldState,
    GameState,
    InvalidMoveError,
    Move,
    MoveMistake,
    Outcome,
    PlayerEntry,
    Team,
    WinReason,
    game_result,
)

E = FieldState.EMPTY
SEEDS = range(40)


def empty_rows() -> list[list[FieldState]]:
    return [[E] * 10 for _ in range(10)]


def with_fields(rows: list[list[FieldState]], **fields: FieldState) -> list[list[FieldState]]:
    """Copy of `rows` with fields set; keys are "x_y"."""
    copy = [list(row) for row in rows]
    for key, field in fields.items():
        x, y = (int(part) for part in key.split("_"))
        copy[y][x] = field
    return copy


# ---- GameRuleLogicTest: swarm size ------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_board_swarms_are_big_and_not_connected(seed: int) -> None:
    state = GameState.initial(seed)
    for team in Team:
        assert state.greatest_swarm_weight(team) >= 8
        assert not state.is_connected(team)


def test_board_of_only_red_fish() -> None:
    state = GameState.from_rows([[FieldState.ONE_S, FieldState.ONE_M, FieldState.ONE_L]])
    assert state.is_connected(Team.ONE)
    assert not state.is_connected(Team.TWO)
    assert state.greatest_swarm_weight(Team.ONE) == 6
    assert state.greatest_swarm_weight(Team.TWO) == -1


def test_board_with_red_and_blue_fish() -> None:
    row = [FieldState.ONE_S, FieldState.ONE_L, FieldState.TWO_M, FieldState.ONE_L]
    state = GameState.from_rows([row])
    assert not state.is_connected(Team.ONE)
    assert state.is_connected(Team.TWO)
    # ONE's heaviest swarm is the pair S+L on the left.
    assert state.greatest_swarm_weight(Team.ONE) == 4
    assert state.greatest_swarm_weight(Team.TWO) == 2


# ---- GameRuleLogicTest: possible moves ----------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_squid_is_skipped(seed: int) -> None:
    rows = with_fields(GameState.initial(seed).rows(), **{"1_2": FieldState.SQUID, "2_3": E})
    state = GameState.from_rows(rows)
    from_0_1 = [m for m in state.legal_moves() if (m.x, m.y) == (0, 1)]
    assert len(from_0_1) == 3
    # Two fish on the diagonal through (0, 1): the move jumps the squid at (1, 2).
    after = state.apply(Move(0, 1, Direction.UP_RIGHT))
    assert after.field(2, 3) is rows[1][0]
    assert after.field(0, 1) is E

    rows = with_fields(rows, **{"8_2": FieldState.SQUID, "7_3": E})
    state = GameState.from_rows(rows)
    assert state.check_move(Move(9, 1, Direction.UP_RIGHT)) is (
        MoveMistake.DESTINATION_OUT_OF_BOUNDS
    )
    assert state.check_move(Move(9, 1, Direction.UP_LEFT)) is None
    assert len([m for m in state.legal_moves() if (m.x, m.y) == (9, 1)]) == 3


def test_cornered_fish_loses_blocked() -> None:
    rows = with_fields(
        empty_rows(),
        **{
            "0_0": FieldState.ONE_S,
            "1_0": FieldState.TWO_S,
            "1_1": FieldState.TWO_S,
            "0_1": FieldState.TWO_S,
            "9_9": FieldState.ONE_S,
            "8_9": FieldState.TWO_S,
            "8_8": FieldState.TWO_S,
            "9_8": FieldState.TWO_S,
        },
    )
    state = GameState.from_rows(rows, turn=0)
    assert state.legal_moves() == []
    assert state.is_over
    assert state.win_condition() == Outcome(Team.TWO, WinReason.BLOCKED)


# ---- GameStateTest ---------------------------------------------------------------------


@pytest.mark.parametrize("seed", SEEDS)
def test_copy_equals_original(seed: int) -> None:
    state = GameState.initial(seed)
    copy = GameState.from_rows(state.rows(), state.turn, state.first_union, state.last_move)
    assert copy == state
    assert hash(copy) == hash(state)
    assert copy.rows() == state.rows()


@pytest.mark.parametrize("seed", SEEDS)
def test_first_move_then_wrong_start_on_second_attempt(seed: int) -> None:
    state = GameState.from_rows(GameState.initial(seed).rows(), first_union=Team.TWO)
    start_move = Move(0, 1, Direction.RIGHT)
    after = state.apply(start_move)
    assert after != state
    # Row 1 holds exactly two fish at the start: the move goes two fields.
    assert after.field(2, 1) is state.field(0, 1)
    assert after.turn == 1
    assert after.last_move == start_move
    assert after.current_team is Team.TWO
    assert after.first_union is Team.TWO
    # The same move applied to an equal state gives an equal state.
    copy = GameState.from_rows(state.rows(), first_union=Team.TWO)
    assert copy.apply(start_move) == after

    after_two = after.apply(Move(1, 0, Direction.RIGHT))
    with pytest.raises(InvalidMoveError) as error:
        after_two.apply(start_move)
    assert error.value.mistake is MoveMistake.WRONG_START


def union_board() -> list[list[FieldState]]:
    # Both teams: two adjacent small fish, so both are connected.
    return with_fields(
        empty_rows(),
        **{
            "1_1": FieldState.ONE_S,
            "2_1": FieldState.ONE_S,
            "7_7": FieldState.TWO_S,
            "7_8": FieldState.TWO_S,
        },
    )


def test_first_union_breaks_a_tie() -> None:
    state = GameState.from_rows(union_board(), first_union=Team.ONE)
    assert state.win_condition() == Outcome(Team.ONE, WinReason.FIRST_UNION)


def test_without_first_union_a_tie() -> None:
    state = GameState.from_rows(union_board())
    assert state.win_condition() == Outcome(None, WinReason.TIE)


def test_first_union_is_set_once_and_not_overwritten() -> None:
    rows = with_fields(
        empty_rows(),
        **{
            "1_1": FieldState.ONE_S,
            "3_2": FieldState.ONE_S,
            "7_7": FieldState.TWO_S,
            "9_8": FieldState.TWO_S,
        },
    )
    state = GameState.from_rows(rows)
    assert state.first_union is None
    state = state.apply(Move(1, 1, Direction.RIGHT))
    assert state.first_union is Team.ONE
    state = state.apply(Move(7, 7, Direction.RIGHT))
    assert state.is_connected(Team.TWO)
    assert state.first_union is Team.ONE


# ---- GamePlayTest ------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(10))
def test_game_with_first_move_each_time_ends_regularly(seed: int) -> None:
    state = GameState.initial(seed)
    seen = {state}
    while not state.is_over:
        moves = state.legal_moves()
        assert moves, "a state that is not over has a legal move"
        state = state.apply(moves[0])
        assert state.last_move == moves[0]
        assert state not in seen  # every move changes the state
        seen.add(state)
    result = game_result(state, [PlayerEntry(Team.ONE, ""), PlayerEntry(Team.TWO, "")])
    assert result.regular
    points = [score[0] for _, score in result.scores]
    assert sorted(points) in ([0, 2], [1, 1])
