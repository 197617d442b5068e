"""The `search` bot: negamax alpha-beta (principal variation search) with iterative deepening,
bounded by a time budget for play, or by nodes/depth alone for analysis (reproducible).

Rule of this module: **with `max_nodes` or `max_depth` and no clock, the result depends on the
position and the bounds only** — a fresh bot on the same position gives the same move and
score on any machine (the move analysis, `analysis/`, relies on it; `analyse` never reads
the clock).

Move ordering: the best move of the previous iteration (root) or of the transposition table
(inside), killer moves, then moves that unite the mover's swarm, captures, and the history
heuristic. The table is keyed by the board, the turn and first_union (`bitboards()`), not by
the last move, so transpositions meet. Leaves are scored by `bots.evaluation`'s
`evaluate_for_one`, cached by board; final positions by the engine's own game end and winner
rules (`is_over`, `current_winner`), round limit included. With `quiescence=K` (off by
default, for both `choose` and `analyse`) the captures at the leaves are played out first, K
plies of them, standing pat allowed: an option measured for the analysis (docs/analysis.md).

`bots.search_v1` keeps the search as it was before (the `search-v1` bot) to measure this one
against it.
"""

from __future__ import annotations

import dataclasses
import math
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass

from bots.evaluation import evaluate_for_one
from engine import ROUND_LIMIT, GameState, Move, Team
from engine.geometry import geometry

WIN = 1_000_000
"""A won final position scores WIN - turn (quicker wins are better); heuristics stay far below."""
DECIDED = WIN - 2 * ROUND_LIMIT - 1
"""Scores at or beyond ±DECIDED are proven results (a won or lost final position)."""
_INFINITY = 10 * WIN
_EXACT, _LOWER, _UPPER = 0, 1, 2
_TABLE_LIMIT = 400_000  # entries; the table is cleared beyond this to bound memory
_EVAL_LIMIT = 400_000  # cached leaf evaluations, cleared beyond this
_CLOCK_EVERY = 256  # nodes between two looks at the clock (perf_counter is not free)

# Bonus keys for ordering (history scores stay far below these).
_UNITES = 1 << 36
_CAPTURES = 1 << 32

# Seconds kept back from the budget for unwinding the search and answering.
_RESERVE_MAX = 0.05
_RESERVE_SHARE = 0.1

_Key = tuple[int, int, int, int, int, int, Team | None]


class _Stop(Exception):
    """The time or node budget ran out: unwind to the root."""


@dataclass(frozen=True, slots=True)
class SearchInfo:
    """How the last `choose` went: the deepest completed depth (0 if none), positions
    visited, the score of the chosen move for the mover, and the seconds used."""

    depth: int
    nodes: int
    score: int
    seconds: float
    move: Move


@dataclass(frozen=True, slots=True)
class RootAnalysis:
    """One position analysed by `SearchBot.analyse`, all from the deepest *completed*
    iteration (scores of one depth compare; a cut-off iteration's do not): the best move and
    its score, the move asked about (`played`) and its exact score, whether the best move is
    the only one that scores well (`only_move`; None when not checked), the depth and the
    nodes used. Scores are for the team to move, in `bots.evaluation` units (±WIN-ish for
    proven results)."""

    depth: int
    nodes: int
    best: Move
    best_score: int
    played: Move | None
    played_score: int | None
    only_move: bool | None
    previous: tuple[int, int | None] | None = None  # (best, played) one iteration earlier

    def with_only_move(self, only: bool) -> RootAnalysis:
        """This analysis with the only-move check's answer."""
        return dataclasses.replace(self, only_move=only)


def _key(state: GameState) -> _Key:
    one, two, squid, ge2, ge3 = state.bitboards()
    return (one, two, squid, ge2, ge3, state.turn, state.first_union)


class SearchBot:
    """Principal variation search with iterative deepening, a transposition table, killer
    and history ordering. Stops when `budget` (minus a small reserve) runs out and plays the
    best move of the deepest finished iteration (or a better one found by the unfinished one).

    `max_depth` and `max_nodes` bound the search independently of the clock: with
    `max_nodes` and an ample budget the bot plays reproducibly (tests, benches).
    `quiescence`: plies of captures played out at the leaves, each capture counted as a node
    (0, the default: none, the search as it was)."""

    name = "search"

    def __init__(
        self,
        seed: int | None = None,
        *,
        max_depth: int | None = None,
        max_nodes: int | None = None,
        transposition_table: bool = True,
        quiescence: int = 0,
    ) -> None:
        self._rng = random.Random(seed)
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self._use_table = transposition_table
        if quiescence < 0:
            raise ValueError(f"quiescence must be 0 or more plies, got {quiescence}")
        self.quiescence = quiescence
        self._table: dict[_Key, tuple[int, int, int, Move | None]] = {}
        self._evaluations: dict[tuple[int, int, int, int], int] = {}
        self._history: dict[Move, int] = {}
        self._killers: dict[int, list[Move]] = {}
        self._nodes = 0
        self._deadline = math.inf
        self._node_limit = 0
        self.last: SearchInfo | None = None

    # ---- the public move ---------------------------------------------------------------

    def choose(self, state: GameState, budget: float) -> Move:
        """The best move found within `budget` seconds (ValueError if there is none)."""
        started = time.perf_counter()
        moves = state.legal_moves()
        if not moves:
            raise ValueError(f"no legal move for {state.current_team.name} at turn {state.turn}")
        reserve = min(_RESERVE_MAX, _RESERVE_SHARE * budget)
        self._begin(state, started + budget - reserve)
        # Seeded shuffle: equally good moves differ between seeds, not between runs.
        self._rng.shuffle(moves)
        if len(moves) == 1:
            self._finish(started, 0, moves[0], 0)
            return moves[0]
        root = [(move, state.apply(move)) for move in moves]
        scores = {move: 0 for move in moves}
        best_move, best_score, completed = root[0][0], -_INFINITY, 0
        try:
            for depth in range(1, self._deepest(state) + 1):
                iteration_best, alpha = self._root_iteration(root, scores, depth, None)
                completed = depth
                best_move, best_score = iteration_best, alpha
                if abs(best_score) >= DECIDED:
                    break  # a forced result: deeper search cannot change it
        except _Stop as stop:
            if stop.args:
                best_move, best_score = stop.args[0], stop.args[1]
        self._finish(started, completed, best_move, best_score)
        return best_move

    def analyse(
        self, state: GameState, played: Move | None = None, *, fresh: bool = True
    ) -> RootAnalysis:
        """Analyse `state` within `max_nodes`/`max_depth` (one of them must be set; the clock
        is never read): the best move and score and `played`'s exact score. `fresh` (the
        default) clears the tables first, so the answer depends on the position and the
        bounds alone; `fresh=False` keeps what the previous `analyse` of this bot learnt (a
        game's positions analysed in order: the answer then depends on that order too).
        ValueError without a legal move, or for an illegal `played`."""
        if self.max_nodes is None and self.max_depth is None:
            raise ValueError("analyse needs max_nodes or max_depth: it never reads the clock")
        moves = state.legal_moves()
        if not moves:
            raise ValueError(f"no legal move for {state.current_team.name} at turn {state.turn}")
        if played is not None and played not in moves:
            raise ValueError(f"{played} is not legal at turn {state.turn}")
        if fresh:
            self._table.clear()
            self._evaluations.clear()
            self._history.clear()
        self._begin(state, math.inf)
        root = [(move, state.apply(move)) for move in moves]
        scores = {move: 0 for move in moves}
        best_move = moves[0]
        best_score = played_score = 0
        completed = 0
        previous: tuple[int, int | None] | None = None
        if len(root) > 1:
            try:
                for depth in range(1, self._deepest(state) + 1):
                    iteration = self._root_iteration(root, scores, depth, played)
                    if completed:
                        previous = (best_score, played_score if played is not None else None)
                    completed = depth
                    best_move, best_score = iteration
                    if played is not None:
                        played_score = scores[played]
                    if abs(best_score) >= DECIDED:
                        break
            except _Stop:
                pass
            if completed == 0:
                # Not even depth 1 within the bounds: the static order of depth 1 still is
                # better than nothing, and the same on every machine.
                best_move = root[0][0]
                best_score = -self._evaluate(root[0][1])
                if played is not None:
                    played_score = -self._evaluate(state.apply(played))
        else:
            child = root[0][1]
            best_score = final_score(child) if child.is_over else -self._evaluate(child)
            played_score = best_score
        if played == best_move:
            played_score = best_score
        return RootAnalysis(
            completed,
            self._nodes,
            best_move,
            best_score,
            played,
            played_score if played is not None else None,
            None,
            previous,
        )

    def only_move(self, state: GameState, result: RootAnalysis, below: int) -> bool:
        """Whether every move of `state` but `result.best` scores below `below` at
        `result.depth` (null-window searches on the table `analyse` left; bounded by that
        depth, not by the nodes). Call right after `analyse(state)`."""
        if result.depth == 0:
            return False
        self._node_limit = 1 << 62
        for move in state.legal_moves():
            if move == result.best:
                continue
            child = state.apply(move)
            if -self._negamax(child, result.depth - 1, -below, -below + 1, 1) >= below:
                return False
        return True

    def _finish(self, started: float, depth: int, move: Move, score: int) -> None:
        seconds = time.perf_counter() - started
        self.last = SearchInfo(depth, self._nodes, score, seconds, move)

    # ---- the search ------------------------------------------------------------------------

    def _begin(self, state: GameState, deadline: float) -> None:
        self._deadline = deadline
        self._node_limit = self.max_nodes if self.max_nodes is not None else 1 << 62
        self._nodes = 0
        # Earlier turns can never come back: keep only what the coming search may meet.
        turn = state.turn
        self._table = {key: entry for key, entry in self._table.items() if key[5] >= turn}
        if len(self._table) > _TABLE_LIMIT:
            self._table.clear()
        if len(self._evaluations) > _EVAL_LIMIT:
            self._evaluations.clear()
        self._history = {move: value // 8 for move, value in self._history.items() if value >= 8}
        self._killers = {}

    def _deepest(self, state: GameState) -> int:
        # Beyond the round limit there is nothing left to search.
        deepest = max(1, 2 * ROUND_LIMIT - state.turn)
        if self.max_depth is not None:
            deepest = min(deepest, self.max_depth)
        return deepest

    def _root_iteration(
        self,
        root: list[tuple[Move, GameState]],
        scores: dict[Move, int],
        depth: int,
        exact: Move | None,
    ) -> tuple[Move, int]:
        """One iteration over the root moves (previous scores first; the stable sort keeps
        the shuffle on ties): the best move and its score. `exact` is searched with the full
        window, so its score is exact, not a bound. On _Stop the exception carries the best
        move found so far in this iteration if it beat the previous best."""
        root.sort(key=lambda entry: scores[entry[0]], reverse=True)
        alpha = -_INFINITY
        best: Move | None = None
        for index, (move, child) in enumerate(root):
            try:
                if move == exact:
                    # The full window: its score is exact whether it beats alpha or not.
                    score = -self._negamax(child, depth - 1, -_INFINITY, _INFINITY, 1)
                elif index == 0:
                    score = -self._negamax(child, depth - 1, -_INFINITY, -alpha, 1)
                else:
                    score = -self._negamax(child, depth - 1, -alpha - 1, -alpha, 1)
                    if score > alpha:
                        score = -self._negamax(child, depth - 1, -_INFINITY, -alpha, 1)
            except _Stop:
                if best is not None and index > 0 and best != root[0][0]:
                    raise _Stop(best, alpha) from None
                raise
            scores[move] = score
            if score > alpha:
                alpha, best = score, move
        assert best is not None
        return best, alpha

    def _evaluate(self, state: GameState) -> int:
        one, two, _, ge2, ge3 = state.bitboards()
        board = (one, two, ge2, ge3)
        value = self._evaluations.get(board)
        if value is None:
            value = evaluate_for_one(state)
            self._evaluations[board] = value
        return -value if state.turn & 1 else value

    def _negamax(self, state: GameState, depth: int, alpha: int, beta: int, ply: int) -> int:
        """The value of `state` for the team to move, searched `depth` plies (fail-soft);
        `ply` is its distance from the root."""
        self._nodes += 1
        if self._nodes > self._node_limit or (
            not self._nodes % _CLOCK_EVERY and time.perf_counter() > self._deadline
        ):
            raise _Stop
        if state.is_over:
            return final_score(state)
        if depth <= 0:
            # A team united after ONE's move: the game ends after the reply, look at it.
            if not (
                state.turn & 1 and (state.is_connected(Team.ONE) or state.is_connected(Team.TWO))
            ):
                if self.quiescence:
                    return self._quiesce(state, alpha, beta, self.quiescence)
                return self._evaluate(state)
            depth = 1

        table_move: Move | None = None
        key = None
        if self._use_table:
            key = _key(state)
            entry = self._table.get(key)
            if entry is not None:
                entry_depth, entry_score, bound, table_move = entry
                if entry_depth >= depth:
                    if bound == _EXACT:
                        return entry_score
                    if bound == _LOWER and entry_score >= beta:
                        return entry_score
                    if bound == _UPPER and entry_score <= alpha:
                        return entry_score

        original_alpha = alpha
        best, best_move = -_INFINITY, None
        first = True
        for move, child in self._children(state, table_move, ply):
            if first:
                score = -self._negamax(child, depth - 1, -beta, -alpha, ply + 1)
                first = False
            else:
                # The first child is usually best: prove the others worse with a null window
                # and search again only the one that is not.
                score = -self._negamax(child, depth - 1, -alpha - 1, -alpha, ply + 1)
                if alpha < score < beta:
                    score = -self._negamax(child, depth - 1, -beta, -score, ply + 1)
            if score > best:
                best, best_move = score, move
                if score > alpha:
                    alpha = score
                    if alpha >= beta:
                        self._history[move] = self._history.get(move, 0) + depth * depth
                        killers = self._killers.setdefault(ply, [])
                        if move not in killers:
                            killers.insert(0, move)
                            del killers[2:]
                        break
        if key is not None:
            bound = _UPPER if best <= original_alpha else _LOWER if best >= beta else _EXACT
            self._table[key] = (depth, best, bound, best_move)
        return best

    def _quiesce(self, state: GameState, alpha: int, beta: int, left: int) -> int:
        """The value of the leaf `state` for the team to move once the captures are played
        out: it may stand pat on the evaluation or capture, up to `left` plies of captures
        (fail-soft). A capture takes a fish (1-3 swarm points) at once, far more than any
        depth-to-depth change of the evaluation, so a leaf that leaves one hanging is scored
        as if it were taken."""
        stand = self._evaluate(state)
        if left <= 0 or stand >= beta:
            return stand
        best = stand
        if stand > alpha:
            alpha = stand
        for move in _captures(state):
            self._nodes += 1
            if self._nodes > self._node_limit or (
                not self._nodes % _CLOCK_EVERY and time.perf_counter() > self._deadline
            ):
                raise _Stop
            child = state.apply(move)
            if child.is_over:
                score = -final_score(child)
            elif child.turn & 1 and (child.is_connected(Team.ONE) or child.is_connected(Team.TWO)):
                # A union after ONE's capture: the game ends after the reply, which the
                # static evaluation cannot see; score it as it stands.
                score = -self._evaluate(child)
            else:
                score = -self._quiesce(child, -beta, -alpha, left - 1)
            if score > best:
                best = score
                if score > alpha:
                    alpha = score
                    if alpha >= beta:
                        break
        return best

    def _children(
        self, state: GameState, table_move: Move | None, ply: int
    ) -> Iterator[tuple[Move, GameState]]:
        """The children of `state`, likeliest best first, in stages: the table's move, then
        the moves that refuted siblings (killers), then the rest sorted by uniting, capturing
        and history. Most nodes are cut off by an early child, so the later ones are only
        made (applied) when they are needed."""
        moves = state.legal_moves()
        tried: list[Move] = []
        for early in (table_move, *self._killers.get(ply, ())):
            if early is not None and early not in tried and early in moves:
                tried.append(early)
                yield early, state.apply(early)
        me = state.current_team
        opponent_fish = state.fish_count(me.opponent)
        history = self._history
        keyed = []
        for move in moves:
            if move in tried:
                continue
            child = state.apply(move)
            key = history.get(move, 0)
            if child.is_connected(me):
                key += _UNITES
            if child.fish_count(me.opponent) < opponent_fish:
                key += _CAPTURES
            keyed.append((key, move, child))
        keyed.sort(key=lambda entry: entry[0], reverse=True)
        for _, move, child in keyed:
            yield move, child


def _captures(state: GameState) -> list[Move]:
    """The legal moves of the team to move that land on an opponent's fish, the heaviest
    capture first, read from the bit masks and the engine's move tables (no move list)."""
    geo = geometry(state.width, state.height)
    one, two, squid, ge2, ge3 = state.bitboards()
    own, opponent = (two, one) if state.turn & 1 else (one, two)
    occupied = one | two
    shift = geo.check_shift
    # The engine's legality test (engine.geometry): a move is legal iff not probe & check.
    probe = 1 | (opponent << 1) | ((own | squid) << shift)
    axes = geo.axes
    found: list[tuple[int, Move]] = []
    remaining = own
    while remaining:
        low = remaining & -remaining
        remaining ^= low
        index = low.bit_length() - 1
        lines = geo.lines[index]
        checks = geo.checks[index]
        moves = geo.moves[index]
        assert moves is not None
        for direction in range(8):
            check = checks[direction][(occupied & lines[axes[direction]]).bit_count()]
            target = check >> shift
            if target & opponent and not probe & check:
                weight = 1 + bool(target & ge2) + bool(target & ge3)
                found.append((weight, moves[direction]))
    found.sort(key=lambda entry: entry[0], reverse=True)
    return [move for _, move in found]


def final_score(state: GameState) -> int:
    """The score of a finished game for the team to move: WIN - turn for a win (sooner is
    better), its negation for a loss, 0 for a tie."""
    winner = state.current_winner().winner
    if winner is None:
        return 0
    value = WIN - state.turn
    return value if winner is state.current_team else -value
