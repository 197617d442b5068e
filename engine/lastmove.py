"""Whether a position's last move can be the move that led to it.

A position given from outside (an admin's `<prepare>` with a `<state>`, "play from here")
carries its last move, which the pages draw as an arrow and the replay keeps. Rule: the last
move is accepted exactly when some position one turn earlier exists from which it is legal
and after which the board, turn and first union are the given ones. The earlier position
differs from the given one on two fields only: the move's start held the fish that now
stands on its landing field, and the landing field held nothing or a fish of the other side
(captured). Every such candidate is tried with `check_move` and `apply`: the rules are the
engine's own, not a second copy of them.
"""

from __future__ import annotations

from engine.state import GameState
from engine.types import FieldState, Team

_RANK_ILLEGAL, _RANK_LANDS_ELSEWHERE, _RANK_UNION = range(3)


def _field_name(x: int, y: int) -> str:
    return f"[{x}|{y}]"


def last_move_problem(state: GameState) -> str | None:
    """Why `state.last_move` cannot have led to `state` (a sentence), or None when it can or
    there is no last move (see the module docstring)."""
    move = state.last_move
    if move is None:
        return None
    direction = move.direction
    start = _field_name(move.x, move.y)
    if state.turn == 0:
        return "turn 0 is the start of a game: no move led to it"
    mover = state.current_team.opponent
    if not (0 <= move.x < state.width and 0 <= move.y < state.height):
        return f"its start {start} is off the board"
    if state.field(move.x, move.y) is not FieldState.EMPTY:
        return f"its start {start} is not empty (the fish that moved left it)"
    rows = state.rows()
    landings = []  # the fields in the move's direction where a fish of the mover stands
    x, y = move.x + direction.dx, move.y + direction.dy
    while 0 <= x < state.width and 0 <= y < state.height:
        if rows[y][x].team is mover:
            landings.append((x, y))
        x, y = x + direction.dx, y + direction.dy
    if not landings:
        return f"no fish of {mover.name} stands {direction.name} of {start}, where it went"
    captures = [FieldState.EMPTY] + [f for f in FieldState if f.team is mover.opponent]
    unions = list(dict.fromkeys((None, state.first_union)))
    best: tuple[int, str] | None = None  # the reason of the candidate that came furthest
    for lx, ly in landings:
        fish = rows[ly][lx]
        for captured in captures:
            before = [list(row) for row in rows]
            before[move.y][move.x] = fish
            before[ly][lx] = captured
            for union in unions:
                earlier = GameState.from_rows(before, state.turn - 1, union)
                reason = _mismatch(earlier, state, (lx, ly))
                if reason is None:
                    return None
                if best is None or reason[0] > best[0]:
                    best = reason
    assert best is not None
    return f"{mover.name}'s move {start} {direction.name} cannot have led here: {best[1]}"


def _mismatch(
    earlier: GameState, state: GameState, landing: tuple[int, int]
) -> tuple[int, str] | None:
    """None if the last move of `state` from `earlier` gives `state`; else how far it came
    (a rank: higher is nearer) and why not."""
    move = state.last_move
    assert move is not None
    if earlier.is_over:
        return _RANK_ILLEGAL, f"the game was over before it (turn {earlier.turn})"
    mistake = earlier.check_move(move)
    if mistake is not None:
        name = mistake.name.lower().replace("_", " ")
        where = _field_name(*landing)
        return _RANK_ILLEGAL, f"with its fish from {where} it is illegal ({name})"
    after = earlier.apply(move)
    if after == state:
        return None
    if after.bitboards() != state.bitboards():
        went = _landing_of(earlier, after)
        return _RANK_LANDS_ELSEWHERE, (
            f"its fish goes as many fields as its line has fish: to {_field_name(*went)}, "
            f"not to {_field_name(*landing)}"
        )
    union = after.first_union.name if after.first_union is not None else "null"
    given = state.first_union.name if state.first_union is not None else "null"
    return _RANK_UNION, f"after it firstUnion is {union}, not {given}"


def _landing_of(earlier: GameState, after: GameState) -> tuple[int, int]:
    """The field the moved fish stands on in `after` (it was empty or not the mover's)."""
    mover: Team = earlier.current_team
    for y in range(after.height):
        for x in range(after.width):
            if after.field(x, y).team is mover and earlier.field(x, y).team is not mover:
                return x, y
    raise AssertionError("a legal move puts its fish on a new field")
