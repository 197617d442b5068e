"""The results log: one JSON line per finished game, for tournaments and monitoring.

Each line is written whole or not at all, then fsynced before `write` returns, so a crash
right after a game never loses its result and a full disk never tears the file: one
`os.write` of the whole line with O_APPEND, and after a short write or any error the file is
truncated back to its size before the attempt. The file stays valid JSON lines whatever
fails. Lines are only ever appended.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from server.logs import get_logger

if TYPE_CHECKING:
    from engine import GameResult

log = get_logger("server.results")


class ResultsLog:
    """An append-only JSON-lines file; thread-safe, and safe to share between processes
    that all use this class (an advisory lock covers each append)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        # Lines from worker threads must not interleave.
        self._lock = threading.Lock()

    def write(self, record: dict[str, object]) -> None:
        """Append `record` as one JSON line and fsync it (no-op without a path). Raises
        OSError (or the encoding's error) when the line is not durably in the file; the file
        is then as it was before."""
        if self.path is None:
            return
        line = json.dumps(record, ensure_ascii=False, default=str, separators=(",", ":"))
        data = (line + "\n").encode("utf-8")
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            # O_APPEND: several servers may share one file without overwriting lines;
            # O_RDWR to see whether the last line is complete.
            try:
                descriptor = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
                readable = True
            except PermissionError:  # a write-only file: appending still works
                descriptor = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
                readable = False
            try:
                _append_whole(descriptor, data, readable=readable)
            finally:
                os.close(descriptor)

    def append(self, record: dict[str, object]) -> bool:
        """`write`, with a failure logged as an error carrying the whole record and
        swallowed: the results log must never break a game. True if the line is in the
        file (False also without a path)."""
        if self.path is None:
            return False
        try:
            self.write(record)
        except Exception as error:  # anything here must not reach the game
            log.error(
                "RESULT NOT RECORDED: cannot write the results log",
                path=str(self.path),
                error=repr(error),
                record=record,
            )
            return False
        return True


def _append_whole(descriptor: int, data: bytes, *, readable: bool) -> None:
    """Append `data` to the open file in one write; on any failure cut the file back."""
    locked = _lock_file(descriptor)
    try:
        size = os.fstat(descriptor).st_size
        if readable and size and os.pread(descriptor, 1, size - 1) != b"\n":
            # A torn last line (an older writer, a crash mid-write): start on a new line so
            # at least this record is a line of its own.
            data = b"\n" + data
        try:
            written = os.write(descriptor, data)
            if written != len(data):
                raise OSError(errno.ENOSPC, f"short write: {written} of {len(data)} bytes")
            os.fsync(descriptor)
        except BaseException:
            # Best effort: a device (/dev/full) cannot be truncated, and what cannot be
            # undone must not hide the original error.
            with contextlib.suppress(OSError):
                os.ftruncate(descriptor, size)
                os.fsync(descriptor)
            raise
    finally:
        if locked:
            with contextlib.suppress(OSError):
                fcntl.flock(descriptor, fcntl.LOCK_UN)


def _lock_file(descriptor: int) -> bool:
    """Take the advisory lock that keeps other processes' appends out of the way of a
    truncation. False where the file cannot be locked (then only this process is safe)."""
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
    except OSError:
        return False
    return True


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
