"""The analysis for people: a table per game (rich on a terminal, plain text otherwise) and
the JSON/NDJSON forms of `GameAnalysis.as_json`."""

from __future__ import annotations

import json
from typing import Any, TextIO

from analysis.game import GameAnalysis, MoveAnalysis
from bots.search import DECIDED, WIN
from engine import Direction, Move

_SHORT = {
    Direction.UP: "U",
    Direction.UP_RIGHT: "UR",
    Direction.RIGHT: "R",
    Direction.DOWN_RIGHT: "DR",
    Direction.DOWN: "D",
    Direction.DOWN_LEFT: "DL",
    Direction.LEFT: "L",
    Direction.UP_LEFT: "UL",
}


def move_text(move: Move) -> str:
    """A move in a few characters: `9,2 DL` (the fish at x=9, y=2 swims DOWN_LEFT)."""
    return f"{move.x},{move.y} {_SHORT[move.direction]}"


def eval_text(score: int) -> str:
    """An evaluation for the side to move: swarm points with a sign (`+1.25`), or a proven
    result (`won`/`lost` and the game's last turn)."""
    if score >= DECIDED:
        return f"won@{WIN - score}"
    if score <= -DECIDED:
        return f"lost@{WIN + score}"
    return f"{score / 100:+.2f}"


def json_text(analysis: GameAnalysis) -> str:
    """The analysis as one JSON document (indented, keys in a fixed order)."""
    return json.dumps(analysis.as_json(), ensure_ascii=False, indent=2) + "\n"


def ndjson_line(analysis: GameAnalysis) -> str:
    """The analysis as one NDJSON line."""
    return json.dumps(analysis.as_json(), ensure_ascii=False, separators=(",", ":")) + "\n"


def _row(move: MoveAnalysis) -> list[str]:
    best = "" if move.best == move.played else move_text(move.best)
    best_eval = "" if move.best == move.played else eval_text(move.eval_best)
    return [
        str(move.number),
        move.side.name,
        move_text(move.played),
        eval_text(move.eval_played),
        best,
        best_eval,
        f"{100 * move.win_best:.0f}%",
        f"{100 * move.loss:.1f}" if move.loss else "",
        move.mark or "",
    ]


_HEADERS = ["#", "side", "played", "eval", "best", "best eval", "win", "loss", "mark"]


def summary_lines(analysis: GameAnalysis) -> list[str]:
    """The per-side figures and the turning point, one line each."""
    lines = []
    for side in analysis.sides:
        accuracy = "-" if side.accuracy is None else f"{side.accuracy:.1f}"
        lines.append(
            f"{side.side.name} {side.name}: accuracy {accuracy}, {side.inaccuracies} ?!, "
            f"{side.mistakes} ?, {side.blunders} ??, {side.only_moves} ! in {side.moves} moves"
        )
    if analysis.turning_point is not None:
        move = analysis.moves[analysis.turning_point]
        lines.append(
            f"turning point: move {move.number} ({move.side.name}, {move_text(move.played)}"
            f"{' ' + move.mark if move.mark else ''})"
        )
    else:
        lines.append("turning point: none (a draw or an unfinished game)")
    lines.extend(f"note: {note}" for note in analysis.notes)
    return lines


def _title(analysis: GameAnalysis) -> str:
    one, two = analysis.game.names
    settings = analysis.settings
    bound = ", ".join(
        part
        for part in (
            f"{settings.nodes} nodes" if settings.nodes else "",
            f"depth {settings.depth}" if settings.depth else "",
        )
        if part
    )
    return f"{analysis.game.label}: {one} (ONE) vs {two} (TWO), {bound} per position"


def write_plain(analysis: GameAnalysis, out: TextIO) -> None:
    """The table as plain text (columns padded with spaces; for files and pipes)."""
    rows = [_HEADERS, *(_row(move) for move in analysis.moves)]
    widths = [max(len(row[column]) for row in rows) for column in range(len(_HEADERS))]
    out.write(_title(analysis) + "\n")
    for row in rows:
        out.write("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)))
        out.write("\n")
    for line in summary_lines(analysis):
        out.write(line + "\n")


_MARK_STYLE = {"??": "bold red", "?": "red", "?!": "yellow", "!": "bold green"}


def write_rich(analysis: GameAnalysis, console: Any) -> None:
    """The table on a terminal (a `rich.console.Console`), marks in colour."""
    from rich.table import Table

    table = Table(title=_title(analysis), header_style="bold")
    for header in _HEADERS:
        table.add_column(header, justify="right" if header in ("#", "win", "loss") else "left")
    for move in analysis.moves:
        style = _MARK_STYLE.get(move.mark or "")
        table.add_row(*_row(move), style=style)
    console.print(table)
    for line in summary_lines(analysis):
        console.print(line, highlight=False, markup=False)
