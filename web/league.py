"""The league on the web viewer: standings, crosstable, matches and their game records.

`LeagueView` reads a league's store read-only: a SQLite connection of its own, opened in a
worker thread for each refresh (`mode=ro`, so the viewer can never write to a running
league), at most every `POLL_SECONDS`; pages poll, so a running league's table moves on by
itself. The numbers come from `league.standings` (the same table `piranhas-league standings`
prints); a game record is turned into an official replay with `league.records.to_replay` and
checked against the engine with `league.records.verify`.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import structlog
import trio

from league.config import LeagueConfig, LeagueFileError, load_league
from league.records import GameRecord, RecordError, read_record, to_replay, verify
from league.schedule import Match, build_schedule
from league.standings import Standings, compute_standings
from league.store import LeagueStore, SQLiteBackend, StoredGame

log = structlog.get_logger("web.league")

POLL_SECONDS = 3.0
_STORE_UNREADABLE = "the league store cannot be read (the server log says why)"


class LeagueUnavailable(Exception):
    """The league file or its store cannot be read: `public` says which to a page (no paths,
    nothing of the file), the message says why for the log."""

    def __init__(self, public: str, detail: str) -> None:
        super().__init__(detail)
        self.public = public


@dataclass(frozen=True)
class LeagueSnapshot:
    """The league as the store held it at one moment."""

    config: LeagueConfig
    matches: tuple[Match, ...]
    finished: dict[tuple[int, int], StoredGame]  # (match id, game number) -> game
    standings: Standings
    read_at: float  # wall clock

    def name(self, team_id: str) -> str:
        """A team's display name."""
        return self.config.team(team_id).name

    def match_summary(self, match: Match) -> dict[str, Any]:
        """One line of the match list: the pairing, games recorded and the games won."""
        games = [self.finished.get((match.id, game.number)) for game in match.games]
        wins = {match.home: 0, match.away: 0}
        for game in games:
            if game is not None and game.outcome.winner in wins:
                wins[game.outcome.winner] += 1
        return {
            "id": match.id,
            "round": match.round,
            "home": match.home,
            "away": match.away,
            "names": [self.name(match.home), self.name(match.away)],
            "recorded": sum(1 for game in games if game is not None),
            "games": len(match.games),
            "wins": [wins[match.home], wins[match.away]],
        }

    def to_json(self) -> dict[str, Any]:
        """The standings page: `league.standings`' table and crosstable, names, matches."""
        return {
            "standings": self.standings.to_dict(),
            "names": {team.id: team.name for team in self.config.teams},
            "tiebreaks": [criterion.value for criterion in self.config.tiebreaks],
            "matches": [self.match_summary(match) for match in self.matches],
            "readAt": self.read_at,
        }

    def match_json(self, match_id: int) -> dict[str, Any] | None:
        """A match page: every game with its result and whether a record exists."""
        if not 1 <= match_id <= len(self.matches):
            return None
        match = self.matches[match_id - 1]
        games = []
        for game in match.games:
            finished = self.finished.get((match.id, game.number))
            outcome = finished.outcome if finished is not None else None
            games.append(
                {
                    "number": game.number,
                    "boardSeed": game.board_seed,
                    "teams": [game.team_one, game.team_two],
                    "names": [self.name(game.team_one), self.name(game.team_two)],
                    "result": None
                    if outcome is None
                    else {
                        "winner": outcome.winner,
                        "siegpunkte": list(outcome.siegpunkte),
                        "schwarm": list(outcome.schwarm),
                        "regular": outcome.regular,
                        "reason": outcome.reason,
                    },
                    "record": outcome is not None and outcome.record is not None,
                }
            )
        return {**self.match_summary(match), "league": self.config.name, "games_list": games}

    def record(self, match_id: int, number: int) -> str | None:
        """The stored game record XML of a game, None if there is none."""
        finished = self.finished.get((match_id, number))
        return finished.outcome.record if finished is not None else None


def _read(league_file: Path, database: Path | None) -> LeagueSnapshot:
    """Runs in a worker thread: the league file, then the store in one read transaction."""
    try:
        config = load_league(league_file)
    except (OSError, LeagueFileError) as error:
        raise LeagueUnavailable(
            "the league file cannot be read (the server log says why)",
            f"league file {league_file}: {error}",
        ) from error
    matches = build_schedule(config)
    path = database if database is not None else config.database
    finished: list[StoredGame] = []
    if path.exists():  # no store yet: no game recorded yet
        store = LeagueStore(SQLiteBackend(path, busy_timeout=10.0, read_only=True))
        try:
            finished = store.finished_games()
        except sqlite3.Error as error:
            if "no such table" not in str(error):  # created, not initialised yet
                raise LeagueUnavailable(
                    _STORE_UNREADABLE, f"league store {path}: {error}"
                ) from error
        finally:
            store.close()
    standings = compute_standings(config, matches, finished)
    by_game = {(game.game.match_id, game.game.number): game for game in finished}
    return LeagueSnapshot(config, matches, by_game, standings, time.time())


class LeagueView:
    """The league pages' data: a snapshot of the store, read again when older than
    `poll_seconds` (one read at a time however many pages ask)."""

    def __init__(
        self, league_file: Path, database: Path | None, *, poll_seconds: float = POLL_SECONDS
    ) -> None:
        self.league_file = league_file
        self.database = database
        self.poll_seconds = poll_seconds
        self._snapshot: LeagueSnapshot | None = None
        self._read_at = -float("inf")  # trio clock
        self._lock = trio.Lock()

    async def snapshot(self) -> LeagueSnapshot:
        """The latest snapshot (LeagueUnavailable when the file or the store is unreadable)."""
        async with self._lock:
            if self._snapshot is None or trio.current_time() - self._read_at >= self.poll_seconds:
                try:
                    self._snapshot = await trio.to_thread.run_sync(
                        _read, self.league_file, self.database
                    )
                except sqlite3.Error as error:
                    raise LeagueUnavailable(_STORE_UNREADABLE, f"league store: {error}") from error
                self._read_at = trio.current_time()
            return self._snapshot


def record_replay(data: bytes) -> tuple[GameRecord, bytes, list[str]]:
    """A game record's official replay and what `verify` found wrong with it (RecordError
    for a document that is no record)."""
    record = read_record(data)
    return record, to_replay(record), [str(discrepancy) for discrepancy in verify(record)]


def looks_like_record(data: bytes) -> bool:
    """A league game record (root element `<game>` with a `<header>`), not a replay."""
    head = data[:4096].lstrip()
    if head.startswith(b"<?xml"):
        head = head[head.find(b"?>") + 2 :].lstrip()
    while head.startswith(b"<!--"):
        end = head.find(b"-->")
        if end < 0:
            return False
        head = head[end + 3 :].lstrip()
    return head.startswith(b"<game>") or head.startswith(b"<game ")


__all__ = [
    "POLL_SECONDS",
    "LeagueSnapshot",
    "LeagueUnavailable",
    "LeagueView",
    "RecordError",
    "looks_like_record",
    "record_replay",
]
