"""The move analysis (analysis/): search speed next to the engine's raw move generation, the
time to analyse a 60-move game on one core, and how often the marks agree with an analysis
at 8× the nodes.

    python -m bench.analysis [--nodes N[,N…]] [--games 3] [--factor 8] [--chain 10]

1. nodes/s of the analysis search on the positions of a game, and in the same run the
   engine alone: legal-move lists and applied moves per second on the same positions;
2. per node setting, seconds to analyse a 60-move game (search against search, board 1,
   scaled to 60 moves) in this process (one core);
3. per node setting, --games games (`test_games`) analysed at N and at --factor × N nodes:
   recall (of the moves the deeper analysis marks `?` or `??`, the share the analysis at N
   marks `?` or `??` too; the goal: at least 90 %), precision (the other way round) and the
   share of identical marks over all moves.
"""

from __future__ import annotations

import argparse
import os
import time
from dataclasses import dataclass

from analysis import Analyser, Game, GameAnalysis, Settings
from analysis import game as game_module
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


def test_games(count: int) -> list[Game]:
    """The games the agreement is measured on: `search` (1500 nodes a move) against `greedy`
    (boards 101, 102, …), and every third one `search` at 1500 against `search` at 400 nodes
    (boards 201, …): games with blunders and games with subtle mistakes."""
    games = []
    for seed in range(1, count + 1):
        if seed % 3:
            games.append(self_play(100 + seed, SearchBot(seed, max_nodes=1500), GreedyBot(seed)))
        else:
            weak = SearchBot(seed + 50, max_nodes=400)
            games.append(self_play(200 + seed, SearchBot(seed, max_nodes=1500), weak))
    return games


@dataclass
class Agreement:
    """Marks `?`/`??` of the analysis at `nodes` against those at `factor` × `nodes`."""

    nodes: int
    deep_nodes: int
    flagged: int = 0  # moves marked ?/?? at `nodes`
    found: int = 0  # moves marked ?/?? at `deep_nodes`
    both: int = 0  # moves marked ?/?? by both
    same: int = 0  # moves with the identical mark (or none) in both
    total: int = 0

    def add(self, normal: GameAnalysis, deeper: GameAnalysis) -> None:
        """Count one game analysed at both settings."""
        for a, b, ma, mb in zip(
            _serious(normal), _serious(deeper), normal.moves, deeper.moves, strict=True
        ):
            self.flagged += a
            self.found += b
            self.both += a and b
            self.same += ma.mark == mb.mark
            self.total += 1

    @property
    def recall(self) -> float:
        """Of the deeper analysis's ?/??, the share the analysis at `nodes` marks ?/?? too."""
        return self.both / self.found if self.found else 1.0

    @property
    def precision(self) -> float:
        """Of the ?/?? at `nodes`, the share the deeper analysis confirms."""
        return self.both / self.flagged if self.flagged else 1.0


def agreement(nodes: int, factor: int, games: list[Game]) -> Agreement:
    """The marks at `nodes` against `factor` × `nodes` on `games`."""
    result = Agreement(nodes, nodes * factor)
    for game in games:
        with Analyser(Settings(nodes=nodes)) as analyser:
            normal = analyser.analyse(game)
        with Analyser(Settings(nodes=nodes * factor)) as analyser:
            deeper = analyser.analyse(game)
        result.add(normal, deeper)
    return result


def game_time(nodes: int) -> tuple[float, float, GameAnalysis, Game]:
    """Seconds (wall clock, and CPU time of this process) to analyse the benchmark's game at
    `nodes`, in this process. The CPU time is what one core needs whatever the machine's load;
    the wall clock grows with the load."""
    game = self_play(1, SearchBot(1, max_nodes=2000), SearchBot(2, max_nodes=2000))
    with Analyser(Settings(nodes=nodes)) as analyser:
        began, cpu = time.perf_counter(), time.process_time()
        analysis = analyser.analyse(game)
        elapsed, cpu = time.perf_counter() - began, time.process_time() - cpu
    return elapsed, cpu, analysis, game


def main() -> int:
    """The benchmark."""
    parser = argparse.ArgumentParser(prog="python -m bench.analysis", description=__doc__)
    parser.add_argument(
        "--nodes",
        default=str(DEFAULT_NODES),
        help="node settings to measure, comma-separated (the agreement/time curve)",
    )
    parser.add_argument("--games", type=int, default=3)
    parser.add_argument("--factor", type=int, default=8)
    parser.add_argument(
        "--chain",
        type=int,
        default=game_module.CHAIN,
        help="positions searched in a row on one table (1: every position on its own, the "
        "analysis before chains)",
    )
    options = parser.parse_args()
    game_module.CHAIN = options.chain  # read by Analyser.analyse in this process
    settings = [int(value) for value in options.nodes.split(",")]
    print(
        f"load average {os.getloadavg()[0]:.2f}; analysis at {settings} nodes, chains of "
        f"{options.chain} positions"
    )

    elapsed, cpu, analysis, game = game_time(settings[0])
    nodes = sum(move.nodes for move in analysis.moves)
    lists, applies = engine_rates(game.states()[:-1])
    print(
        f"search: {nodes / elapsed:,.0f} nodes/s (mean depth "
        f"{sum(m.depth for m in analysis.moves) / len(analysis.moves):.2f}); engine alone: "
        f"{lists:,.0f} move lists/s, {applies:,.0f} applied moves/s"
    )
    games = test_games(options.games)
    print(
        f"agreement on {len(games)} games ({sum(len(g.moves) for g in games)} moves) against "
        f"{options.factor}x the nodes; recall: of the deeper analysis's ?/??, the share marked "
        f"?/?? at the setting; precision: of the setting's ?/??, the share the deeper confirms"
    )
    print(
        "| nodes | 60-move game, one core: CPU (wall) | mean depth | recall | precision "
        "| identical marks |"
    )
    print("|---|---|---|---|---|---|")
    for count in settings:
        if count != settings[0]:
            elapsed, cpu, analysis, game = game_time(count)
        depth = sum(m.depth for m in analysis.moves) / len(analysis.moves)
        scale = 60 / len(game.moves)
        found = agreement(count, options.factor, games)
        print(
            f"| {count} | {cpu * scale:.1f} s ({elapsed * scale:.1f} s) | {depth:.2f} | "
            f"{found.both} of {found.found} "
            f"({100 * found.recall:.0f} %) | {found.both} of {found.flagged} "
            f"({100 * found.precision:.0f} %) | {found.same} of {found.total} "
            f"({100 * found.same / max(found.total, 1):.0f} %) |",
            flush=True,
        )
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
