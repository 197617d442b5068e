"""Game states as JSON for the pages: the board, swarms, legal moves (pure, no I/O)."""

from __future__ import annotations

from typing import Any

from engine import FieldState, GameState, Move, Team

# 8-neighbourhood: swarms are 8-connected (rules §11.4).
_NEIGHBOURS = tuple((dx, dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1) if dx or dy)


def largest_swarm(state: GameState, team: Team) -> list[tuple[int, int]]:
    """The fields of `team`'s heaviest 8-connected swarm (weight = sum of fish sizes; the
    swarm found first in row-major order wins a tie); empty without fish."""
    best: list[tuple[int, int]] = []
    best_weight = -1
    seen: set[tuple[int, int]] = set()
    for y in range(state.height):
        for x in range(state.width):
            if (x, y) in seen or state.field(x, y).team is not team:
                continue
            swarm = [(x, y)]
            seen.add((x, y))
            weight = 0
            index = 0
            while index < len(swarm):
                cx, cy = swarm[index]
                index += 1
                weight += state.field(cx, cy).size
                for dx, dy in _NEIGHBOURS:
                    nx, ny = cx + dx, cy + dy
                    if (
                        0 <= nx < state.width
                        and 0 <= ny < state.height
                        and (nx, ny) not in seen
                        and state.field(nx, ny).team is team
                    ):
                        seen.add((nx, ny))
                        swarm.append((nx, ny))
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
    return {
        "turn": state.turn,
        "board": [[field.name for field in row] for row in state.rows()],
        "current": state.current_team.name,
        "lastMove": last_json,
        "swarm": {
            team.name: max(0, state.greatest_swarm_weight(team)) for team in (Team.ONE, Team.TWO)
        },
        "largest": {
            team.name: [list(cell) for cell in largest_swarm(state, team)]
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
