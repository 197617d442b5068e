"""The move analysis (analysis/): search speed next to the engine's raw move generation, the
time to analyse a 60-move game on one core, and how often the marks agree with an analysis
at 8× the nodes.

    python -m bench.analysis [--nodes N] [--games 2] [--factor 8]

1. nodes/s of the analysis search on the positions of a game, and in the same run the
   engine alone: legal-move lists and applied moves per second on the same positions;
2. seconds to analyse a whole 60-move game (search against search, board 1) at --nodes, in
   this process (one core);
3. --games games of `search` (1500 nodes a move) against `greedy` analysed at --nodes and at
   --factor × --nodes: of the moves the deeper analysis marks `?` or `??`, the share the
   default analysis marks `?` or `??` too (the goal: at least 90 %), the other way round,
   and the share of identical marks over all moves.
"""

from __future__ import annotations

import argparse
import os
import time

from analysis import Analyser, Game, GameAnalysis, Settings
from analysis.game import DEFAULT_NODES
from bots import GreedyBot, SearchBot
from bots.players import Bot
from engine import GameState, Team


def self_play(seed: int, one: Bot, two: Bot) -> Game:
    """A whole game between two bots on board `seed`."""
    state = start = GameState.initial(seed)
    bots = {Team.ONE: one, Team.TWO: two}
    moves = []
    while not state.is_over:
        move = bots[state.current_team].choose(state, 1e9)
        moves.append(move)
        state = state.apply(move)
    return Game(start, tuple(moves), (one.name, two.name), f"board {seed}")


def engine_rates(states: list[GameState], seconds: float = 2.0) -> tuple[float, float]:
    """Legal-move lists and applied moves per second over `states` (fresh states, so no
    cached move list is reused)."""
    lists = applies = 0
    began = time.perf_counter()
    while time.perf_counter() - began < seconds:
        for state in states:
            fresh = GameState.from_rows(state.rows(), state.turn, state.first_union)
            moves = fresh.legal_moves()
            lists += 1
            for move in moves:
                fresh.apply(move)
            applies += len(moves)
    elapsed = time.perf_counter() - began
    return lists / elapsed, applies / elapsed


def _serious(analysis: GameAnalysis) -> list[bool]:
    return [move.mark in ("?", "??") for move in analysis.moves]


def main() -> int:
    """The benchmark."""
    parser = argparse.ArgumentParser(prog="python -m bench.analysis", description=__doc__)
    parser.add_argument("--nodes", type=int, default=DEFAULT_NODES)
    parser.add_argument("--games", type=int, default=2)
    parser.add_argument("--factor", type=int, default=8)
    options = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; analysis at {options.nodes} nodes")

    game = self_play(1, SearchBot(1, max_nodes=2000), SearchBot(2, max_nodes=2000))
    states = game.states()[:-1]
    settings = Settings(nodes=options.nodes)
    with Analyser(settings) as analyser:
        began = time.perf_counter()
        analysis = analyser.analyse(game)
        elapsed = time.perf_counter() - began
    nodes = sum(move.nodes for move in analysis.moves)
    lists, applies = engine_rates(states)
    print(
        f"search: {nodes / elapsed:,.0f} nodes/s (mean depth "
        f"{sum(m.depth for m in analysis.moves) / len(analysis.moves):.2f}); engine alone: "
        f"{lists:,.0f} move lists/s, {applies:,.0f} applied moves/s"
    )
    print(
        f"a {len(game.moves)}-move game at {options.nodes} nodes on one core: {elapsed:.1f} s "
        f"({elapsed / len(game.moves) * 1000:.0f} ms a move; goal ≤ 30 s)"
    )

    deep = Settings(nodes=options.nodes * options.factor)
    found = confirmed = flagged = agreed = same = total = 0
    for seed in range(1, options.games + 1):
        played = self_play(100 + seed, SearchBot(seed, max_nodes=1500), GreedyBot(seed))
        with Analyser(settings) as analyser:
            normal = analyser.analyse(played)
        with Analyser(deep) as analyser:
            deeper = analyser.analyse(played)
        for a, b, ma, mb in zip(
            _serious(normal), _serious(deeper), normal.moves, deeper.moves, strict=True
        ):
            found += b
            confirmed += a and b
            flagged += a
            agreed += a and b
            same += ma.mark == mb.mark
            total += 1
        print(
            f"  game {seed}: {len(played.moves)} moves, ?/?? at {options.nodes}: "
            f"{sum(_serious(normal))}, at {deep.nodes}: {sum(_serious(deeper))}"
        )
    if found:
        print(
            f"of {found} ?/?? at {deep.nodes} nodes, {confirmed} ({100 * confirmed / found:.0f} %) "
            f"also at {options.nodes} (goal ≥ 90 %)"
        )
    if flagged:
        print(
            f"of {flagged} ?/?? at {options.nodes} nodes, {agreed} "
            f"({100 * agreed / flagged:.0f} %) also at {deep.nodes}"
        )
    if total:
        print(f"identical marks: {same} of {total} moves ({100 * same / total:.0f} %)")
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
