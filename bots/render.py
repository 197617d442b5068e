"""Draw a GameState for a terminal: teams, fish sizes, squids and the last move.

Plain mode is fixed-width text (for logs and tests); colour mode adds ANSI colours to the same
text (ONE red, TWO blue, squids green, large fish bold, the last move highlighted).
"""

from __future__ import annotations

import os
from typing import TextIO

from engine import FieldState, GameState, Team

_SYMBOL = {
    FieldState.ONE_S: "1S",
    FieldState.ONE_M: "1M",
    FieldState.ONE_L: "1L",
    FieldState.TWO_S: "2S",
    FieldState.TWO_M: "2M",
    FieldState.TWO_L: "2L",
    FieldState.SQUID: "XX",
    FieldState.EMPTY: " .",
}

_RESET = "\x1b[0m"
_BOLD = "\x1b[1m"
_REVERSE = "\x1b[7m"
_DIM = "\x1b[2m"
_TEAM_COLOUR = {Team.ONE: "\x1b[31m", Team.TWO: "\x1b[34m"}
_SQUID_COLOUR = "\x1b[32m"

LEGEND = "1 = ONE, 2 = TWO; S/M/L = fish of weight 1/2/3; XX = squid; (..) from, [..] to"


def use_colour(stream: TextIO) -> bool:
    """Whether to draw in colour on `stream`: a terminal, and NO_COLOR unset (no-color.org)."""
    return stream.isatty() and not os.environ.get("NO_COLOR")


def _moved_to(state: GameState, previous: GameState | None) -> tuple[int, int] | None:
    """The field the last move ended on: the one field besides the start that changed."""
    move = state.last_move
    if previous is None or move is None:
        return None
    for y in range(state.height):
        for x in range(state.width):
            if (x, y) != (move.x, move.y) and state.field(x, y) != previous.field(x, y):
                return x, y
    return None


def _paint(text: str, field: FieldState, highlight: bool) -> str:
    if field.team is not None:
        style = _TEAM_COLOUR[field.team] + (_BOLD if field.size == 3 else "")
    elif field is FieldState.SQUID:
        style = _SQUID_COLOUR
    else:
        style = _DIM
    if highlight:
        style += _REVERSE
    return f"{style}{text}{_RESET}"


def render(state: GameState, *, colour: bool = False, previous: GameState | None = None) -> str:
    """The board as text, top row (highest y) first, with a header line (turn, round, team to
    move, each team's heaviest swarm) and column numbers below. The start of the last move is
    shown as `(..)`; its end as `[..]` when `previous` (the state before it) is given."""
    move = state.last_move
    start = (move.x, move.y) if move is not None else None
    end = _moved_to(state, previous)
    one = state.greatest_swarm_weight(Team.ONE)
    two = state.greatest_swarm_weight(Team.TWO)
    header = (
        f"turn {state.turn}, round {state.turn // 2 + 1}, {state.current_team.name} to move"
        f" | swarm ONE {max(one, 0)} TWO {max(two, 0)}"
    )
    if move is not None:
        header += f" | last: [{move.x}|{move.y}] {move.direction.name}"
    lines = [header]
    for y in reversed(range(state.height)):
        cells = []
        for x in range(state.width):
            field = state.field(x, y)
            symbol = _SYMBOL[field]
            if (x, y) == start:
                text = f"({symbol})"
            elif (x, y) == end:
                text = f"[{symbol}]"
            else:
                text = f" {symbol} "
            if colour:
                text = _paint(text, field, (x, y) == end or (x, y) == start)
            cells.append(text)
        lines.append(f"{y:>2} " + "".join(cells).rstrip())
    lines.append("   " + "".join(f"  {x:<2}" for x in range(state.width)).rstrip())
    return "\n".join(lines)
