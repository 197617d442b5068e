"""Traces of the analysis search for bench.analysis: every completed root iteration of a
position's search, so that the analysis at any node bound up to the trace's cap is read off
one search instead of searched again.

Why this is exact: `SearchBot.analyse` bounded by nodes is iterative deepening on a fresh
table, and its answer is the deepest iteration completed within the bound — iteration d
completes at N nodes iff the nodes counted by its end are at most N, and the iterations
before it are the same computation whatever the bound. So the search at 96 000 nodes
contains the one at 12 000 as a prefix, and a trace to 96 000 nodes gives both the analysis
and its 8x reference. `bench.analysis` checks the claim on every run: the analysis of real
`Analyser` runs equals the one read off the traces, move for move.

The traces are kept in a cache file (JSON lines) named by a hash of the code that decides
them (bots/, engine/ and the bench's games), so an experiment with the definitions of
analysis/ (the loss, the thresholds, a second look) reuses them, and a change of the search
or the evaluation starts a new file.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import inspect
import json
import multiprocessing
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bots.search import RootAnalysis, SearchBot
from engine import Direction, FieldState, GameState, Move, Team

VERSION = 1
ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Iteration:
    """One completed root iteration: its depth, the nodes counted when it completed, the
    best move and its score, and the played move's exact score."""

    depth: int
    nodes: int
    best: Move
    best_score: int
    played_score: int | None


@dataclass(frozen=True)
class Trace:
    """A position's search up to `cap` nodes: every completed iteration, and the nodes the
    search used (`total`: cap + 1 when the cap stopped it, less when the search ended by
    itself — all depths searched or a proven result). `fixed`: the answer of a position
    without iterations (a single legal move), the same at any bound."""

    played: Move
    cap: int
    total: int
    iterations: tuple[Iteration, ...]
    fixed: int | None = None

    def covers(self, nodes: int) -> bool:
        """Whether the answer at `nodes` can be read off this trace."""
        return nodes <= self.cap or self.total <= self.cap

    def at(self, nodes: int) -> RootAnalysis:
        """What `SearchBot(0, max_nodes=nodes).analyse(state, played)` answers."""
        if not self.covers(nodes):
            raise ValueError(f"the trace reaches {self.cap} nodes, not {nodes}")
        if self.fixed is not None:
            return RootAnalysis(0, 0, self.played, self.fixed, self.played, self.fixed, None)
        done = [iteration for iteration in self.iterations if iteration.nodes <= nodes]
        if not done:
            raise ValueError(f"not even depth 1 within {nodes} nodes")
        last = done[-1]
        before = done[-2] if len(done) > 1 else None
        played = last.best_score if self.played == last.best else last.played_score
        return RootAnalysis(
            last.depth,
            self.total if nodes >= self.total else nodes + 1,
            last.best,
            last.best_score,
            self.played,
            played,
            None,
            None if before is None else (before.best_score, before.played_score),
        )


class _TracingBot(SearchBot):
    """The analysis search, recording each completed root iteration (the search itself is
    SearchBot's, untouched)."""

    def __init__(self, cap: int) -> None:
        super().__init__(0, max_nodes=cap)
        self.iterations: list[Iteration] = []

    def _root_iteration(
        self,
        root: list[tuple[Move, GameState]],
        scores: dict[Move, int],
        depth: int,
        exact: Move | None,
    ) -> tuple[Move, int]:
        best, score = super()._root_iteration(root, scores, depth, exact)
        played = None if exact is None else scores[exact]
        self.iterations.append(Iteration(depth, self._nodes, best, score, played))
        return best, score


def trace(state: GameState, played: Move, cap: int) -> Trace:
    """Search `state` (fresh, as the analysis does) up to `cap` nodes and keep every
    iteration."""
    bot = _TracingBot(cap)
    result = bot.analyse(state, played)
    if result.depth == 0:
        assert len(state.legal_moves()) == 1, "depth 1 not reached: the cap is too small"
        return Trace(played, cap, result.nodes, (), result.best_score)
    return Trace(played, cap, result.nodes, tuple(bot.iterations))


_Task = tuple[list[list[FieldState]], int, Team | None, Move, int]


def _run(task: _Task) -> Trace:
    rows, turn, first_union, played, cap = task
    return trace(GameState.from_rows(rows, turn=turn, first_union=first_union), played, cap)


def _move(move: Move) -> list[Any]:
    return [move.x, move.y, move.direction.name]


def _parse_move(value: Sequence[Any]) -> Move:
    return Move(int(value[0]), int(value[1]), Direction[str(value[2])])


def _dump(game: int, index: int, item: Trace) -> str:
    return json.dumps(
        {
            "game": game,
            "move": index,
            "played": _move(item.played),
            "cap": item.cap,
            "total": item.total,
            "fixed": item.fixed,
            "iterations": [
                [i.depth, i.nodes, *_move(i.best), i.best_score, i.played_score]
                for i in item.iterations
            ],
        },
        separators=(",", ":"),
    )


def _load(line: str) -> tuple[int, int, Trace]:
    data = json.loads(line)
    iterations = tuple(
        Iteration(d, n, _parse_move((x, y, direction)), best, played)
        for d, n, x, y, direction, best, played in data["iterations"]
    )
    item = Trace(_parse_move(data["played"]), data["cap"], data["total"], iterations, data["fixed"])
    return data["game"], data["move"], item


def code_hash(*extra: object) -> str:
    """A hash of what decides a trace: the search, the evaluation and the engine (every
    source file of bots/ and engine/), this module's format and `extra` (the bench's game
    generator)."""
    digest = hashlib.sha256(f"trace {VERSION}".encode())
    for folder in ("bots", "engine"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            digest.update(str(path.relative_to(ROOT)).encode())
            digest.update(path.read_bytes())
    for item in extra:
        digest.update(inspect.getsource(item).encode() if callable(item) else repr(item).encode())
    return digest.hexdigest()[:16]


class TraceStore:
    """Traces by (game, move index), kept in `path` (JSON lines; a later line for the same
    position, with a higher cap, replaces an earlier one). None: in memory only."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._traces: dict[tuple[int, int], Trace] = {}
        if path is not None and path.exists():
            for line in path.read_text().splitlines():
                if line.strip():
                    game, index, item = _load(line)
                    self._traces[game, index] = item

    def __len__(self) -> int:
        return len(self._traces)

    def get(self, game: int, index: int) -> Trace:
        """The trace of move `index` of game `game` (KeyError if there is none)."""
        return self._traces[game, index]

    def ensure(
        self,
        needs: Iterable[tuple[int, int, GameState, Move, int]],
        jobs: int = 1,
        progress: bool = True,
    ) -> int:
        """Trace every (game, index, state, played, nodes) that no stored trace covers at
        `nodes`; `jobs` processes. The stored played move must be the game's (else the games
        changed under the same hash: an error). Returns how many positions were searched."""
        todo: list[tuple[int, int, _Task]] = []
        for game, index, state, played, nodes in needs:
            known = self._traces.get((game, index))
            if known is not None and known.played != played:
                raise RuntimeError(f"cached trace of game {game} move {index} is of another game")
            if known is None or not known.covers(nodes):
                task = (state.rows(), state.turn, state.first_union, played, nodes)
                todo.append((game, index, task))
        if not todo:
            return 0
        handle = None if self.path is None else self.path.open("a")
        pool = None
        try:
            results: Iterable[Trace]
            if jobs > 1:
                pool = concurrent.futures.ProcessPoolExecutor(
                    jobs, mp_context=multiprocessing.get_context("spawn")
                )
                results = pool.map(_run, [task for *_, task in todo])
            else:
                results = (_run(task) for *_, task in todo)
            for done, ((game, index, _), item) in enumerate(zip(todo, results, strict=True)):
                self._traces[game, index] = item
                if handle is not None:
                    handle.write(_dump(game, index, item) + "\n")
                    handle.flush()
                if progress and (done + 1) % 25 == 0:
                    print(f"  traced {done + 1} of {len(todo)} positions", flush=True)
        finally:
            if pool is not None:
                pool.shutdown(cancel_futures=True)
            if handle is not None:
                handle.close()
        return len(todo)
