"""Search bot speed: fixed-node analyses (bots.search.SearchBot.analyse) of positions from
seeded random games, in nodes per CPU second of this process (the search never reads the
clock with max_nodes, so both trees of an A/B comparison visit the same nodes).

    python -m bench.search_speed [--nodes 2000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import random
import time

from bots.search import SearchBot
from engine import GameState


def positions() -> list[GameState]:
    """Turns 0, 10, 20 and 30 of random games on boards 1-3 (fresh states, no lists)."""
    found = []
    for seed in (1, 2, 3):
        state = GameState.initial(seed)
        rng = random.Random(seed)
        while not state.is_over and state.turn < 40:
            if state.turn % 10 == 0:
                found.append(GameState.from_rows(state.rows(), state.turn, state.first_union))
            state = state.apply(rng.choice(state.legal_moves()))
    return found


def run(nodes: int) -> tuple[int, float]:
    """(nodes visited, CPU seconds) of one analysis of every position."""
    visited = 0
    began = time.process_time()
    for number, position in enumerate(positions()):
        visited += SearchBot(number, max_nodes=nodes).analyse(position).nodes
    return visited, time.process_time() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=2000, help="max_nodes per position")
    parser.add_argument("--repeat", type=int, default=3, help="runs; the fastest counts")
    args = parser.parse_args()
    visited, seconds = min((run(args.nodes) for _ in range(args.repeat)), key=lambda r: r[1])
    print(f"load average {os.getloadavg()[0]:.2f}")
    print(f"search: {visited} nodes in {seconds:.3f} s of CPU, {visited / seconds:,.0f} nodes/s")


if __name__ == "__main__":
    main()
