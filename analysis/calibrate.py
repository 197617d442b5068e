"""Fit the win-probability curve on real games: self-play of the built-in bots.

    python -m analysis.calibrate [--games 120] [--nodes 12000] [--every 4] [--samples FILE]

Plays `--games` games of the `search` bot against itself (a few random opening moves per
game, seeded, so the games differ), analyses every `--every`-th position with the analysis
settings, and fits the slope k of P(the side to move wins) = 1 / (1 + exp(-k · evaluation))
by maximum likelihood (draws count half; proven results are left out: they are 0 or 1 by
definition). Prints k and the reliability table (predicted against observed) that
docs/analysis.md shows; `analysis.model.SLOPE` is set from it by hand. Deterministic: the
same options give the same samples and the same k.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import math
import multiprocessing
import random
import sys
from collections.abc import Sequence

from analysis.game import DEFAULT_NODES, Settings, analyse_position
from bots.search import DECIDED, SearchBot
from engine import GameState, Team

Sample = tuple[int, float]  # (evaluation for the side to move, its score: 1, 0.5 or 0)


def play_and_sample(game: int, nodes: int, every: int, bot_nodes: int) -> list[Sample]:
    """One self-play game on board `game` and its sampled positions."""
    rng = random.Random(game)
    state = GameState.initial(game)
    bots = {
        Team.ONE: SearchBot(2 * game, max_nodes=bot_nodes),
        Team.TWO: SearchBot(2 * game + 1, max_nodes=bot_nodes),
    }
    openings = rng.randrange(1, 5)
    states = [state]
    while not state.is_over:
        if state.turn < openings:
            move = rng.choice(state.legal_moves())
        else:
            move = bots[state.current_team].choose(state, math.inf)
        state = state.apply(move)
        states.append(state)
    winner = state.current_winner().winner
    settings = Settings(nodes=nodes)
    samples = []
    for position in states[openings:-1:every]:
        result, _ = analyse_position(position, None, settings)
        if abs(result.best_score) >= DECIDED:
            continue
        mover = position.current_team
        outcome = 0.5 if winner is None else 1.0 if winner is mover else 0.0
        samples.append((result.best_score, outcome))
    return samples


def _log_likelihood(slope: float, samples: Sequence[Sample]) -> float:
    total = 0.0
    for score, outcome in samples:
        p = 1.0 / (1.0 + math.exp(-slope * score))
        p = min(max(p, 1e-12), 1 - 1e-12)
        total += outcome * math.log(p) + (1 - outcome) * math.log(1 - p)
    return total


def fit(samples: Sequence[Sample]) -> float:
    """The slope of maximum likelihood (golden-section search on 1e-5 … 0.05)."""
    low, high = 1e-5, 0.05
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(80):
        a = high - ratio * (high - low)
        b = low + ratio * (high - low)
        if _log_likelihood(a, samples) < _log_likelihood(b, samples):
            low = a
        else:
            high = b
    return (low + high) / 2


def reliability(samples: Sequence[Sample], slope: float, bins: int = 10) -> list[str]:
    """The reliability table (Markdown): per band of predicted probability, how many
    positions, the mean prediction and the observed score of the side to move."""
    rows = ["| predicted | positions | mean predicted | observed |", "|---|---|---|---|"]
    grouped: list[list[tuple[float, float]]] = [[] for _ in range(bins)]
    for score, outcome in samples:
        p = 1.0 / (1.0 + math.exp(-slope * score))
        grouped[min(bins - 1, int(p * bins))].append((p, outcome))
    for index, group in enumerate(grouped):
        if not group:
            continue
        mean = sum(p for p, _ in group) / len(group)
        observed = sum(o for _, o in group) / len(group)
        band = f"{100 * index // bins}–{100 * (index + 1) // bins} %"
        rows.append(f"| {band} | {len(group)} | {100 * mean:.1f} % | {100 * observed:.1f} % |")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """The calibration run."""
    parser = argparse.ArgumentParser(prog="python -m analysis.calibrate", description=__doc__)
    parser.add_argument("--games", type=int, default=120)
    parser.add_argument("--nodes", type=int, default=DEFAULT_NODES, help="analysis nodes")
    parser.add_argument("--bot-nodes", type=int, default=2000, help="the players' nodes")
    parser.add_argument("--every", type=int, default=4, help="analyse every N-th position")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--samples", default=None, help="also write the samples (JSON) here")
    options = parser.parse_args(argv)
    samples: list[Sample] = []
    jobs = [
        (game, options.nodes, options.every, options.bot_nodes)
        for game in range(1, options.games + 1)
    ]
    if options.concurrency > 1:
        context = multiprocessing.get_context("spawn")
        with concurrent.futures.ProcessPoolExecutor(
            options.concurrency, mp_context=context
        ) as pool:
            for done, part in enumerate(pool.map(play_and_sample, *zip(*jobs, strict=True)), 1):
                samples.extend(part)
                print(f"\r{done}/{options.games} games", end="", file=sys.stderr, flush=True)
    else:
        for done, job in enumerate(jobs, 1):
            samples.extend(play_and_sample(*job))
            print(f"\r{done}/{options.games} games", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    if options.samples:
        with open(options.samples, "w", encoding="utf-8") as file:
            json.dump(samples, file)
    slope = fit(samples)
    print(
        f"{len(samples)} positions of {options.games} games, analysed at "
        f"{options.nodes} nodes: slope k = {slope:.5f}"
    )
    for row in reliability(samples, slope):
        print(row)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
