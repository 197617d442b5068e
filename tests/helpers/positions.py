"""Reachable positions for the bots' tests: a seeded start board after random moves, and the
hypothesis strategy over them."""

from __future__ import annotations

from hypothesis import strategies as st

from bots.players import RandomBot
from engine import GameState


def reachable(seed: int, plies: int) -> GameState:
    """The position after up to `plies` random moves from a seeded start board."""
    chooser = RandomBot(seed)
    state = GameState.initial(seed)
    for _ in range(plies):
        if state.is_over:
            break
        state = state.apply(chooser.choose(state, 0.0))
    return state


positions = st.builds(
    reachable, st.integers(min_value=0, max_value=10_000), st.integers(min_value=0, max_value=59)
)
