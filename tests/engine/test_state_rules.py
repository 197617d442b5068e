"""Move rules, turn order, swarms and game end on small hand-made boards (docs/protocol.md §11)."""

from __future__ import annotations

import pytest

from engine import (
    ROUND_LIMIT,
    Direction,
    FieldState,
    GameState,
    InvalidMoveError,
    Move,
    MoveMistake,
    Outcome,
    Team,
    WinReason,
)

E = FieldState.EMPTY
X = FieldState.SQUID
o, O = FieldState.ONE_S, FieldState.ONE_L  # noqa: E741
t, T = FieldState.TWO_S, FieldState.TWO_L


def row_state(*fields: FieldState, turn: int = 0) -> GameState:
    return GameState.from_rows([list(fields)], turn=turn)


def board(*rows_top_down: str, turn: int = 0, first_union: Team | None = None) -> GameState:
    """A board drawn as text, top row first: o/O = ONE small/large, t/T = TWO, x = squid."""
    symbols = {".": E, "x": X, "o": o, "O": O, "t": t, "T": T}
    rows = [[symbols[c] for c in line] for line in reversed(rows_top_down)]
    return GameState.from_rows(rows, turn=turn, first_union=first_union)


# ---- moves ------------------------------------------------------------------------------


def test_up_increases_y() -> None:
    state = GameState.from_rows([[o], [E]])
    after = state.apply(Move(0, 0, Direction.UP))
    assert after.field(0, 1) is o
    assert after.field(0, 0) is E


def test_distance_counts_fish_of_both_teams_on_the_whole_line() -> None:
    # The TWO fish behind the mover counts too: two fish in the row, so two fields.
    state = row_state(t, o, E, E, E)
    assert state.apply(Move(1, 0, Direction.RIGHT)).field(3, 0) is o


def test_squids_are_not_counted_but_jumped() -> None:
    # Two fish in the row: the move jumps the squid and lands two fields on.
    state = row_state(o, X, E, o)
    after = state.apply(Move(0, 0, Direction.RIGHT))
    assert after.field(2, 0) is o
    assert after.field(1, 0) is X


def test_own_fish_may_be_jumped() -> None:
    state = row_state(o, o, E)
    assert state.apply(Move(0, 0, Direction.RIGHT)).rows() == [[E, o, o]]


def test_landing_on_an_opponent_captures_it() -> None:
    state = row_state(o, E, T)
    after = state.apply(Move(0, 0, Direction.RIGHT))
    assert after.rows() == [[E, E, o]]
    assert after.fish_count(Team.TWO) == 0
    assert after.greatest_swarm_weight(Team.TWO) == -1


@pytest.mark.parametrize(
    ("fields", "move", "mistake"),
    [
        # A path over an opponent fails even if the target is off the board (path first).
        ((o, o, t), Move(0, 0, Direction.RIGHT), MoveMistake.JUMP_OVER_OPPONENT),
        ((o, t, E), Move(0, 0, Direction.RIGHT), MoveMistake.JUMP_OVER_OPPONENT),
        # The path leaves the board before reaching anything.
        ((t, o, o), Move(1, 0, Direction.RIGHT), MoveMistake.DESTINATION_OUT_OF_BOUNDS),
        ((t, o, o), Move(1, 0, Direction.LEFT), MoveMistake.JUMP_OVER_OPPONENT),
        ((o, E, E), Move(0, 0, Direction.LEFT), MoveMistake.DESTINATION_OUT_OF_BOUNDS),
        ((o, E, E), Move(0, 0, Direction.UP), MoveMistake.DESTINATION_OUT_OF_BOUNDS),
        ((o, X, E), Move(0, 0, Direction.RIGHT), MoveMistake.DESTINATION_BLOCKED),
        ((o, X, o), Move(0, 0, Direction.RIGHT), MoveMistake.DESTINATION_BLOCKED_BY_SELF),
        ((E, o, o), Move(0, 0, Direction.RIGHT), MoveMistake.WRONG_START),
        ((X, o, o), Move(0, 0, Direction.RIGHT), MoveMistake.WRONG_START),
        ((t, o, o), Move(0, 0, Direction.RIGHT), MoveMistake.WRONG_START),
        ((o, E, E), Move(-1, 0, Direction.RIGHT), MoveMistake.START_OUT_OF_BOUNDS),
        ((o, E, E), Move(3, 0, Direction.LEFT), MoveMistake.START_OUT_OF_BOUNDS),
        ((o, E, E), Move(0, 1, Direction.DOWN), MoveMistake.START_OUT_OF_BOUNDS),
    ],
)
def test_rejected_moves_carry_the_official_mistake(
    fields: tuple[FieldState, ...], move: Move, mistake: MoveMistake
) -> None:
    state = row_state(*fields)
    assert state.check_move(move) is mistake
    with pytest.raises(InvalidMoveError) as error:
        state.apply(move)
    assert error.value.mistake is mistake
    assert error.value.move == move
    assert str(error.value) == f"{mistake.message} bei '{move}'"


def test_official_mistake_message() -> None:
    state = row_state(o, o, t)
    with pytest.raises(InvalidMoveError) as error:
        state.apply(Move(0, 0, Direction.RIGHT))
    assert str(error.value) == (
        "Gegnerische Piranhas können nicht übersprungen werden "
        "bei 'Schwimme von [0|0] in Richtung RIGHT'"
    )


def test_two_moves_on_odd_turns() -> None:
    state = row_state(o, E, E, E, t, turn=1)
    assert state.current_team is Team.TWO
    assert state.check_move(Move(0, 0, Direction.RIGHT)) is MoveMistake.WRONG_START
    after = state.apply(Move(4, 0, Direction.LEFT))
    assert after.field(2, 0) is t
    assert after.turn == 2
    assert after.current_team is Team.ONE


@pytest.mark.parametrize("seed", range(10))
def test_legal_moves_are_listed_per_fish_row_major_in_direction_order(seed: int) -> None:
    state = GameState.initial(seed)
    for _ in range(12):
        moves = state.legal_moves()
        order = list(Direction)
        keys = [(m.y, m.x, order.index(m.direction)) for m in moves]
        assert keys == sorted(keys)
        assert len(set(keys)) == len(keys)
        state = state.apply(moves[len(moves) // 2])


def test_legal_moves_returns_a_fresh_list() -> None:
    state = GameState.initial(1)
    moves = state.legal_moves()
    moves.clear()
    assert state.legal_moves() != []


# ---- construction and value semantics ---------------------------------------------------------


def test_from_rows_accepts_field_names() -> None:
    state = GameState.from_rows([["ONE_S", "SQUID"], ["EMPTY", "TWO_L"]])
    assert state.rows() == [[o, X], [E, T]]
    assert (state.width, state.height) == (2, 2)


@pytest.mark.parametrize("rows", [[], [[]], [[o, E], [E]], [["ONE_X"]], [["one_s"]]], ids=repr)
def test_from_rows_rejects_bad_boards(rows: list[list[FieldState | str]]) -> None:
    with pytest.raises(ValueError):
        GameState.from_rows(rows)


def test_from_rows_rejects_a_negative_turn() -> None:
    with pytest.raises(ValueError):
        GameState.from_rows([[o]], turn=-1)


def test_fields_off_the_board_raise() -> None:
    state = row_state(o, E)
    with pytest.raises(IndexError):
        state.field(2, 0)
    with pytest.raises(IndexError):
        state.field(0, -1)


def test_state_is_immutable() -> None:
    state = GameState.initial(3)
    before = state.rows()
    state.rows()[1][0] = E
    state.legal_moves().append(Move(0, 0, Direction.UP))
    state.apply(state.legal_moves()[0])
    assert state.rows() == before
    assert state.turn == 0
    with pytest.raises(AttributeError):
        state.turn = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        GameState()


def test_equality_includes_turn_first_union_and_last_move() -> None:
    rows = GameState.initial(2).rows()
    base = GameState.from_rows(rows)
    assert base == GameState.from_rows(rows)
    assert base != GameState.from_rows(rows, turn=2)
    assert base != GameState.from_rows(rows, first_union=Team.ONE)
    assert base != GameState.from_rows(rows, last_move=Move(0, 1, Direction.UP))
    assert len({base, GameState.from_rows(rows), GameState.from_rows(rows, turn=2)}) == 2


def test_text_rendering_shows_the_top_row_first() -> None:
    state = board(
        "x.t",
        "o..",
        turn=3,
    )
    lines = str(state).splitlines()
    assert "turn 3" in lines[0]
    assert "TWO to move" in lines[0]
    assert lines[1].split() == ["1", "XX", ".", "2s"]
    assert lines[2].split() == ["0", "1s", ".", "."]
    assert lines[3].split() == ["0", "1", "2"]


# ---- swarms, firstUnion, game end ---------------------------------------------------------


def test_swarms_are_eight_connected_and_weighted_by_size() -> None:
    state = board(
        "o...O",
        ".o..O",
        "....O",
    )
    # The diagonal pair weighs 2, the column of large fish 9.
    assert state.greatest_swarm_weight(Team.ONE) == 9
    assert not state.is_connected(Team.ONE)
    assert board("o.", ".O").is_connected(Team.ONE)
    assert not board("t").is_connected(Team.ONE)  # no fish: not connected


def test_first_union_is_the_connected_team_not_the_mover() -> None:
    # TWO captures ONE's fish at (2, 2); ONE's remaining fish is alone, so ONE is connected.
    state = board(
        "..t..",
        ".....",
        "..o..",
        ".....",
        "o...t",
        turn=1,
    )
    after = state.apply(Move(2, 4, Direction.DOWN))
    assert after.is_connected(Team.ONE)
    assert not after.is_connected(Team.TWO)
    assert after.first_union is Team.ONE


def test_first_union_prefers_one_when_both_connect_at_once() -> None:
    # ONE captures TWO's fish at (2, 2): both teams are left with one fish each.
    state = board(
        ".....",
        ".....",
        "..t..",
        ".....",
        "o...t",
    )
    after = state.apply(Move(0, 0, Direction.UP_RIGHT))
    assert after.is_connected(Team.ONE) and after.is_connected(Team.TWO)
    assert after.first_union is Team.ONE


def test_from_rows_does_not_set_first_union() -> None:
    # The official state only records firstUnion after a move.
    assert board("oo", "..", "t.").first_union is None


def test_connected_team_ends_the_game_only_at_the_end_of_a_round() -> None:
    rows = ("oo...", ".....", "t...t")
    odd = board(*rows, turn=1)
    assert odd.legal_moves()
    assert not odd.is_over
    # The win condition already holds mid-round, as in the official code.
    assert odd.win_condition() == Outcome(Team.ONE, WinReason.BIGGER_SWARM)
    even = board(*rows, turn=2)
    assert even.is_over
    assert even.outcome() == Outcome(Team.ONE, WinReason.BIGGER_SWARM)


def test_equal_connected_swarms_use_first_union_else_tie() -> None:
    rows = ("oo...", ".....", "...tt")
    assert board(*rows, turn=2, first_union=Team.TWO).outcome() == Outcome(
        Team.TWO, WinReason.FIRST_UNION
    )
    assert board(*rows, turn=2).outcome() == Outcome(None, WinReason.TIE)


def test_round_limit() -> None:
    rows = ("o.o..", ".....", "t...t")
    assert not board(*rows, turn=2 * ROUND_LIMIT - 1).is_over
    assert board(*rows, turn=2 * ROUND_LIMIT).is_over


def test_round_limit_without_connected_team_ignores_first_union() -> None:
    equal = board("o.o..", ".....", "t...t", turn=60, first_union=Team.ONE)
    assert equal.outcome() == Outcome(None, WinReason.TIE)
    heavier = board("o.O..", ".....", "t...t", turn=60, first_union=Team.TWO)
    assert heavier.outcome() == Outcome(Team.ONE, WinReason.BIGGER_SWARM)


def test_blocked_team_loses() -> None:
    # Both ONE fish are cornered; neither team is connected.
    state = board(
        "...to",
        "...tt",
        ".....",
        "tt...",
        "ot...",
        turn=0,
    )
    assert not state.is_connected(Team.ONE)
    assert state.legal_moves() == []
    assert state.is_over
    assert state.outcome() == Outcome(Team.TWO, WinReason.BLOCKED)


def test_connected_team_beats_blocked_rule() -> None:
    # ONE (a single fish) is connected and blocked; the swarm rule decides, not BLOCKED.
    state = board(
        "tt...",
        "ot...",
        turn=0,
    )
    assert state.legal_moves() == []
    assert state.outcome() == Outcome(Team.TWO, WinReason.BIGGER_SWARM)


def test_not_over_means_no_outcome_but_a_current_winner() -> None:
    state = board("o.O..", ".....", "t...t", turn=4)
    assert not state.is_over
    assert state.outcome() is None
    assert state.win_condition() is None
    assert state.current_winner() == Outcome(Team.ONE, WinReason.BIGGER_SWARM)
