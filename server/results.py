"""The results log: one JSON line per finished game, for tournaments and monitoring.

Each line is written, flushed and fsynced before `append` returns, so a crash right after a
game never loses its result. The file is only ever appended to.
"""

from __future__ import annotations

import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

import structlog
import trio

if TYPE_CHECKING:
    from engine import GameResult

log = structlog.get_logger("server.results")


class ResultsLog:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        # Lines from worker threads (append_async) must not interleave.
        self._lock = threading.Lock()

    def append(self, record: dict[str, object]) -> None:
        """Append `record` as one JSON line (no-op without a path). A failure is logged as an
        error and swallowed: the results log must never break a game."""
        if self.path is None:
            return
        try:
            line = json.dumps(record, ensure_ascii=False, default=str, separators=(",", ":"))
            data = (line + "\n").encode("utf-8")
            with self._lock:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                # O_APPEND: several servers may share one file without overwriting lines.
                descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                try:
                    written = 0
                    while written < len(data):
                        written += os.write(descriptor, data[written:])
                    os.fsync(descriptor)
                finally:
                    os.close(descriptor)
        except Exception as error:  # anything here must not reach the game
            log.error(
                "RESULT NOT RECORDED: cannot write the results log",
                path=str(self.path),
                error=repr(error),
                record=record,
            )

    async def append_async(self, record: dict[str, object]) -> None:
        """`append` in a worker thread, so fsync does not stall the event loop."""
        if self.path is None:
            return
        await trio.to_thread.run_sync(self.append, record)


def game_record(
    room_id: str,
    result: GameResult,
    *,
    started: datetime | None = None,
    finished: datetime | None = None,
    turn: int | None = None,
    replay: Path | None = None,
) -> dict[str, object]:
    """A results-log record of one game: the players in slot order with their scores
    [Siegpunkte, Schwarmgröße], violations, winner, regular flag and reason."""
    finished = finished or datetime.now(UTC)
    players = []
    for entry, (points, swarm) in result.scores:
        player: dict[str, object] = {
            "name": entry.name,
            "team": entry.team.name,
            "score": points,
            "swarm": swarm,
        }
        if entry.violation is not None:
            player["violation"] = entry.violation.kind.name
            if entry.violation.detail:
                player["violationDetail"] = entry.violation.detail
        players.append(player)
    record: dict[str, object] = {
        "finished": finished.isoformat(),
        "room": room_id,
        "players": players,
        "winner": result.winner.name if result.winner is not None else None,
        "regular": result.regular,
        "reason": result.reason,
    }
    if started is not None:
        record["started"] = started.isoformat()
    if turn is not None:
        record["turn"] = turn
    if replay is not None:
        record["replay"] = str(replay)
    return record
