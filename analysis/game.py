"""Analyse a game move by move: every position searched (`SearchBot.analyse`, bounded by
nodes or depth, never by the clock), then the definitions of `analysis.model`.

Rule: **the analysis of a game depends on the game and the settings only**. The positions are
cut into chains of CHAIN consecutive positions (the cut depends on the game's length alone);
one search goes through a chain in order, each position starting from the table the one before
left. Chains start fresh, so they can be spread over processes in any order (`concurrency`) and
the output stays byte-identical.
"""

from __future__ import annotations

import concurrent.futures
import multiprocessing
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from analysis import model
from bots.search import DECIDED, RootAnalysis, SearchBot
from engine import FieldState, GameState, Move, Team

DEFAULT_NODES = 12_000
"""Nodes per position by default (twice that for the positions the second look picks): a
60-move game in 22 s of CPU on one core at load 22–25 (`bench.analysis.game_time`;
docs/analysis.md has the figures and how often the marks agree with 8× the nodes)."""
CHAIN = 1
"""Positions analysed in a row by one search, each starting from the table the one before
left. 1: every position on a fresh table — chains of 10 agreed worse with 8× the nodes
(docs/analysis.md; measured before bench.analysis read its traces)."""
MAX_NODES = 10_000_000
MAX_DEPTH = 60
FORMAT = "piranhas-analysis"
VERSION = 1


class AnalysisError(Exception):
    """Bad settings or a game that cannot be analysed; the message says why."""


@dataclass(frozen=True)
class Settings:
    """How hard to look: `nodes` per position (None: no node bound) and `depth` (None: no
    depth bound); at least one bound. The same settings give the same analysis."""

    nodes: int | None = DEFAULT_NODES
    depth: int | None = None

    def __post_init__(self) -> None:
        if self.nodes is None and self.depth is None:
            raise AnalysisError("the analysis needs a node or a depth bound (never the clock)")
        if self.nodes is not None and not 1_000 <= self.nodes <= MAX_NODES:
            raise AnalysisError(f"nodes must be 1000 … {MAX_NODES}, got {self.nodes}")
        if self.depth is not None and not 1 <= self.depth <= MAX_DEPTH:
            raise AnalysisError(f"depth must be 1 … {MAX_DEPTH}, got {self.depth}")

    def as_json(self) -> dict[str, Any]:
        """The settings as the JSON output and the annotated record carry them."""
        return {"nodes": self.nodes, "depth": self.depth, "slope": model.SLOPE}


@dataclass(frozen=True)
class Game:
    """A game to analyse: the start position, the legal moves played from it, the players'
    names (ONE, TWO), how reports name the game, and the recorded winner (None: a draw or
    unknown — then the final position decides, if the game is over)."""

    start: GameState
    moves: tuple[Move, ...]
    names: tuple[str, str] = ("ONE", "TWO")
    label: str = "game"
    winner: Team | None = None
    reason: str = ""
    notes: tuple[str, ...] = ()

    def states(self) -> list[GameState]:
        """The start position and the position after every move."""
        states = [self.start]
        for move in self.moves:
            states.append(states[-1].apply(move))
        return states


@dataclass(frozen=True)
class MoveAnalysis:
    """One move: who moved, what was played and what was best, the evaluations (for the side
    that moved), the win probability given away (`loss`), its accuracy and its mark."""

    number: int  # 1-based, as the game record counts moves
    turn: int  # of the position before the move
    side: Team
    played: Move
    best: Move
    eval_best: int  # the position's evaluation before the move = the best move's
    eval_played: int
    win_best: float
    win_played: float
    loss: float
    accuracy: float
    mark: str | None
    only_move: bool
    depth: int
    nodes: int
    win_one: float  # ONE's win probability before the move (the advantage graph)
    previous: tuple[int, int | None] | None = None  # (best, played) one depth shallower


@dataclass(frozen=True)
class SideSummary:
    """One side's figures: its accuracy (None without moves) and the count of each mark."""

    side: Team
    name: str
    moves: int
    accuracy: float | None
    inaccuracies: int
    mistakes: int
    blunders: int
    only_moves: int


@dataclass(frozen=True)
class GameAnalysis:
    """A whole game analysed."""

    game: Game
    settings: Settings
    moves: tuple[MoveAnalysis, ...]
    sides: tuple[SideSummary, SideSummary]
    graph: tuple[float, ...]  # ONE's win probability in every position, the final one last
    winner: Team | None
    turning_point: int | None  # 0-based index into `moves`
    notes: tuple[str, ...] = field(default=())

    def as_json(self) -> dict[str, Any]:
        """The JSON document of docs/analysis.md ("Output")."""
        turning = None
        if self.turning_point is not None:
            decisive = self.moves[self.turning_point]
            turning = {"number": decisive.number, "side": decisive.side.name}
        return {
            "format": FORMAT,
            "version": VERSION,
            "game": self.game.label,
            "players": {"ONE": self.game.names[0], "TWO": self.game.names[1]},
            "settings": self.settings.as_json(),
            "start": {
                "turn": self.game.start.turn,
                "first_union": _team_name(self.game.start.first_union),
                "board": board_text(self.game.start),
            },
            "moves": [_move_json(move) for move in self.moves],
            "sides": {summary.side.name: _side_json(summary) for summary in self.sides},
            "graph": [round(value, 4) for value in self.graph],
            "winner": _team_name(self.winner),
            "reason": self.game.reason,
            "turning_point": turning,
            "notes": list(self.notes),
        }


def _team_name(team: Team | None) -> str | None:
    return None if team is None else team.name


def move_json(move: Move) -> dict[str, Any]:
    """A move as JSON: {"x", "y", "direction"}."""
    return {"x": move.x, "y": move.y, "direction": move.direction.name}


def _move_json(move: MoveAnalysis) -> dict[str, Any]:
    return {
        "number": move.number,
        "turn": move.turn,
        "side": move.side.name,
        "played": move_json(move.played),
        "best": move_json(move.best),
        "eval_best": move.eval_best,
        "eval_played": move.eval_played,
        "win_best": round(move.win_best, 4),
        "win_played": round(move.win_played, 4),
        "loss": round(move.loss, 4),
        "accuracy": round(move.accuracy, 1),
        "mark": move.mark,
        "only_move": move.only_move,
        "depth": move.depth,
        "nodes": move.nodes,
        "previous": None if move.previous is None else list(move.previous),
        "win_one": round(move.win_one, 4),
    }


def _side_json(summary: SideSummary) -> dict[str, Any]:
    return {
        "name": summary.name,
        "moves": summary.moves,
        "accuracy": None if summary.accuracy is None else round(summary.accuracy, 1),
        "inaccuracies": summary.inaccuracies,
        "mistakes": summary.mistakes,
        "blunders": summary.blunders,
        "only_moves": summary.only_moves,
    }


# ---- boards as text (the position suites and the JSON's start) ----------------------------

_BOARD_CHARS = {
    FieldState.EMPTY: ".",
    FieldState.SQUID: "X",
    FieldState.ONE_S: "s",
    FieldState.ONE_M: "m",
    FieldState.ONE_L: "l",
    FieldState.TWO_S: "S",
    FieldState.TWO_M: "M",
    FieldState.TWO_L: "L",
}
_BOARD_FIELDS = {char: state for state, char in _BOARD_CHARS.items()}


def board_text(state: GameState) -> list[str]:
    """The board as text, the top row (highest y) first: `.` empty, `X` squid, ONE's fish
    `s m l` (size 1, 2, 3), TWO's `S M L`."""
    return ["".join(_BOARD_CHARS[field] for field in row) for row in reversed(state.rows())]


def board_from_text(lines: Sequence[str], turn: int, first_union: Team | None = None) -> GameState:
    """The inverse of `board_text` (ValueError for an unknown character or a ragged board)."""
    rows = []
    for line in reversed(lines):
        try:
            rows.append([_BOARD_FIELDS[char] for char in line])
        except KeyError as error:
            raise ValueError(f"unknown board character {error.args[0]!r}") from None
    return GameState.from_rows(rows, turn=turn, first_union=first_union)


# ---- the work ----------------------------------------------------------------------------

_Task = tuple[list[list[FieldState]], int, Team | None, tuple[Move, ...], int | None, int | None]
_Result = tuple[RootAnalysis, int | None]


def _task(state: GameState, played: Sequence[Move], settings: Settings) -> _Task:
    # The board, not the GameState: a few hundred bytes to another process.
    return (
        state.rows(),
        state.turn,
        state.first_union,
        tuple(played),
        settings.nodes,
        settings.depth,
    )


def chains(length: int) -> list[range]:
    """The game's positions (`length` of them) in runs of CHAIN consecutive positions, from
    the first: the unit of work. The split depends on the game's length only, never on the
    concurrency, so the output does not either."""
    return [range(start, min(start + CHAIN, length)) for start in range(0, length, CHAIN)]


SECOND_LOOK = (0.03, 0.20)
"""A move whose deepest completed depth is odd (a pair of plies not complete, see `paired`) and
whose loss at either of the two deepest depths is in [low, high) — near the mistake threshold
(model.MISTAKE, 0.10), where the even depth after it often moves it across — is searched on to
SECOND_LOOK_FACTOR × the nodes, which usually completes that even depth (docs/analysis.md, "The
second look"). From an even depth, twice the nodes do not complete the next pair, so no look."""
SECOND_LOOK_FACTOR = 2


def second_look(first: RootAnalysis, settings: Settings) -> int | None:
    """The node bound of a second, deeper search of the position after the first search's
    answer `first` (the search's deepest iteration, a lone odd one included), or None for none.
    A function of the first answer and the settings only, so the analysis stays deterministic
    (and the benchmark can replay the rule): a move near the mistake threshold at either of
    the two deepest depths, the deepest odd, is looked at with SECOND_LOOK_FACTOR × the nodes;
    never with a depth bound alone, a move not asked about, an even deepest depth or a search
    that did not complete depth 1."""
    if settings.nodes is None or first.played_score is None or first.depth % 2 == 0:
        return None
    losses = [0.0]
    if first.played != first.best:
        losses.append(
            model.win_probability(first.best_score) - model.win_probability(first.played_score)
        )
    if first.previous is not None:
        best, played = first.previous
        if played is not None:
            losses.append(model.win_probability(best) - model.win_probability(played))
    low, high = SECOND_LOOK
    if low <= max(losses) < high:
        return settings.nodes * SECOND_LOOK_FACTOR
    return None


PAIRED_FROM = 5
"""From this depth on, an odd depth is the analysis's answer only together with the even depth
after it: a search of odd depth ends on the mover's ply (its last move goes unanswered), and a
move's loss swings by 0.05–0.15 with the parity, so the answer is that of the deepest complete
pair of plies (3–4, 5–6, …) and a lone odd depth on top of it does not change the marks
(docs/analysis.md, "Definitions": with the lone depth 5 read, the analysis at 12 000 nodes
found 5 of 8 of the `?`/`??` of the same analysis at 8× the nodes on two games). Depth 3, the
deepest the default's nodes complete in half the positions, counts on its own."""

Iteration = tuple[int, Move, int, int | None]
"""A completed root iteration: its depth, the best move and its score, the played move's."""


def paired(done: Sequence[Iteration], played: Move | None, nodes: int) -> RootAnalysis:
    """The analysis's answer from the completed iterations `done` (in order, at least one) of
    a search that used `nodes`: the deepest, except that a lone odd depth of PAIRED_FROM or
    more gives way to the even depth before it — unless it proved a result for either move (a
    proof needs no reply). `previous` is the iteration before the one answered."""
    use = len(done)
    depth, _, score, played_score = done[-1]
    proven = abs(score) >= DECIDED or (played_score is not None and abs(played_score) >= DECIDED)
    if depth >= PAIRED_FROM and depth % 2 == 1 and not proven and use > 1:
        use -= 1
    depth, best, score, played_score = done[use - 1]
    previous = None if use == 1 else (done[use - 2][2], done[use - 2][3])
    if played == best:
        played_score = score
    return RootAnalysis(depth, nodes, best, score, played, played_score, None, previous)


class _Search(SearchBot):
    """The analysis search: SearchBot's own, with the second look as a continuation. A fresh
    search bounded by N nodes is the prefix of one bounded by more (iterative deepening: the
    iterations before the bound are the same computation whatever the bound), so instead of
    a second search from scratch this one, when it is about to visit node N + 1, takes the
    answer the search at N would have given, asks `second_look`, and either stops there or
    goes on to the bound it returns — the same answer as a fresh search at that bound, for
    the nodes beyond N only."""

    def __init__(self, settings: Settings) -> None:
        super().__init__(0, max_nodes=settings.nodes, max_depth=settings.depth)
        self._settings = settings
        self._deciding = False
        self._played: Move | None = None
        self._done: list[Iteration] = []  # completed iterations

    def look(self, state: GameState, played: Move | None, *, fresh: bool) -> RootAnalysis:
        """`analyse` with the second look (see the class), answered by `paired`."""
        self._deciding = self._settings.nodes is not None and played is not None
        self._played = played
        self._done = []
        try:
            result = self.analyse(state, played, fresh=fresh)
        finally:
            self._deciding = False
        # No iteration: a single legal move (or not even depth 1), answered by `analyse`.
        return paired(self._done, played, result.nodes) if self._done else result

    def _root_iteration(
        self,
        root: list[tuple[Move, GameState]],
        scores: dict[Move, int],
        depth: int,
        exact: Move | None,
    ) -> tuple[Move, int]:
        best, score = super()._root_iteration(root, scores, depth, exact)
        self._done.append((depth, best, score, None if exact is None else scores[exact]))
        return best, score

    def _negamax(self, state: GameState, depth: int, alpha: int, beta: int, ply: int) -> int:
        if self._deciding and self._nodes >= self._node_limit:
            self._deciding = False
            first = self._first()
            deeper = None if first is None else second_look(first, self._settings)
            if deeper is not None:
                assert deeper > self._node_limit
                self._node_limit = deeper
        return super()._negamax(state, depth, alpha, beta, ply)

    def _first(self) -> RootAnalysis | None:
        # What `analyse` answers when stopped here (node N + 1): the deepest iteration done,
        # a lone odd one included (None before depth 1, when second_look never looks).
        if not self._done:
            return None
        depth, best, score, played_score = self._done[-1]
        previous = None
        if len(self._done) > 1:
            previous = (self._done[-2][2], self._done[-2][3])
        if self._played == best:
            played_score = score
        return RootAnalysis(
            depth, self._node_limit + 1, best, score, self._played, played_score, None, previous
        )


def analyse_position(state: GameState, played: Move | None, settings: Settings) -> _Result:
    """One position on its own: the search's answer (with the second look) and the
    only-move check, and the only-move threshold used (None when no move can be an only
    move). Deterministic."""
    return _position(_Search(settings), state, played, fresh=True)


def _position(bot: _Search, state: GameState, played: Move | None, *, fresh: bool) -> _Result:
    # The only-move check needs the best score first: one search, then the check on the
    # warm table with the threshold derived from it (both deterministic).
    first = bot.look(state, played, fresh=fresh)
    threshold = model.score_for(model.win_probability(first.best_score) - model.ONLY_MOVE_GAP)
    if threshold is None or played != first.best or len(state.legal_moves()) < 2:
        return first, None
    only = bot.only_move(state, first, threshold)
    return first.with_only_move(only), threshold


def _chain(task: _Task) -> Iterator[_Result]:
    """A chain of positions in order, one bot: each search starts from the table the
    previous one left (what the position before already proved is not searched again)."""
    rows, turn, first_union, played, nodes, depth = task
    state = GameState.from_rows(rows, turn=turn, first_union=first_union)
    bot = _Search(Settings(nodes=nodes, depth=depth))
    for index, move in enumerate(played):
        yield _position(bot, state, move, fresh=index == 0)
        state = state.apply(move)


def _run(task: _Task) -> list[_Result]:
    return list(_chain(task))


class Analyser:
    """Analyses games with `settings`, spreading positions over `concurrency` processes (1:
    in this process). Use as a context manager (the process pool lives inside)."""

    def __init__(self, settings: Settings, concurrency: int = 1) -> None:
        if concurrency < 1:
            raise AnalysisError(f"concurrency must be at least 1, got {concurrency}")
        self.settings = settings
        self.concurrency = concurrency
        self._pool: concurrent.futures.ProcessPoolExecutor | None = None

    def __enter__(self) -> Analyser:
        if self.concurrency > 1:
            self._pool = concurrent.futures.ProcessPoolExecutor(
                self.concurrency, mp_context=multiprocessing.get_context("spawn")
            )
        return self

    def __exit__(self, *_: object) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def _map(self, tasks: list[_Task]) -> Iterator[_Result]:
        if self._pool is None:
            # In this process: one position at a time, so progress comes per position.
            return (result for task in tasks for result in _chain(task))
        return (result for chain in self._pool.map(_run, tasks) for result in chain)

    def analyse(
        self, game: Game, progress: Callable[[int, int], None] | None = None
    ) -> GameAnalysis:
        """The whole game; `progress(done, total)` after every position."""
        states = game.states()
        runs = chains(len(game.moves))
        tasks = [
            _task(states[run[0]], game.moves[run[0] : run[-1] + 1], self.settings) for run in runs
        ]
        results: list[RootAnalysis] = []
        for result in self._map(tasks):
            results.append(result[0])
            if progress is not None:
                progress(len(results), len(game.moves))
        return summarise(game, self.settings, states, results)

    def analyse_all(
        self, games: Iterable[Game], progress: Callable[[int, int], None] | None = None
    ) -> Iterator[GameAnalysis]:
        """Every game in order (progress per game's positions)."""
        for game in games:
            yield self.analyse(game, progress)


def summarise(
    game: Game, settings: Settings, states: list[GameState], results: Sequence[RootAnalysis]
) -> GameAnalysis:
    """The marks, accuracies, graph and turning point from the searches' answers."""
    moves: list[MoveAnalysis] = []
    graph: list[float] = []
    for index, (state, result) in enumerate(zip(states, results, strict=False)):
        side = state.current_team
        played = game.moves[index]
        assert result.played_score is not None
        win_best = model.win_probability(result.best_score)
        win_played = model.win_probability(result.played_score)
        loss = model.move_loss(result.best_score, result.played_score, result.previous)
        if played == result.best:
            loss = 0.0  # the deepest iteration's best move is never marked
        only = bool(result.only_move) and played == result.best
        win_one = win_best if side is Team.ONE else 1.0 - win_best
        if moves:
            # A search of odd depth favours the side to move, one of even depth the other:
            # the graph averages this position's search with the previous one's view of the
            # move that led here, whose bias is the opposite.
            before = moves[-1]
            after = before.win_played if before.side is Team.ONE else 1.0 - before.win_played
            win_one = (win_one + after) / 2.0
        graph.append(win_one)
        moves.append(
            MoveAnalysis(
                number=index + 1,
                turn=state.turn,
                side=side,
                played=played,
                best=result.best,
                eval_best=result.best_score,
                eval_played=result.played_score if played != result.best else result.best_score,
                win_best=win_best,
                win_played=win_played if played != result.best else win_best,
                loss=loss,
                accuracy=model.move_accuracy(loss),
                mark=model.mark(loss, only_move=only),
                only_move=only,
                depth=result.depth,
                nodes=result.nodes,
                win_one=win_one,
                previous=result.previous,
            )
        )
    final = states[len(results)]
    winner = game.winner
    if winner is None and final.is_over:
        winner = final.current_winner().winner
    if final.is_over:
        graph.append(1.0 if winner is Team.ONE else 0.0 if winner is Team.TWO else 0.5)
    elif moves:
        graph.append(graph[-1])  # an unfinished game: the last known estimate
    else:
        graph.append(0.5)
    weights = model.volatility_weights(graph, len(moves))
    sides = []
    for side, name in zip((Team.ONE, Team.TWO), game.names, strict=True):
        own = [
            (move, weight) for move, weight in zip(moves, weights, strict=True) if move.side is side
        ]
        marks = [move.mark for move, _ in own]
        sides.append(
            SideSummary(
                side,
                name,
                len(own),
                model.game_accuracy([m.accuracy for m, _ in own], [w for _, w in own]),
                marks.count("?!"),
                marks.count("?"),
                marks.count("??"),
                marks.count("!"),
            )
        )
    decided = game.winner if game.winner is not None else (winner if final.is_over else None)
    turning = model.turning_point(graph, None if decided is None else decided is Team.ONE)
    return GameAnalysis(
        game,
        settings,
        tuple(moves),
        (sides[0], sides[1]),
        tuple(graph),
        winner,
        turning,
        game.notes,
    )
