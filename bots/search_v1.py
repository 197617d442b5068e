"""The `search-v1` bot: the search bot as it was before the analysis work (kept to measure the
new one against, `piranhas-match --sprt` with `builtin:search-v1`).

Move ordering: the best move of the previous iteration (root) or of the transposition table
(inside), killer moves, then moves that unite the mover's swarm, captures, and the history
heuristic.
Leaves are scored by `bots.evaluation.evaluate`; final positions by the engine's own game
end and winner rules (`is_over`, `current_winner`), round limit included.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from dataclasses import dataclass

from bots.evaluation import evaluate
from engine import ROUND_LIMIT, GameState, Move, Team

WIN = 1_000_000
"""A won final position scores WIN - turn (quicker wins are better); heuristics stay far below."""
_INFINITY = 10 * WIN
_EXACT, _LOWER, _UPPER = 0, 1, 2
_TABLE_LIMIT = 200_000  # entries; the table is cleared beyond this to bound memory

# Bonus keys for ordering (history scores stay far below these).
_UNITES = 1 << 36
_CAPTURES = 1 << 32

# Seconds kept back from the budget for unwinding the search and answering.
_RESERVE_MAX = 0.05
_RESERVE_SHARE = 0.1


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


class SearchBotV1:
    """Alpha-beta (negamax) with iterative deepening, a transposition table and history
    ordering. Stops when `budget` (minus a small reserve) runs out and plays the best move
    of the deepest finished iteration (or a better one found by the unfinished one).

    `max_depth` and `max_nodes` bound the search independently of the clock: with
    `max_nodes` and an ample budget the bot plays reproducibly (tests, benches)."""

    name = "search-v1"

    def __init__(
        self,
        seed: int | None = None,
        *,
        max_depth: int | None = None,
        max_nodes: int | None = None,
        transposition_table: bool = True,
    ) -> None:
        self._rng = random.Random(seed)
        self.max_depth = max_depth
        self.max_nodes = max_nodes
        self._use_table = transposition_table
        self._table: dict[GameState, tuple[int, int, int, Move | None]] = {}
        self._history: dict[Move, int] = {}
        self._killers: dict[int, list[Move]] = {}
        self._nodes = 0
        self._deadline = 0.0
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
        self._deadline = started + budget - reserve
        self._node_limit = self.max_nodes if self.max_nodes is not None else 1 << 62
        self._nodes = 0
        # Earlier turns can never come back: keep only what the coming search may meet.
        turn = state.turn
        self._table = {key: entry for key, entry in self._table.items() if key.turn >= turn}
        if len(self._table) > _TABLE_LIMIT:
            self._table.clear()
        self._history = {move: value // 8 for move, value in self._history.items() if value >= 8}
        self._killers = {}

        # Seeded shuffle: equally good moves differ between seeds, not between runs.
        self._rng.shuffle(moves)
        root = [(move, state.apply(move)) for move in moves]
        scores = {move: 0 for move in moves}
        best_move, best_score, completed = root[0][0], -_INFINITY, 0
        if len(root) == 1:
            self._finish(started, 0, best_move, 0)
            return best_move

        # Beyond the round limit there is nothing left to search.
        plies_left = 2 * ROUND_LIMIT - state.turn
        deepest = max(1, plies_left)
        if self.max_depth is not None:
            deepest = min(deepest, self.max_depth)
        try:
            for depth in range(1, deepest + 1):
                # Previous iteration's scores first; the stable sort keeps the shuffle on ties.
                root.sort(key=lambda entry: scores[entry[0]], reverse=True)
                alpha = -_INFINITY
                iteration_best: Move | None = None
                for move, child in root:
                    score = -self._negamax(child, depth - 1, -_INFINITY, -alpha, 1)
                    scores[move] = score
                    if score > alpha:
                        alpha, iteration_best = score, move
                        # A move that beats the previous best at a greater depth is better
                        # even if this iteration does not finish.
                        best_move, best_score = move, score
                completed = depth
                assert iteration_best is not None
                best_move, best_score = iteration_best, alpha
                if abs(best_score) >= WIN - 2 * ROUND_LIMIT - 1:
                    break  # a forced result: deeper search cannot change it
        except _Stop:
            pass
        self._finish(started, completed, best_move, best_score)
        return best_move

    def _finish(self, started: float, depth: int, move: Move, score: int) -> None:
        seconds = time.perf_counter() - started
        self.last = SearchInfo(depth, self._nodes, score, seconds, move)

    # ---- the search ------------------------------------------------------------------------

    def _negamax(self, state: GameState, depth: int, alpha: int, beta: int, ply: int) -> int:
        """The value of `state` for the team to move, searched `depth` plies (fail-soft);
        `ply` is its distance from the root."""
        self._nodes += 1
        if self._nodes > self._node_limit or time.perf_counter() > self._deadline:
            raise _Stop
        if state.is_over:
            return final_score(state)
        if depth <= 0:
            # A team united after ONE's move: the game ends after the reply, look at it.
            if not (
                state.turn & 1 and (state.is_connected(Team.ONE) or state.is_connected(Team.TWO))
            ):
                return evaluate(state)
            depth = 1

        table_move: Move | None = None
        if self._use_table:
            entry = self._table.get(state)
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
        for move, child in self._children(state, table_move, ply):
            score = -self._negamax(child, depth - 1, -beta, -alpha, ply + 1)
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
        if self._use_table:
            bound = _UPPER if best <= original_alpha else _LOWER if best >= beta else _EXACT
            self._table[state] = (depth, best, bound, best_move)
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


def final_score(state: GameState) -> int:
    """The score of a finished game for the team to move: WIN - turn for a win (sooner is
    better), its negation for a loss, 0 for a tie."""
    winner = state.current_winner().winner
    if winner is None:
        return 0
    value = WIN - state.turn
    return value if winner is state.current_team else -value
