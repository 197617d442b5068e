"""The bot API (`Bot`, `make_bot`) and the two simple bots, `random` and `greedy`."""

from __future__ import annotations

import random
from typing import Protocol

from engine import GameState, Move

DEFAULT_BUDGET = 1.5
"""Seconds a bot may think in a real game: well under the official 2 s soft limit, so the
network and the server's clock never push it over (protocol §11 has no limit of its own)."""


class Bot(Protocol):
    """A move chooser. `choose` must return a legal move of the team to move within `budget`
    seconds; it raises ValueError when there is none (the game is over)."""

    name: str

    def choose(self, state: GameState, budget: float) -> Move: ...


def _legal_or_raise(state: GameState) -> list[Move]:
    moves = state.legal_moves()
    if not moves:
        raise ValueError(f"no legal move for {state.current_team.name} at turn {state.turn}")
    return moves


class RandomBot:
    """A uniformly random legal move (seeded: the same seed plays the same game)."""

    name = "random"

    def __init__(self, seed: int | None = None) -> None:
        self._rng = random.Random(seed)

    def choose(self, state: GameState, budget: float) -> Move:
        """A random legal move; `budget` is irrelevant (it answers at once)."""
        return self._rng.choice(_legal_or_raise(state))


class GreedyBot:
    """The move that maximises its own greatest swarm weight afterwards; ties broken by the
    smaller greatest swarm of the opponent, then at random (seeded)."""

    name = "greedy"

    def __init__(self, seed: int | None = None) -> None:
        self._rng = random.Random(seed)

    def choose(self, state: GameState, budget: float) -> Move:
        """The greedy move; one ply, a few milliseconds, so `budget` is never near."""
        moves = _legal_or_raise(state)
        me = state.current_team
        opponent = me.opponent
        best: list[Move] = []
        best_key = (-2, 0)
        for move in moves:
            after = state.apply(move)
            key = (after.greatest_swarm_weight(me), -after.greatest_swarm_weight(opponent))
            if key > best_key:
                best_key, best = key, [move]
            elif key == best_key:
                best.append(move)
        return best[0] if len(best) == 1 else self._rng.choice(best)


BOT_NAMES = ("random", "greedy", "search", "search-v1")


def make_bot(name: str, seed: int | None = None) -> Bot:
    """A new bot by name (`random`, `greedy`, `search`, `search-v1` — the search before the
    analysis work, kept for comparisons); ValueError for another name."""
    if name == "random":
        return RandomBot(seed)
    if name == "greedy":
        return GreedyBot(seed)
    if name == "search":
        from bots.search import SearchBot  # search imports this module for Bot's helpers

        return SearchBot(seed)
    if name == "search-v1":
        from bots.search_v1 import SearchBotV1

        return SearchBotV1(seed)
    raise ValueError(f"unknown bot {name!r}; choose one of {', '.join(BOT_NAMES)}")
