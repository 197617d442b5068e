"""`search` beats `greedy` and `greedy` beats `random`, with statistical significance.

In-process games on the engine. Each seeded start board is played twice with the sides
swapped (a pair), so neither bot profits from a lucky board or side. A pair counts for the
bot that scored more in it (a win 2, a tie 1 point per game); even pairs are dropped. The
one-sided sign test asks how likely that many pairs would fall to the first bot if both
were equally strong.

`search` runs on a node limit instead of a clock, so the games are the same on any machine.
"""

from __future__ import annotations

from collections.abc import Callable
from math import comb

import pytest

from bots import Bot, SearchBot, make_bot
from bots.selfplay import play
from engine import GameState, Team

BOARDS = range(10)
SIGNIFICANCE = 0.01
SEARCH_NODES = 200  # positions per move: about depth 2, a few dozen milliseconds


def sign_test_p(wins: int, losses: int) -> float:
    """One-sided p-value: the chance of at least `wins` of `wins + losses` fair coin flips."""
    trials = wins + losses
    return float(sum(comb(trials, k) for k in range(wins, trials + 1)) / 2**trials)


def test_sign_test_matches_known_values() -> None:
    assert sign_test_p(7, 0) == pytest.approx(1 / 128)
    assert sign_test_p(9, 1) == pytest.approx(11 / 1024)
    assert sign_test_p(0, 3) == 1.0


def pair_points(first: Callable[[int], Bot], second: Callable[[int], Bot], board: int) -> int:
    """Game points (2 win, 1 tie) of `first` over both games on `board`, sides swapped."""
    points = 0
    for first_plays in (Team.ONE, Team.TWO):
        a, b = first(board), second(board)
        one, two = (a, b) if first_plays is Team.ONE else (b, a)
        final = play(one, two, GameState.initial(board), budget=60.0)
        winner = final.current_winner().winner
        points += 2 if winner is first_plays else 1 if winner is None else 0
    return points


def assert_stronger(first: Callable[[int], Bot], second: Callable[[int], Bot]) -> None:
    pairs = [pair_points(first, second, board) for board in BOARDS]
    wins = sum(points > 2 for points in pairs)
    losses = sum(points < 2 for points in pairs)
    p_value = sign_test_p(wins, losses)
    assert p_value < SIGNIFICANCE, f"pair points {pairs}: p = {p_value:.4f}"


def test_greedy_beats_random() -> None:
    assert_stronger(lambda seed: make_bot("greedy", seed), lambda seed: make_bot("random", seed))


def test_search_beats_greedy() -> None:
    assert_stronger(
        lambda seed: SearchBot(seed, max_nodes=SEARCH_NODES), lambda seed: make_bot("greedy", seed)
    )
