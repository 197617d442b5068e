"""Play a whole game between two bots in-process, on the engine (no server)."""

from __future__ import annotations

from collections.abc import Callable

from bots.players import Bot
from engine import GameState, Team


def play(
    one: Bot,
    two: Bot,
    state: GameState,
    budget: float,
    on_move: Callable[[GameState], None] | None = None,
) -> GameState:
    """Let `one` (Team.ONE) and `two` (Team.TWO) move in turn from `state` until the game is
    over; returns the final state. `on_move` sees every new state. A bot's illegal move
    raises the engine's InvalidMoveError (built-in bots never make one)."""
    players = {Team.ONE: one, Team.TWO: two}
    while not state.is_over:
        move = players[state.current_team].choose(state, budget)
        state = state.apply(move)
        if on_move is not None:
            on_move(state)
    return state
