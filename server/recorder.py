"""The recorder: everything that persists a finished game, owned in one place.

The lobby decides game flow and, when a game ends, hands the recorder an immutable
`FinishedGame`; `Recorder.record` persists it in a worker thread and returns once it is
durable (the lobby sends `<left>` and removes the room only then). Order, so that a full disk
costs a replay before it costs a result:

1. serialize the replay and claim its file name (nothing written yet but an empty file);
2. every sink writes its record — first the results log, whose line carries the replay path
   it is about to get; later e.g. the league's game records (`GameSink`);
3. the replay is written atomically under the claimed name.

Every failure is caught and logged as an error with the whole record, so nothing is lost
silently and nothing reaches the game. All imports are at the top: a deferred import on this
path once failed with "too many open files" outside the error handling.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

import trio

from engine import GameResult
from protocol.messages import ReplayPacket
from protocol.replay import write_replay
from server.config import Settings
from server.logs import get_logger
from server.replays import ReplayFiles
from server.results import ResultsLog, game_record

log = get_logger("server.recorder")


@dataclass(frozen=True)
class FinishedGame:
    """What is recorded about one finished game. Immutable, so a worker thread can read it
    while the lobby goes on."""

    room_id: str
    names: tuple[str, ...]  # display names in slot order ("" when unnamed)
    result: GameResult
    created: datetime  # aware (UTC)
    started: datetime | None  # None: the game never started
    finished: datetime  # aware (UTC)
    turn: int  # of the final state
    moves: tuple[tuple[int, int, str], ...]  # (x, y, direction name) of every applied move
    move_ms: tuple[float, ...]  # each move's time in ms, as measured by the lobby
    end: str  # how it ended: "over", "shutdown", "expired", "wall_clock"
    replay: tuple[ReplayPacket, ...] | None = None  # None: no replay kept for this game


def results_record(game: FinishedGame, replay: Path | None = None) -> dict[str, object]:
    """The results-log line of `game` (the JSON fields users and tests read)."""
    record = game_record(
        game.room_id,
        game.result,
        started=game.started or game.created,
        finished=game.finished,
        turn=game.turn,
        replay=replay,
    )
    record["created"] = game.created.isoformat()
    record["end"] = game.end
    record["moves"] = [list(move) for move in game.moves]
    record["moveMs"] = list(game.move_ms)
    return record


class GameSink(Protocol):
    """A durable writer of finished games (the results log; later the league's records)."""

    @property
    def name(self) -> str:
        """What it writes, for the error log."""
        ...

    def write(self, game: FinishedGame, replay: Path | None) -> None:
        """Persist `game` durably before returning (blocking; runs in a worker thread).
        `replay` is the path its replay is about to get, if one is kept. Raise on failure:
        the recorder logs it with the whole record."""
        ...


class ResultsSink:
    """The results log as a sink: one JSON line per game."""

    def __init__(self, results: ResultsLog) -> None:
        self.results = results

    @property
    def name(self) -> str:
        """What this sink writes to, for log lines."""
        return f"results log {self.results.path}"

    def write(self, game: FinishedGame, replay: Path | None) -> None:
        """Append the game's result line (naming its replay); raises when it is not written."""
        self.results.write(results_record(game, replay))


class Recorder:
    """Persists finished games: the sinks in order, then the replay (if `replays`)."""

    def __init__(self, sinks: Sequence[GameSink] = (), replays: ReplayFiles | None = None) -> None:
        self.sinks = tuple(sinks)
        self.replays = replays

    @classmethod
    def from_settings(cls, settings: Settings, extra_sinks: Sequence[GameSink] = ()) -> Recorder:
        """The server's recorder: the results log (resultsFile) and replays (saveReplay),
        then `extra_sinks` (whoever composes the server, e.g. an embedding match runner)."""
        sinks: list[GameSink] = []
        if settings.results_file is not None:
            sinks.append(ResultsSink(ResultsLog(settings.results_file)))
        sinks.extend(extra_sinks)
        replays = ReplayFiles(settings.replay_dir) if settings.save_replay else None
        return cls(sinks, replays)

    def has_work(self, game: FinishedGame) -> bool:
        """Whether recording `game` writes anything (a sink, or its replay to save)."""
        return bool(self.sinks) or (game.replay is not None and self.replays is not None)

    async def record(self, game: FinishedGame) -> None:
        """Persist `game` in a worker thread; returns when it is durable (or its failure is
        logged). Never raises but Cancelled."""
        if not self.has_work(game):
            return
        try:
            await trio.to_thread.run_sync(self.record_now, game)
        except trio.Cancelled:
            raise
        except Exception as error:
            # No thread to be had (record_now itself never raises): block the event loop
            # for one record rather than lose it.
            log.warning("recording in the event loop: no worker thread", error=repr(error))
            self.record_now(game)

    def record_now(self, game: FinishedGame) -> None:
        """Persist `game` here and now (blocking). Never raises: each failure is logged as
        an error with the whole record."""
        try:
            self._record(game)
        except BaseException as error:  # a bug here must not lose the record silently
            log.error(
                "RESULT NOT RECORDED: recording failed",
                room=game.room_id,
                error=repr(error),
                record=self._describe(game, None),
            )
            if not isinstance(error, Exception):
                raise

    def _record(self, game: FinishedGame) -> None:
        data: bytes | None = None
        path: Path | None = None
        replays = self.replays
        if game.replay is not None and replays is not None:
            try:
                data = write_replay(game.room_id, game.replay)
                # The official names use local time.
                path = replays.reserve(game.names, game.finished.astimezone())
            except Exception as error:
                log.error(
                    "replay not saved: no file name",
                    room=game.room_id,
                    directory=str(replays.directory),
                    error=repr(error),
                )
        for sink in self.sinks:
            try:
                sink.write(game, path)
            except Exception as error:
                log.error(
                    "RESULT NOT RECORDED: cannot write",
                    sink=sink.name,
                    room=game.room_id,
                    error=repr(error),
                    record=self._describe(game, path),
                )
        if path is not None and data is not None and replays is not None:
            try:
                replays.write(path, data)
            except Exception as error:
                log.error(
                    "replay not saved",
                    room=game.room_id,
                    path=str(path),
                    error=repr(error),
                )
            else:
                log.info("replay saved", room=game.room_id, path=str(path))

    @staticmethod
    def _describe(game: FinishedGame, replay: Path | None) -> dict[str, object]:
        """The whole record for an error log; falls back to the raw description."""
        try:
            return results_record(game, replay)
        except Exception:
            return {"room": game.room_id, "game": repr(game)}
