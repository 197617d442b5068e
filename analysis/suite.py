"""Position suites: a bot's past mistakes as a regression test (docs/analysis.md "Position
suites").

`export` takes every `?`/`??` of the losing side (or of a named player in the games it lost)
and writes the position before it, the side to move, the best move(s) and the move that was
played. `score` judges a bot's answer to one position: `best` (one of the best moves),
`acceptable` (another move the analysis does not mark `?` or `??`), `mistake` (marked
`?`/`??` again) or `repeated` (the very move that was played before). `piranhas-match
positions SUITE --player1 CMD` plays each position as a real game (analysis.positions).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from analysis import model
from analysis.game import (
    AnalysisError,
    GameAnalysis,
    Settings,
    analyse_position,
    board_from_text,
    board_text,
    move_json,
)
from engine import Direction, GameState, Move, Team

FORMAT = "piranhas-positions"
VERSION = 1
MAX_SUITE_BYTES = 16 * 1024 * 1024
MAX_POSITIONS = 10_000
VERDICTS = ("best", "acceptable", "mistake", "repeated", "no move")


class SuiteError(Exception):
    """A file that is no position suite; the message says where."""


@dataclass(frozen=True)
class Position:
    """One position of a suite: where it comes from, the position, the best move(s) and the
    move that was played there (a `?` or `??`)."""

    id: str
    state: GameState
    best: tuple[Move, ...]
    played: Move
    mark: str
    loss: float
    player: str = ""

    @property
    def side(self) -> Team:
        """The side to move (the side whose mistake this was)."""
        return self.state.current_team

    def as_json(self) -> dict[str, Any]:
        """The position's entry in the suite file."""
        return {
            "id": self.id,
            "player": self.player,
            "side": self.side.name,
            "turn": self.state.turn,
            "first_union": None if self.state.first_union is None else self.state.first_union.name,
            "board": board_text(self.state),
            "best": [move_json(move) for move in self.best],
            "played": move_json(self.played),
            "mark": self.mark,
            "loss": round(self.loss, 4),
        }


@dataclass(frozen=True)
class Suite:
    """Positions and the analysis settings that found them (and judge the answers)."""

    settings: Settings
    positions: tuple[Position, ...]

    def as_json(self) -> dict[str, Any]:
        """The suite file's document."""
        return {
            "format": FORMAT,
            "version": VERSION,
            "settings": {"nodes": self.settings.nodes, "depth": self.settings.depth},
            "positions": [position.as_json() for position in self.positions],
        }

    def dumps(self) -> str:
        """The suite file's text."""
        return json.dumps(self.as_json(), ensure_ascii=False, indent=1) + "\n"


def export(analyses: Iterable[GameAnalysis], player: str | None = None) -> Suite | None:
    """The `?`/`??` moves of each game's losing side (with `player`: of that player, in the
    games it lost) as a suite; None without any game. Drawn games give nothing."""
    positions: list[Position] = []
    settings: Settings | None = None
    for analysis in analyses:
        settings = settings or analysis.settings
        loser = None if analysis.winner is None else analysis.winner.opponent
        if loser is None:
            continue
        name = analysis.game.names[loser.value]
        if player is not None and name != player:
            continue
        states = analysis.game.states()
        for move in analysis.moves:
            if move.side is loser and move.mark in ("?", "??"):
                before = states[move.number - 1]
                # What the file holds, so that a suite read back equals the one written.
                state = board_from_text(board_text(before), before.turn, before.first_union)
                positions.append(
                    Position(
                        f"{analysis.game.label}#{move.number}",
                        state,
                        (move.best,),
                        move.played,
                        move.mark,
                        round(move.loss, 4),
                        name,
                    )
                )
    if settings is None:
        return None
    return Suite(settings, tuple(positions))


def _move(entry: object, where: str) -> Move:
    if not isinstance(entry, dict):
        raise SuiteError(f"{where}: a move must be an object {{x, y, direction}}")
    x, y, direction = entry.get("x"), entry.get("y"), entry.get("direction")
    if not isinstance(x, int) or not isinstance(y, int) or direction not in Direction.__members__:
        raise SuiteError(f"{where}: a move needs integer x, y and a direction name")
    return Move(x, y, Direction[str(direction)])


def loads(text: str | bytes) -> Suite:
    """Read a suite file (SuiteError for anything else, with the position it is about)."""
    if len(text) > MAX_SUITE_BYTES:
        raise SuiteError(f"larger than {MAX_SUITE_BYTES} bytes")
    try:
        document = json.loads(text)
    except ValueError as error:
        raise SuiteError(f"not JSON: {error}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise SuiteError(f'not a position suite (no "format": "{FORMAT}")')
    if document.get("version") != VERSION:
        raise SuiteError(f"suite version {document.get('version')!r}; this tool reads {VERSION}")
    raw_settings = document.get("settings") or {}
    try:
        settings = Settings(nodes=raw_settings.get("nodes"), depth=raw_settings.get("depth"))
    except (AnalysisError, AttributeError, TypeError) as error:
        raise SuiteError(f"settings: {error}") from None
    entries = document.get("positions")
    if not isinstance(entries, list) or len(entries) > MAX_POSITIONS:
        raise SuiteError(f'"positions" must be a list of at most {MAX_POSITIONS}')
    positions = []
    for index, entry in enumerate(entries, start=1):
        where = f"position {index}"
        if not isinstance(entry, dict):
            raise SuiteError(f"{where}: not an object")
        board, turn = entry.get("board"), entry.get("turn")
        if not isinstance(board, list) or not all(isinstance(line, str) for line in board):
            raise SuiteError(f'{where}: "board" must be a list of strings')
        if not isinstance(turn, int) or turn < 0:
            raise SuiteError(f'{where}: "turn" must be a non-negative integer')
        union = entry.get("first_union")
        if union not in (None, "ONE", "TWO"):
            raise SuiteError(f'{where}: "first_union" must be ONE, TWO or null')
        try:
            state = board_from_text(board, turn, None if union is None else Team[union])
        except ValueError as error:
            raise SuiteError(f"{where}: {error}") from None
        if state.width != 10 or state.height != 10:
            raise SuiteError(f"{where}: the board must be 10×10")
        if state.is_over:
            raise SuiteError(f"{where}: the game is over in this position")
        if entry.get("side") not in (None, state.current_team.name):
            raise SuiteError(
                f'{where}: "side" says {entry.get("side")}, turn {turn} says '
                f"{state.current_team.name}"
            )
        best_entries = entry.get("best")
        if not isinstance(best_entries, list) or not best_entries:
            raise SuiteError(f'{where}: "best" must be a non-empty list of moves')
        best = tuple(_move(move, where) for move in best_entries)
        played = _move(entry.get("played"), where)
        for move in (*best, played):
            if state.check_move(move) is not None:
                raise SuiteError(f"{where}: {move} is not legal in this position")
        loss = entry.get("loss", 0.0)
        positions.append(
            Position(
                str(entry.get("id", where)),
                state,
                best,
                played,
                str(entry.get("mark", "")),
                float(loss) if isinstance(loss, int | float) else 0.0,
                str(entry.get("player", "")),
            )
        )
    return Suite(settings, tuple(positions))


@dataclass(frozen=True)
class Verdict:
    """A bot's answer to one position and how it was judged (`loss` against the best move)."""

    position: Position
    answer: Move | None
    verdict: str
    loss: float | None

    def as_json(self) -> dict[str, Any]:
        """One line of the positions command's JSON output."""
        return {
            "id": self.position.id,
            "answer": None if self.answer is None else move_json(self.answer),
            "verdict": self.verdict,
            "loss": None if self.loss is None else round(self.loss, 4),
        }


def score(position: Position, answer: Move | None, settings: Settings) -> Verdict:
    """Judge `answer` (None: the bot made no legal move) with the suite's settings."""
    if answer is None or position.state.check_move(answer) is not None:
        return Verdict(position, answer, "no move", None)
    if answer in position.best:
        return Verdict(position, answer, "best", 0.0)
    if answer == position.played:
        return Verdict(position, answer, "repeated", position.loss)
    result, _ = analyse_position(position.state, answer, settings)
    assert result.played_score is not None
    if answer == result.best:
        return Verdict(position, answer, "best", 0.0)
    loss = model.move_loss(result.best_score, result.played_score, result.previous)
    return Verdict(position, answer, "acceptable" if loss < model.MISTAKE else "mistake", loss)


def summary(verdicts: Sequence[Verdict]) -> dict[str, int]:
    """How many positions got each verdict."""
    return {name: sum(1 for v in verdicts if v.verdict == name) for name in VERDICTS}
