"""The move analysis (analysis/): search speed next to the engine's raw move generation, the
time to analyse a 60-move game on one core, and how often the marks agree with an analysis
at 8× the nodes.

    python -m bench.analysis [--nodes N[,N…]] [--games 10] [--factor 8] [--jobs 2]
                             [--cache DIR | --no-cache] [--check-games K] [--details]

1. nodes/s of the analysis search on the positions of a game, and in the same run the
   engine alone: legal-move lists and applied moves per second on the same positions;
2. per node setting, seconds to analyse a 60-move game (search against search, board 1,
   scaled to 60 moves) in this process (one core): the CPU time and the wall clock;
3. per node setting, --games games (`test_games`) analysed at N and at --factor × N nodes:
   recall (of the moves the deeper analysis marks `?` or `??`, the share the analysis at N
   marks `?` or `??` too; the goal: at least 90 %), precision (the other way round), each
   with its counts and a Wilson 95 % interval, and the share of identical marks; against two
   references: the analysis at --factor × N with the same rule (its second look included)
   and a plain search at --factor × N nodes of every position (no second look).

Both analyses of step 3 are read off one traced search per position (bench.analysis_trace:
the search at 8N nodes contains the one at N as a prefix), kept in a cache file named by a
hash of bots/, engine/ and the games, so a change of analysis/'s definitions is measured
again in seconds. Every run checks the traces: the first --check-games games (default: all)
are analysed at N by the real `Analyser` too and must give the same analysis, move for
move, as the one read off the traces.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from analysis import Analyser, Game, GameAnalysis, Settings
from analysis.game import DEFAULT_NODES, paired, second_look, summarise
from bench.analysis_trace import ROOT, Trace, TraceStore, code_hash
from bots import GreedyBot, SearchBot
from bots.players import Bot
from bots.search import RootAnalysis
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


def wilson(successes: int, trials: int, z: float = 1.96) -> tuple[float, float]:
    """The Wilson score interval (95 % by default) of a share `successes` of `trials`."""
    if trials == 0:
        return 0.0, 1.0
    share = successes / trials
    centre = share + z * z / (2 * trials)
    spread = z * math.sqrt(share * (1 - share) / trials + z * z / (4 * trials * trials))
    scale = 1 + z * z / trials
    return (centre - spread) / scale, (centre + spread) / scale


def share_text(successes: int, trials: int) -> str:
    """`7 of 13 (54 %, 29–77 %)`: the count, the share and its Wilson 95 % interval."""
    if not trials:
        return "0 of 0"
    low, high = wilson(successes, trials)
    return (
        f"{successes} of {trials} ({100 * successes / trials:.0f} %, "
        f"{100 * low:.0f}–{100 * high:.0f} %)"
    )


def _plain(mark: str | None) -> str | None:
    # `!` needs the only-move check, which the traces do not replay: it counts as unmarked.
    return None if mark == "!" else mark


@dataclass
class Agreement:
    """Marks `?`/`??` of the analysis at `nodes` against those at `factor` × `nodes`."""

    nodes: int
    deep_nodes: int
    flagged: int = 0  # moves marked ?/?? at `nodes`
    found: int = 0  # moves marked ?/?? at `deep_nodes`
    both: int = 0  # moves marked ?/?? by both
    same: int = 0  # moves with the identical mark (or none; `!` counts as none) in both
    total: int = 0
    depth: float = 0.0  # mean completed depth at `nodes`
    deep_depth: float = 0.0
    second_looks: int = 0  # positions searched a second time at `nodes`
    differences: list[str] = field(default_factory=list)

    def add(self, number: int, normal: GameAnalysis, deeper: GameAnalysis) -> None:
        """Count one game (the `number`-th) analysed at both settings."""
        for ma, mb in zip(normal.moves, deeper.moves, strict=True):
            a, b = ma.mark in ("?", "??"), mb.mark in ("?", "??")
            self.flagged += a
            self.found += b
            self.both += a and b
            self.same += _plain(ma.mark) == _plain(mb.mark)
            self.depth += ma.depth
            self.deep_depth += mb.depth
            self.total += 1
            if a != b:
                self.differences.append(
                    f"game {number} move {ma.number}: {ma.mark or '-'} loss {ma.loss:.3f} "
                    f"depth {ma.depth} best {'=' if ma.best == ma.played else '≠'} played | "
                    f"{mb.mark or '-'} loss {mb.loss:.3f} depth {mb.depth} best "
                    f"{'=' if mb.best == mb.played else '≠'} played"
                )

    @property
    def recall(self) -> float:
        """Of the deeper analysis's ?/??, the share the analysis at `nodes` marks ?/?? too."""
        return self.both / self.found if self.found else 1.0

    @property
    def precision(self) -> float:
        """Of the ?/?? at `nodes`, the share the deeper analysis confirms."""
        return self.both / self.flagged if self.flagged else 1.0


def _look(first: RootAnalysis, settings: Settings, look: bool) -> int | None:
    return second_look(first, settings) if look else None


def _reported(answer: Trace, nodes: int) -> RootAnalysis:
    # What the analysis answers at `nodes`: the search's iterations within them, through the
    # analysis's own `paired` (a lone odd depth from 5 on gives way to the even one before).
    raw = answer.at(nodes)
    done = [(i.depth, i.best, i.best_score, i.played_score) for i in answer.iterations]
    done = [item for item, i in zip(done, answer.iterations, strict=True) if i.nodes <= nodes]
    return paired(done, answer.played, raw.nodes) if done else raw


def _answer(answer: Trace, settings: Settings, look: bool) -> RootAnalysis:
    # analysis.game._position's rule, on answers read off a trace (a fresh search at N is a
    # prefix of one at the second look's bound, which the analysis's continuation relies on
    # as well; tests/analysis/test_game.py checks the two agree). The rule reads the search's
    # raw answer at N (its deepest iteration), the analysis reports `paired`'s.
    first = answer.at(settings.nodes or 0)
    deeper = _look(first, settings, look)
    return _reported(answer, (settings.nodes or 0) if deeper is None else deeper)


def _bounds(store: TraceStore, key: tuple[int, int], settings: Settings, look: bool) -> list[int]:
    # The node bounds the rule asks for at this position, as far as the trace can tell.
    first = settings.nodes or 0
    try:
        answer = store.get(*key)
    except KeyError:
        return [first]
    if not answer.covers(first):
        return [first]
    deeper = _look(answer.at(first), settings, look)
    return [first] if deeper is None else [first, deeper]


def traced_analyses(
    store: TraceStore, games: list[Game], settings: Settings, jobs: int, look: bool = True
) -> tuple[list[GameAnalysis], int]:
    """Every game analysed with `settings`, read off the traces (searching what the store
    lacks first): the analyses and the number of second looks. `look=False`: without the
    second look (one search bounded by the settings' nodes, the analysis before it)."""
    states = [game.states() for game in games]
    for _ in range(2):  # the first bound, then the second look it asks for
        needs = [
            (g, i, states[g][i], move, bound)
            for g, game in enumerate(games)
            for i, move in enumerate(game.moves)
            for bound in _bounds(store, (g, i), settings, look)
        ]
        store.ensure(needs, jobs)
    analyses, looks = [], 0
    for g, game in enumerate(games):
        results = []
        for i in range(len(game.moves)):
            answer = store.get(g, i)
            results.append(_answer(answer, settings, look))
            looks += _look(answer.at(settings.nodes or 0), settings, look) is not None
        analyses.append(summarise(game, settings, states[g], results))
    return analyses, looks


def agreement(
    nodes: int,
    factor: int,
    games: list[Game],
    store: TraceStore,
    jobs: int,
    deep_look: bool = True,
) -> tuple[Agreement, list[GameAnalysis]]:
    """The marks at `nodes` against `factor` × `nodes` on `games` (both read off the
    traces), and the analyses at `nodes`. `deep_look=False`: the reference without the
    second look (a plain search at `factor` × `nodes` of every position)."""
    result = Agreement(nodes, nodes * factor)
    # The deeper first: its traces contain the analysis at `nodes` (else both are searched).
    deeper, _ = traced_analyses(store, games, Settings(nodes=nodes * factor), jobs, deep_look)
    normal, result.second_looks = traced_analyses(store, games, Settings(nodes=nodes), jobs)
    for number, (a, b) in enumerate(zip(normal, deeper, strict=True), start=1):
        result.add(number, a, b)
    result.depth /= max(result.total, 1)
    result.deep_depth /= max(result.total, 1)
    return result, normal


def check(games: list[Game], traced: list[GameAnalysis], nodes: int) -> None:
    """The real Analyser at `nodes` on `games` must give what the traces gave."""
    with Analyser(Settings(nodes=nodes)) as analyser:
        for game, expected in zip(games, traced, strict=False):
            real = analyser.analyse(game)
            for a, b in zip(real.moves, expected.moves, strict=True):
                if (a.best, a.eval_best, a.eval_played, a.depth, a.nodes, _plain(a.mark)) != (
                    b.best,
                    b.eval_best,
                    b.eval_played,
                    b.depth,
                    b.nodes,
                    _plain(b.mark),
                ):
                    raise AssertionError(
                        f"{game.label} move {a.number}: the real analysis {a} differs from "
                        f"the traced {b}"
                    )


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
    parser = argparse.ArgumentParser(
        prog="python -m bench.analysis",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--nodes",
        default=str(DEFAULT_NODES),
        help="node settings to measure, comma-separated (the agreement/time curve)",
    )
    parser.add_argument("--games", type=int, default=10)
    parser.add_argument("--factor", type=int, default=8)
    parser.add_argument("--jobs", type=int, default=1, help="processes tracing positions")
    parser.add_argument(
        "--cache",
        type=Path,
        default=ROOT / ".bench-cache",
        help="where the traces are kept (a file per hash of the search code)",
    )
    parser.add_argument("--no-cache", action="store_true", help="keep no traces on disk")
    parser.add_argument(
        "--check-games",
        type=int,
        default=None,
        help="games checked against the real Analyser at each setting (default: all)",
    )
    parser.add_argument("--no-time", action="store_true", help="skip the speed and time figures")
    parser.add_argument(
        "--plain-reference",
        action="store_true",
        help="only the plain 8x search as the reference (the same rule's needs traces to 16x "
        "the nodes of the positions its second look picks at 8x)",
    )
    parser.add_argument("--details", action="store_true", help="list the moves marked differently")
    options = parser.parse_args()
    settings = [int(value) for value in options.nodes.split(",")]
    print(f"load average {os.getloadavg()[0]:.2f}; analysis at {settings} nodes", flush=True)

    times: dict[int, tuple[float, float, float]] = {}
    if not options.no_time:
        elapsed, cpu, analysis, game = game_time(settings[0])
        nodes = sum(move.nodes for move in analysis.moves)
        lists, applies = engine_rates(game.states()[:-1])
        print(
            f"search: {nodes / elapsed:,.0f} nodes/s (mean depth "
            f"{sum(m.depth for m in analysis.moves) / len(analysis.moves):.2f}); engine alone: "
            f"{lists:,.0f} move lists/s, {applies:,.0f} applied moves/s",
            flush=True,
        )
        scale = 60 / len(game.moves)
        times[settings[0]] = (cpu * scale, elapsed * scale, os.getloadavg()[0])
        for count in settings[1:]:
            elapsed, cpu, _, _ = game_time(count)
            times[count] = (cpu * scale, elapsed * scale, os.getloadavg()[0])

    games = test_games(options.games)
    path = None
    if not options.no_cache:
        options.cache.mkdir(parents=True, exist_ok=True)
        path = options.cache / f"analysis-trace-{code_hash(self_play, test_games)}.jsonl"
    store = TraceStore(path)
    print(
        f"agreement on {len(games)} games ({sum(len(g.moves) for g in games)} moves) against "
        f"{options.factor}x the nodes; traces: {path or 'in memory'} ({len(store)} cached)",
        flush=True,
    )
    rows = []
    for count in sorted(settings, reverse=True):  # the deepest traces first: they cover the rest
        plain, normal = agreement(
            count, options.factor, games, store, options.jobs, deep_look=False
        )
        references = [("plain search", plain)]
        if not options.plain_reference:
            found, _ = agreement(count, options.factor, games, store, options.jobs)
            references.insert(0, ("same rule", found))
        checked = len(games) if options.check_games is None else options.check_games
        check(games[:checked], normal, count)
        cpu_text = "-"
        if count in times:
            cpu, wall, load = times[count]
            cpu_text = f"{cpu:.1f} s ({wall:.1f} s, load {load:.1f})"
        # The reference with the same rule (the analysis at 8x the nodes, second look and
        # all), and without it (one plain search at 8x the nodes of every position).
        for reference, result in references:
            rows.append(
                f"| {count} | {reference} | {cpu_text} | {result.depth:.2f} / "
                f"{result.deep_depth:.2f} | {share_text(result.both, result.found)} | "
                f"{share_text(result.both, result.flagged)} | "
                f"{share_text(result.same, result.total)} | {result.second_looks} |"
            )
        print(f"  {count} nodes: checked {checked} games against the real Analyser", flush=True)
        if options.details:
            for line in references[0][1].differences:
                print("   ", line)
    print(
        "recall: of the deeper analysis's ?/??, the share marked ?/?? at the setting; "
        "precision: of the setting's ?/??, the share the deeper confirms; Wilson 95 % intervals"
    )
    print(
        "| nodes | reference at 8x | 60-move game, one core: CPU (wall) | mean depth / at 8x "
        "| recall | precision | identical marks (! as none) | second looks |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(row)
    print(f"load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
