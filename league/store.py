"""The league's results store: schedule, attempts and results in a real database.

Embedded by default (SQLite in WAL mode, one file next to the league file); the SQL is plain
(`league.schema`) and every statement goes through the small `Backend` interface, so a PostgreSQL
backend for a distributed league is one more class.

The contract for a runner:

- `claim_next(worker)` — the next unfinished game (in schedule order) and a new attempt number
  for it, or None when nothing is left to start. A game whose running attempt missed its lease
  (no `heartbeat` in time: the worker died or hangs) is handed out again with a higher attempt.
- `heartbeat(claim)` — extends the lease; raises `StaleAttemptError` when the game was handed to
  a newer attempt in the meantime (the worker should stop playing it).
- `record(match_id, number, attempt, outcome)` — one transaction: the result row, the game marked
  finished, the attempt closed. Idempotent: the same attempt recording the same outcome again is
  a `DUPLICATE` and changes nothing; any other attempt (older, abandoned, or a newer one after the
  game finished) is rejected with `StaleAttemptError`; the same attempt with a different outcome
  raises `RecordConflictError`. A finished game is never overwritten, never played again.
- `abandon(claim)` — gives the game back (a bot failed to start, the runner is stopping).
- `reset_running()` — at start-up of a runner that is the store's only user: every attempt left
  running by a crashed run is abandoned, so the same command continues at once.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine import Team
from league import schema
from league.backends import Backend, SQLiteBackend, StoreError, Transaction
from league.schedule import Match, ScheduledGame, schedule_fingerprint

if TYPE_CHECKING:
    from engine import GameResult
    from league.config import LeagueConfig

__all__ = [
    "Backend",
    "Claim",
    "GameOutcome",
    "LeagueStore",
    "Progress",
    "RecordConflictError",
    "RecordStatus",
    "SQLiteBackend",
    "ScheduleMismatchError",
    "StaleAttemptError",
    "StoreError",
    "StoredGame",
    "Transaction",
    "abandon_attempt",
    "is_postgres",
    "open_backend",
    "start_attempt",
]

DEFAULT_LEASE_SECONDS = 300.0


class StaleAttemptError(StoreError):
    """The attempt is not (or no longer) the one allowed to write this game."""


class RecordConflictError(StoreError):
    """The same attempt tried to record a different outcome than it already recorded."""


class ScheduleMismatchError(StoreError):
    """The store belongs to another schedule (teams, format, games or seed changed)."""


# ---- values --------------------------------------------------------------------------------


@dataclass(frozen=True)
class GameOutcome:
    """What a game produced, by side: index 0 is Team.ONE (`team_one`), 1 is Team.TWO.
    `winner` is a team id or None (draw, or an aborted game); `record` the game record XML
    (`league.records`), if the runner wrote one."""

    siegpunkte: tuple[int, int]
    schwarm: tuple[int, int]
    winner: str | None
    regular: bool
    reason: str
    record: str | None = None

    @classmethod
    def from_result(
        cls, game: ScheduledGame, result: GameResult, record: str | None = None
    ) -> GameOutcome:
        """Convert the engine's result (scores in slot order, by Team) to team ids."""
        by_team = {entry.team: score for entry, score in result.scores}
        one = by_team.get(Team.ONE, (0, 0))
        two = by_team.get(Team.TWO, (0, 0))
        winner = {Team.ONE: game.team_one, Team.TWO: game.team_two, None: None}[result.winner]
        return cls(
            (one[0], two[0]), (one[1], two[1]), winner, result.regular, result.reason, record
        )


@dataclass(frozen=True)
class Claim:
    """A game handed to a worker under `attempt` (the fencing token for every later write)."""

    game: ScheduledGame
    attempt: int
    worker: str

    @property
    def match_id(self) -> int:
        """The game's match."""
        return self.game.match_id

    @property
    def number(self) -> int:
        """The game's number in its match."""
        return self.game.number


class RecordStatus(enum.Enum):
    """What `record` did."""

    RECORDED = "recorded"
    DUPLICATE = "duplicate"  # the same attempt's same outcome was already there: nothing changed


@dataclass(frozen=True)
class StoredGame:
    """A recorded game."""

    game: ScheduledGame
    attempt: int
    outcome: GameOutcome


@dataclass(frozen=True)
class Progress:
    """Counts of games by status."""

    pending: int
    running: int
    finished: int

    @property
    def total(self) -> int:
        """All games of the schedule."""
        return self.pending + self.running + self.finished


# ---- the store -----------------------------------------------------------------------------

_GAME_COLUMNS = "match_id, game_number, board_seed, team_one, team_two"


def _game(row: Sequence[Any]) -> ScheduledGame:
    return ScheduledGame(int(row[0]), int(row[1]), int(row[2]), str(row[3]), str(row[4]))


def start_attempt(
    tx: Transaction, game: ScheduledGame, previous: int, worker: str, now: int, lease_until: int
) -> Claim | None:
    """In `tx`: hand the game, last at attempt `previous`, to `worker` under the next attempt
    (an older running attempt is marked expired). None when another claimer changed the game
    first. Also how a distributed match run hands out its games (fleet.runs)."""
    attempt = previous + 1
    # Compare-and-set on the attempt number: under PostgreSQL's READ COMMITTED two
    # claimers may select the same row; only one of them changes it.
    changed = tx.execute(
        "UPDATE games SET status = 'running', attempt = ?, lease_until = ? "
        "WHERE match_id = ? AND game_number = ? AND attempt = ? AND status <> 'finished'",
        (attempt, lease_until, game.match_id, game.number, previous),
    )
    if changed != 1:
        return None
    tx.execute(
        "UPDATE attempts SET outcome = 'expired', ended_at = ? "
        "WHERE match_id = ? AND game_number = ? AND outcome = 'running'",
        (now, game.match_id, game.number),
    )
    tx.execute(
        "INSERT INTO attempts (match_id, game_number, attempt, worker, started_at, "
        "heartbeat_at, ended_at, outcome) VALUES (?, ?, ?, ?, ?, ?, NULL, 'running')",
        (game.match_id, game.number, attempt, worker, now, now),
    )
    return Claim(game, attempt, worker)


def abandon_attempt(tx: Transaction, claim: Claim, now: int) -> bool:
    """In `tx`: give the claimed game back (pending) if the claim's attempt still runs it."""
    changed = tx.execute(
        "UPDATE games SET status = 'pending', lease_until = NULL "
        "WHERE match_id = ? AND game_number = ? AND attempt = ? AND status = 'running'",
        (claim.match_id, claim.number, claim.attempt),
    )
    if changed:
        tx.execute(
            "UPDATE attempts SET outcome = 'abandoned', ended_at = ? "
            "WHERE match_id = ? AND game_number = ? AND attempt = ?",
            (now, claim.match_id, claim.number, claim.attempt),
        )
    return changed == 1


def is_postgres(database: str) -> bool:
    """Whether the store address `database` names a PostgreSQL server (else an SQLite file)."""
    return database.startswith(("postgresql://", "postgres://"))


def open_backend(database: str, *, idle_in_transaction_ms: int | None = None) -> Backend:
    """The backend of the store address `database`: `postgresql://…` (or `postgres://…`) for
    the shared store of a distributed league, anything else the path of an SQLite file.
    `idle_in_transaction_ms`: PostgreSQL only, see `league.postgres.PostgresBackend`."""
    if is_postgres(database):
        # Only then: psycopg is an optional dependency (the `distributed` extra).
        from league.postgres import PostgresBackend

        return PostgresBackend(database, idle_in_transaction_ms=idle_in_transaction_ms)
    return SQLiteBackend(Path(database))


class LeagueStore:
    """The league's state in a `Backend`. `clock` returns seconds since the epoch (tests pass a
    fake one to expire leases without waiting)."""

    def __init__(
        self,
        backend: Backend,
        *,
        clock: Callable[[], float] = time.time,
        before_commit: Callable[[str], None] | None = None,
    ) -> None:
        self.backend = backend
        self._clock = clock
        # Fault injection for the crash tests: called inside a write transaction right before
        # it commits, with the operation's name.
        self._before_commit = before_commit

    @classmethod
    def sqlite(cls, path: Path | str, **kwargs: Any) -> LeagueStore:
        """A store in the SQLite file `path` (created if missing)."""
        return cls(SQLiteBackend(path), **kwargs)

    def close(self) -> None:
        """Close the backend."""
        self.backend.close()

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def _commit_point(self, operation: str) -> None:
        if self._before_commit is not None:
            self._before_commit(operation)

    # -- setup --

    def initialize(self, config: LeagueConfig, matches: tuple[Match, ...]) -> None:
        """Create the tables and the schedule on first use; afterwards check that the store
        belongs to this schedule (raises ScheduleMismatchError otherwise)."""
        fingerprint = schedule_fingerprint(matches)
        with self.backend.transaction() as tx:
            for statement in schema.STATEMENTS:
                tx.execute(statement)
            rows = tx.query("SELECT meta_value FROM league_meta WHERE meta_key = ?", ("schedule",))
            if rows:
                if rows[0][0] != fingerprint:
                    raise ScheduleMismatchError(
                        "this store holds another schedule: the league file's teams, format, "
                        "games_per_match or seed changed after the league started "
                        "(use a new database file for a new league)"
                    )
                return
            meta = {
                "schema_version": str(schema.SCHEMA_VERSION),
                "league_name": config.name,
                "schedule": fingerprint,
            }
            for key, value in meta.items():
                tx.execute(
                    "INSERT INTO league_meta (meta_key, meta_value) VALUES (?, ?)", (key, value)
                )
            for position, team in enumerate(config.teams):
                tx.execute(
                    "INSERT INTO teams (team_id, display_name, position) VALUES (?, ?, ?)",
                    (team.id, team.name, position),
                )
            for match in matches:
                tx.execute(
                    "INSERT INTO matches (match_id, round_number, home, away) VALUES (?, ?, ?, ?)",
                    (match.id, match.round, match.home, match.away),
                )
                for game in match.games:
                    tx.execute(
                        f"INSERT INTO games ({_GAME_COLUMNS}, status, attempt, lease_until) "
                        "VALUES (?, ?, ?, ?, ?, 'pending', 0, NULL)",
                        (game.match_id, game.number, game.board_seed, game.team_one, game.team_two),
                    )

    # -- work --

    def claim_next(
        self, worker: str, *, lease_seconds: float = DEFAULT_LEASE_SECONDS
    ) -> Claim | None:
        """Start a new attempt on the first unfinished game that nobody is playing (pending, or
        running with an expired lease), in schedule order. None when there is none."""
        now = self._now_ms()
        with self.backend.transaction() as tx:
            rows = tx.query(
                f"SELECT {_GAME_COLUMNS}, attempt FROM games "
                "WHERE status = 'pending' OR (status = 'running' AND lease_until < ?) "
                "ORDER BY match_id, game_number LIMIT 1",
                (now,),
            )
            if not rows:
                return None
            claim = start_attempt(
                tx,
                _game(rows[0]),
                int(rows[0][5]),
                worker,
                now,
                now + int(lease_seconds * 1000),
            )
            if claim is None:
                return None
            self._commit_point("claim")
        return claim

    def heartbeat(self, claim: Claim, *, lease_seconds: float = DEFAULT_LEASE_SECONDS) -> None:
        """Extend the claim's lease. Raises StaleAttemptError if the game is no longer this
        attempt's (handed out again after an expired lease, or finished, or abandoned)."""
        now = self._now_ms()
        with self.backend.transaction() as tx:
            changed = tx.execute(
                "UPDATE games SET lease_until = ? WHERE match_id = ? AND game_number = ? "
                "AND attempt = ? AND status = 'running'",
                (now + int(lease_seconds * 1000), claim.match_id, claim.number, claim.attempt),
            )
            if changed != 1:
                raise StaleAttemptError(
                    f"match {claim.match_id} game {claim.number}: attempt {claim.attempt} "
                    "is no longer the running attempt"
                )
            tx.execute(
                "UPDATE attempts SET heartbeat_at = ? WHERE match_id = ? AND game_number = ? "
                "AND attempt = ?",
                (now, claim.match_id, claim.number, claim.attempt),
            )

    def abandon(self, claim: Claim) -> bool:
        """Give the game back for another attempt. False (and nothing changes) if this attempt
        was no longer the running one."""
        now = self._now_ms()
        with self.backend.transaction() as tx:
            return abandon_attempt(tx, claim, now)

    def reset_running(self) -> int:
        """Abandon every running attempt (a crashed run's), returning how many. Only for a
        runner that is the store's single user; shared stores rely on expiring leases."""
        now = self._now_ms()
        with self.backend.transaction() as tx:
            tx.execute(
                "UPDATE attempts SET outcome = 'abandoned', ended_at = ? WHERE outcome = 'running'",
                (now,),
            )
            return tx.execute(
                "UPDATE games SET status = 'pending', lease_until = NULL WHERE status = 'running'"
            )

    @staticmethod
    def _recorded_before(
        tx: Transaction, match_id: int, number: int, attempt: int, values: tuple[object, ...]
    ) -> bool:
        """True when this attempt already recorded these values; raises when the game's result
        is another attempt's (StaleAttemptError) or differs (RecordConflictError)."""
        where = f"match {match_id} game {number}"
        existing = tx.query(
            "SELECT attempt, siegpunkte_one, siegpunkte_two, schwarm_one, schwarm_two, "
            "winner, regular, reason, game_record FROM results "
            "WHERE match_id = ? AND game_number = ?",
            (match_id, number),
        )
        if not existing:
            return False
        row = existing[0]
        if int(row[0]) != attempt:
            raise StaleAttemptError(
                f"{where} is already recorded by attempt {row[0]}; attempt {attempt} rejected"
            )
        if tuple(row[1:]) != values:
            raise RecordConflictError(
                f"{where}: attempt {attempt} already recorded a different outcome"
            )
        return True

    def record(
        self, match_id: int, number: int, attempt: int, outcome: GameOutcome
    ) -> RecordStatus:
        """Record a game's outcome for `attempt`, all in one transaction (see the module doc)."""
        now = self._now_ms()
        values = (
            outcome.siegpunkte[0],
            outcome.siegpunkte[1],
            outcome.schwarm[0],
            outcome.schwarm[1],
            outcome.winner,
            1 if outcome.regular else 0,
            outcome.reason,
            outcome.record,
        )
        where = f"match {match_id} game {number}"
        with self.backend.transaction() as tx:
            if self._recorded_before(tx, match_id, number, attempt, values):
                return RecordStatus.DUPLICATE
            changed = tx.execute(
                "UPDATE games SET status = 'finished', lease_until = NULL "
                "WHERE match_id = ? AND game_number = ? AND attempt = ? AND status = 'running'",
                (match_id, number, attempt),
            )
            # PostgreSQL (READ COMMITTED): a racing record of the same game made this UPDATE
            # wait for its commit and then find nothing to change; its result row is visible
            # to the next statement, so the same attempt's same outcome is a duplicate there too.
            if changed != 1 and self._recorded_before(tx, match_id, number, attempt, values):
                return RecordStatus.DUPLICATE
            if changed != 1:
                known = tx.query(
                    "SELECT attempt, status FROM games WHERE match_id = ? AND game_number = ?",
                    (match_id, number),
                )
                if not known:
                    raise StaleAttemptError(f"{where} is not in the schedule")
                raise StaleAttemptError(
                    f"{where}: attempt {attempt} rejected (the game's attempt is {known[0][0]}, "
                    f"status {known[0][1]})"
                )
            tx.execute(
                "INSERT INTO results (match_id, game_number, attempt, siegpunkte_one, "
                "siegpunkte_two, schwarm_one, schwarm_two, winner, regular, reason, game_record, "
                "recorded_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (match_id, number, attempt, *values, now),
            )
            tx.execute(
                "UPDATE attempts SET outcome = 'finished', ended_at = ? "
                "WHERE match_id = ? AND game_number = ? AND attempt = ?",
                (now, match_id, number, attempt),
            )
            self._commit_point("record")
        return RecordStatus.RECORDED

    # -- reading --

    def finished_games(self) -> list[StoredGame]:
        """Every recorded game, in schedule order."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                "SELECT g.match_id, g.game_number, g.board_seed, g.team_one, g.team_two, "
                "r.attempt, r.siegpunkte_one, r.siegpunkte_two, r.schwarm_one, r.schwarm_two, "
                "r.winner, r.regular, r.reason, r.game_record "
                "FROM results r JOIN games g "
                "ON g.match_id = r.match_id AND g.game_number = r.game_number "
                "ORDER BY g.match_id, g.game_number"
            )
        return [
            StoredGame(
                _game(row),
                int(row[5]),
                GameOutcome(
                    (int(row[6]), int(row[7])),
                    (int(row[8]), int(row[9])),
                    row[10],
                    bool(row[11]),
                    str(row[12]),
                    row[13],
                ),
            )
            for row in rows
        ]

    def progress(self) -> Progress:
        """How many games are pending, running and finished."""
        with self.backend.transaction() as tx:
            rows = tx.query("SELECT status, COUNT(*) FROM games GROUP BY status")
        counts = {str(status): int(count) for status, count in rows}
        return Progress(
            counts.get("pending", 0), counts.get("running", 0), counts.get("finished", 0)
        )

    def attempts(self, match_id: int, number: int) -> list[tuple[int, str, str]]:
        """(attempt, worker, outcome) of every attempt of a game, oldest first."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                "SELECT attempt, worker, outcome FROM attempts WHERE match_id = ? "
                "AND game_number = ? ORDER BY attempt",
                (match_id, number),
            )
        return [(int(a), str(w), str(o)) for a, w, o in rows]
