"""`last_move_problem`: a position's last move is accepted exactly when it can have led there
(every move of played games, captures and a union it made included) and refused with a reason
when it cannot (its start not empty, no fish where it went, the wrong distance, the wrong
side, a union it would have made, turn 0)."""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable

import pytest

from engine import Direction, FieldState, GameState, Move, Team, last_move_problem

E = FieldState.EMPTY


def played(seed: int) -> list[GameState]:
    rng = random.Random(seed)
    states = [GameState.initial(seed)]
    while not states[-1].is_over:
        states.append(states[-1].apply(rng.choice(states[-1].legal_moves())))
    return states


def given(state: GameState, **changes: object) -> GameState:
    """`state` as a page or an admin would send it: rows, turn, union and last move."""
    values: dict[str, object] = {
        "rows": state.rows(),
        "turn": state.turn,
        "first_union": state.first_union,
        "last_move": state.last_move,
    }
    values.update(changes)
    return GameState.from_rows(**values)  # type: ignore[arg-type]


def small(fish: dict[tuple[int, int], FieldState], turn: int = 0) -> GameState:
    rows = [[E] * 10 for _ in range(10)]
    for (x, y), field in fish.items():
        rows[y][x] = field
    return GameState.from_rows(rows, turn=turn)


def test_every_last_move_of_played_games_is_accepted() -> None:
    captures = 0
    for seed in (1, 2, 3):
        states = played(seed)
        for before, state in itertools.pairwise(states):
            assert last_move_problem(given(state)) is None, (seed, state.turn)
            captures += before.fish_count(before.current_team.opponent) > state.fish_count(
                before.current_team.opponent
            )
        # Without a last move there is nothing to check.
        assert last_move_problem(given(states[10], last_move=None)) is None
    assert captures > 0, "the games have captures"


def test_a_capture_and_a_union_made_by_the_last_move_are_accepted() -> None:
    one, two = FieldState.ONE_S, FieldState.TWO_M
    far = {(9, 9): FieldState.TWO_S, (0, 9): FieldState.TWO_S}
    # ONE's fish at (5, 2) goes LEFT 2 (two fish on the row) and captures TWO's at (3, 2).
    capture = small({(5, 2): one, (3, 2): two, (0, 0): one, **far})
    capture = capture.apply(Move(5, 2, Direction.LEFT))
    assert capture.field(3, 2) is one and capture.fish_count(Team.TWO) == 2
    assert last_move_problem(given(capture)) is None
    # ONE's fish lands next to its other one: ONE is united first by this very move.
    union = small({(5, 2): one, (2, 2): one, **far}).apply(Move(5, 2, Direction.LEFT))
    assert union.first_union is Team.ONE
    assert last_move_problem(given(union)) is None
    # TWO may have been united first before it (the union is kept); never "nobody".
    assert last_move_problem(given(union, first_union=Team.TWO)) is None
    refused = last_move_problem(given(union, first_union=None))
    assert refused is not None and "firstUnion is ONE, not null" in refused


def _start_not_empty(state: GameState) -> GameState:
    assert state.last_move is not None
    rows = state.rows()
    move = state.last_move
    rows[move.y][move.x] = FieldState.SQUID
    return given(state, rows=rows)


def _fish_gone(state: GameState) -> GameState:
    """The moved fish is not where it went: every fish of the mover on its line removed."""
    move = state.last_move
    assert move is not None
    rows = state.rows()
    mover = state.current_team.opponent
    x, y = move.x + move.direction.dx, move.y + move.direction.dy
    while 0 <= x < 10 and 0 <= y < 10:
        if rows[y][x].team is mover:
            rows[y][x] = E
        x, y = x + move.direction.dx, y + move.direction.dy
    return given(state, rows=rows)


def _two_fields_further(state: GameState) -> GameState | None:
    """The moved fish two fields further along its way: a distance the line's fish never
    give (one further is a capture's). Only where that field is on the board and empty and no
    other fish of the mover is on the way (which might have made the move instead)."""
    move = state.last_move
    assert move is not None
    rows = state.rows()
    mover = state.current_team.opponent
    ray = []
    x, y = move.x + move.direction.dx, move.y + move.direction.dy
    while 0 <= x < 10 and 0 <= y < 10:
        ray.append((x, y))
        x, y = x + move.direction.dx, y + move.direction.dy
    mine = [(x, y) for x, y in ray if rows[y][x].team is mover]
    if len(mine) != 1:
        return None
    (x, y) = mine[0]
    fx, fy = x + 2 * move.direction.dx, y + 2 * move.direction.dy
    if not (0 <= fx < 10 and 0 <= fy < 10 and rows[fy][fx] is E):
        return None
    rows[fy][fx], rows[y][x] = rows[y][x], E
    return given(state, rows=rows)


def _other_side(state: GameState) -> GameState:
    """The same board and move, one turn later: the other side would have made it."""
    return given(state, turn=state.turn + 1)


@pytest.mark.parametrize(
    ("tamper", "words"),
    [
        (_start_not_empty, "is not empty"),
        (_fish_gone, "no fish of"),
        (_two_fields_further, "cannot have led here"),
        (_other_side, ""),
        (lambda s: given(s, turn=0), "turn 0"),
        (lambda s: given(s, last_move=Move(10, 3, Direction.UP)), "off the board"),
    ],
)
def test_a_last_move_that_cannot_have_led_to_the_position_is_refused(
    tamper: Callable[[GameState], GameState | None], words: str
) -> None:
    refused = 0
    for state in played(4)[5:50:3]:
        wrong = tamper(state)
        if wrong is None:
            continue
        problem = last_move_problem(wrong)
        assert problem is not None, (state.turn, tamper)
        assert words in problem, problem
        refused += 1
    assert refused >= 5


def test_the_reason_says_where_the_fish_would_have_gone() -> None:
    one = FieldState.ONE_S
    far = {(9, 9): FieldState.TWO_S, (0, 9): FieldState.TWO_S}
    # Two fish on row 2 (three had it captured one): the fish from (6, 2) LEFT goes 2 or 3
    # fields, never 4 to (2, 2), nor 6 to (0, 2).
    wrong = small({(2, 2): one, (0, 2): one, **far}, turn=1)
    problem = last_move_problem(given(wrong, last_move=Move(6, 2, Direction.LEFT)))
    assert problem == (
        "ONE's move [6|2] LEFT cannot have led here: its fish goes as many fields as its line"
        " has fish: to [4|2], not to [2|2]"
    )
    # One field nearer it may have captured a fish of TWO's on (3, 2): accepted.
    nearer = small({(3, 2): one, (0, 2): one, **far}, turn=1)
    assert last_move_problem(given(nearer, last_move=Move(6, 2, Direction.LEFT))) is None
    # Past an opponent's fish it is no legal move at all.
    over = small({(3, 2): one, (9, 0): one, (5, 2): FieldState.TWO_S, **far}, turn=1)
    problem = last_move_problem(given(over, last_move=Move(6, 2, Direction.LEFT)))
    assert problem is not None and "illegal (jump over opponent)" in problem
