"""Game states as JSON for the pages: the board, swarms, legal moves (pure, no I/O)."""

from __future__ import annotations

from typing import Any

from engine import FieldState, GameState, Move, Team

# 8-neighbourhood: swarms are 8-connected (rules §11.4).
_NEIGHBOURS = tuple((dx, dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1) if dx or dy)
# Enum properties are slow to read in bulk; these run for every state a viewer is shown.
_NAME = {field: field.name for field in FieldState}
_TEAM = {field: field.team for field in FieldState}
_SIZE = {field: field.size for field in FieldState}


def largest_swarm(state: GameState, team: Team) -> list[tuple[int, int]]:
    """The fields of `team`'s heaviest 8-connected swarm (weight = sum of fish sizes; the
    swarm found first in row-major order wins a tie); empty without fish."""
    return _largest_swarm(state.rows(), team)


def _largest_swarm(rows: list[list[FieldState]], team: Team) -> list[tuple[int, int]]:
    # On the rows list, not state.field(): this runs for every state a viewer is shown.
    sizes = {
        (x, y): _SIZE[field]
        for y, row in enumerate(rows)
        for x, field in enumerate(row)
        if _TEAM[field] is team
    }
    best: list[tuple[int, int]] = []
    best_weight = -1
    seen: set[tuple[int, int]] = set()
    for start in sizes:  # row-major: rows[y][x] in order
        if start in seen:
            continue
        seen.add(start)
        swarm = [start]
        weight = 0
        for cx, cy in swarm:  # grows while iterating: a breadth-first search
            weight += sizes[(cx, cy)]
            for dx, dy in _NEIGHBOURS:
                neighbour = (cx + dx, cy + dy)
                if neighbour in sizes and neighbour not in seen:
                    seen.add(neighbour)
                    swarm.append(neighbour)
        if weight > best_weight:
            best, best_weight = swarm, weight
    return sorted(best)


def move_target(state: GameState, move: Move) -> tuple[int, int]:
    """Where `move` lands on `state`: as many fields as there are fish on its whole line."""
    dx, dy = move.direction.dx, move.direction.dy
    fish = 0
    for sign in (1, -1):
        x, y = move.x, move.y
        if sign == -1:
            x, y = x - dx, y - dy
        while 0 <= x < state.width and 0 <= y < state.height:
            if state.field(x, y).team is not None:
                fish += 1
            x, y = x + sign * dx, y + sign * dy
    return move.x + fish * dx, move.y + fish * dy


def move_json(move: Move | None) -> dict[str, Any] | None:
    """A move as the pages use it; None stays None."""
    if move is None:
        return None
    return {"x": move.x, "y": move.y, "dir": move.direction.name, "text": str(move)}


def state_json(state: GameState, previous: GameState | None = None) -> dict[str, Any]:
    """One state: `board[y][x]` = FieldState name, the last move (with its target when the
    state before it is known), swarm weights and each team's largest swarm."""
    last = state.last_move
    last_json = move_json(last)
    if last is not None and last_json is not None and previous is not None:
        last_json["to"] = list(move_target(previous, last))
    rows = state.rows()
    return {
        "turn": state.turn,
        # Which side united its swarm first (the end rule needs it): "play from here" sends
        # it back with the board.
        "firstUnion": state.first_union.name if state.first_union is not None else None,
        "board": [[_NAME[field] for field in row] for row in rows],
        "current": state.current_team.name,
        "lastMove": last_json,
        "swarm": {
            team.name: max(0, state.greatest_swarm_weight(team)) for team in (Team.ONE, Team.TWO)
        },
        "largest": {
            team.name: [list(cell) for cell in _largest_swarm(rows, team)]
            for team in (Team.ONE, Team.TWO)
        },
    }


def legal_targets(state: GameState) -> dict[str, list[dict[str, Any]]]:
    """The legal moves of the team to move, by start field "x,y": each with its target."""
    targets: dict[str, list[dict[str, Any]]] = {}
    for move in state.legal_moves():
        tx, ty = move_target(state, move)
        targets.setdefault(f"{move.x},{move.y}", []).append(
            {"dir": move.direction.name, "to": [tx, ty]}
        )
    return targets


def field_names() -> list[str]:
    """Every FieldState name (for the pages' legend)."""
    return [field.name for field in FieldState]
