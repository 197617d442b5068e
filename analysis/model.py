"""The definitions of the analysis (docs/analysis.md): evaluation → win probability, the marks,
accuracy, the turning point. Pure functions on numbers; nothing here searches.

The shape follows lichess (modules/analyse: WinPercent, AccuracyPercent, Advice): a logistic
curve from the engine's evaluation to a win probability, marks from the *win probability* a
move gave away (so a lost evaluation in a won position is no blunder), per-move accuracy
from the same loss, a game's accuracy from a volatility-weighted and a harmonic mean. The
curve's slope is ours, fitted on self-play of the built-in bots (`python -m
analysis.calibrate`; the table it printed is in docs/analysis.md).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

from bots.search import DECIDED

SLOPE = 0.00203
"""Win probability = 1 / (1 + exp(-SLOPE · evaluation)), evaluation in hundredths of a swarm
weight point for the side to move. Fitted by `python -m analysis.calibrate` (docs/analysis.md
has the run and its reliability table)."""

INACCURACY = 0.05
MISTAKE = 0.10
BLUNDER = 0.15
"""Marks by the win probability a move gave away against the best move (lichess's .1/.2/.3 in
its ±1 'winning chances' scale): `?!` from INACCURACY, `?` from MISTAKE, `??` from BLUNDER."""

ONLY_MOVE_GAP = BLUNDER
"""`!` (only move): the best move was played and every other move would have lost at least
this much win probability (every alternative a blunder). Never for a single legal move."""

MARKS = ("?!", "?", "??", "!")


def win_probability(score: int) -> float:
    """The side to move's chance to win (draws count half) at this evaluation; proven
    results (±DECIDED and beyond) are 1 or 0."""
    if score >= DECIDED:
        return 1.0
    if score <= -DECIDED:
        return 0.0
    return 1.0 / (1.0 + math.exp(-SLOPE * score))


def score_for(probability: float) -> int | None:
    """The evaluation whose win probability is `probability` (rounded up), None outside
    (0, 1): the inverse of `win_probability`, for the only-move threshold."""
    if not 0.0 < probability < 1.0:
        return None
    return math.ceil(math.log(probability / (1.0 - probability)) / SLOPE)


def move_loss(best: int, played: int, previous: tuple[int, int | None] | None) -> float:
    """The win probability a move gave away: P(best) − P(played) at the deepest completed
    depth, or the same difference one depth shallower when that is larger. A search of odd
    depth ends on the mover's ply and one of even depth on the opponent's, and the loss
    swings with that parity (a refutation seen at one is missed at the other); the larger of
    two neighbouring depths is what a search with more nodes also sees (docs/analysis.md,
    "The search and its measurements": the mean of the two agreed far worse)."""
    loss = max(0.0, win_probability(best) - win_probability(played))
    if previous is not None and previous[1] is not None:
        shallower = max(0.0, win_probability(previous[0]) - win_probability(previous[1]))
        loss = max(loss, shallower)
    return loss


def mark(loss: float, *, only_move: bool = False) -> str | None:
    """The mark of a move that gave away `loss` win probability (None: unmarked)."""
    if loss >= BLUNDER:
        return "??"
    if loss >= MISTAKE:
        return "?"
    if loss >= INACCURACY:
        return "?!"
    return "!" if only_move else None


def move_accuracy(loss: float) -> float:
    """A move's accuracy in percent from the win probability it gave away (lichess's curve:
    100 for no loss, about 64 for a 10-point loss, 0 from about 80 points)."""
    value = 103.1668 * math.exp(-0.04354 * (100.0 * max(0.0, loss))) - 3.1669
    return min(100.0, max(0.0, value))


def game_accuracy(accuracies: Sequence[float], weights: Sequence[float]) -> float | None:
    """A side's accuracy over its moves: the mean of the weighted mean (weights: how much the
    game swung around each move) and the harmonic mean (which a few bad moves pull down);
    None without moves."""
    if not accuracies:
        return None
    weighted = sum(a * w for a, w in zip(accuracies, weights, strict=True)) / sum(weights)
    harmonic = statistics.harmonic_mean([max(a, 0.001) for a in accuracies])
    return (weighted + harmonic) / 2.0


def volatility_weights(win_one: Sequence[float], moves: int) -> list[float]:
    """Per move, the standard deviation (percent points, clamped to 0.5 … 12) of ONE's win
    probability in a window around it (a tenth of the game, 2 … 8 positions; lichess's
    weighting): moves in a calm position count less than moves where the game swung."""
    if moves <= 0:
        return []
    window = min(8, max(2, moves // 10))
    percent = [100.0 * value for value in win_one]
    weights = []
    for index in range(moves):
        start = max(0, min(index, len(percent) - window))
        part = percent[start : start + window]
        deviation = statistics.pstdev(part) if len(part) > 1 else 0.0
        weights.append(min(12.0, max(0.5, deviation)))
    return weights


def turning_point(win_one: Sequence[float], winner_is_one: bool | None) -> int | None:
    """The move (0-based index) after which the eventual winner's win probability stayed
    above one half to the end: where the result became decided. `win_one[i]` is ONE's win
    probability in position i (before move i; the last entry is the final position). None
    for a draw or without moves."""
    if winner_is_one is None or len(win_one) < 2:
        return None
    winner = [value if winner_is_one else 1.0 - value for value in win_one]
    index = len(winner) - 1
    while index > 0 and winner[index] > 0.5:
        index -= 1
    # winner[index] <= 0.5 (or the start): the move made in position `index` decided it.
    return min(index, len(winner) - 2)
