"""Match runs of a distributed league: which match is queued, running (where, since when),
done, failed or cancelled, and the cancel flag a running match polls.

One row per match in the table `fleet_runs`, next to the league store's tables in the same
database (plain SQL for SQLite and PostgreSQL, as `league.schema`). The games themselves and their
results stay in the league store; a match run only hands the games of one match to one worker:

- `start(match_id, worker)` — a new match attempt. Every unfinished game of the match gets a new
  game attempt in the league store (the fencing token its result must carry), so whatever an
  older attempt of the same match still writes is rejected (`StaleAttemptError`). A message is
  delivered again only when Dramatiq presumes its worker dead (missed heartbeats, or a worker that
  requeued it on shutdown): the newest delivery always takes over.
- `heartbeat(run)` — proves the attempt is still the current one and answers whether the match
  was cancelled; raises `StaleAttemptError` when a newer attempt took over.
- `finish(run, status)` — done, failed or cancelled; fenced on the attempt like everything else.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from league.schedule import Match, ScheduledGame
from league.store import (
    Backend,
    Claim,
    StaleAttemptError,
    Transaction,
    abandon_attempt,
    start_attempt,
)

__all__ = ["FLEET_STATEMENTS", "MatchRun", "RunState", "RunStatus", "Runs"]

FLEET_STATEMENTS: tuple[str, ...] = (
    """CREATE TABLE IF NOT EXISTS fleet_runs (
        match_id INTEGER NOT NULL PRIMARY KEY REFERENCES matches (match_id),
        status VARCHAR(16) NOT NULL,
        attempt INTEGER NOT NULL,
        worker VARCHAR(200),
        enqueued_at BIGINT,
        started_at BIGINT,
        heartbeat_at BIGINT,
        finished_at BIGINT,
        cancel_requested SMALLINT NOT NULL,
        error TEXT
    )""",
)

# A running game's lease in the league store: distributed runs never hand out games by lease
# (Dramatiq decides when a match is re-run), so it only has to outlive any game.
GAME_LEASE_MS = 7 * 24 * 3600 * 1000


class RunStatus(enum.Enum):
    """Where a match stands."""

    NEW = "new"  # scheduled, not yet sent to the queue
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def final(self) -> bool:
        """No worker will touch the match again."""
        return self in (RunStatus.DONE, RunStatus.FAILED, RunStatus.CANCELLED)


@dataclass(frozen=True)
class MatchRun:
    """A match handed to one worker under `attempt`, with the games it still has to play (each
    under its own game attempt: the league store's fencing token)."""

    match_id: int
    attempt: int
    worker: str
    claims: tuple[Claim, ...]


@dataclass(frozen=True)
class RunState:
    """One row of `piranhas-league status`."""

    match_id: int
    status: RunStatus
    attempt: int
    worker: str | None
    started_at: float | None  # seconds since the epoch
    heartbeat_at: float | None
    cancel_requested: bool
    error: str | None


def _seconds(ms: object) -> float | None:
    return None if ms is None else int(str(ms)) / 1000


class Runs:
    """The `fleet_runs` table on a league store's backend. `clock` returns seconds since the
    epoch."""

    def __init__(self, backend: Backend, *, clock: Callable[[], float] = time.time) -> None:
        self.backend = backend
        self._clock = clock

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def initialize(self, matches: Iterable[Match]) -> None:
        """Create the table and a `new` row for every match not yet known (the league store's
        `initialize` must have created the schedule)."""
        with self.backend.transaction() as tx:
            for statement in FLEET_STATEMENTS:
                tx.execute(statement)
            known = {int(row[0]) for row in tx.query("SELECT match_id FROM fleet_runs")}
            for match in matches:
                if match.id not in known:
                    tx.execute(
                        "INSERT INTO fleet_runs (match_id, status, attempt, cancel_requested) "
                        "VALUES (?, 'new', 0, 0)",
                        (match.id,),
                    )

    def to_enqueue(self) -> list[int]:
        """Matches to send to the queue: never sent, or sent and not yet final."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                "SELECT match_id FROM fleet_runs WHERE status IN ('new', 'queued') "
                "AND cancel_requested = 0 ORDER BY match_id"
            )
        return [int(row[0]) for row in rows]

    def mark_queued(self, match_id: int) -> None:
        """The match's message was sent."""
        self.mark_queued_all([match_id])

    def mark_queued_all(self, match_ids: Iterable[int]) -> None:
        """These matches' messages were sent (one transaction)."""
        now = self._now_ms()
        with self.backend.transaction() as tx:
            for match_id in match_ids:
                tx.execute(
                    "UPDATE fleet_runs SET status = 'queued', enqueued_at = ? "
                    "WHERE match_id = ? AND status = 'new'",
                    (now, match_id),
                )

    def start(self, match_id: int, worker: str) -> MatchRun | None:
        """A new attempt of the match for `worker`, or None when there is nothing to do (the
        match is final, or cancelled: then it is marked so)."""
        now = self._now_ms()
        with self.backend.transaction() as tx:
            rows = tx.query(
                "SELECT status, attempt, cancel_requested FROM fleet_runs WHERE match_id = ?",
                (match_id,),
            )
            if not rows:
                raise StaleAttemptError(f"match {match_id} is not in this league")
            status, previous, cancelled = RunStatus(rows[0][0]), int(rows[0][1]), rows[0][2]
            if status.final:
                return None
            if cancelled:
                tx.execute(
                    "UPDATE fleet_runs SET status = 'cancelled', finished_at = ? "
                    "WHERE match_id = ?",
                    (now, match_id),
                )
                return None
            attempt = previous + 1
            changed = tx.execute(
                "UPDATE fleet_runs SET status = 'running', attempt = ?, worker = ?, "
                "started_at = ?, heartbeat_at = ?, error = NULL "
                "WHERE match_id = ? AND attempt = ?",
                (attempt, worker, now, now, match_id, previous),
            )
            if changed != 1:  # another delivery of the same match won the race
                return None
            games = tx.query(
                "SELECT match_id, game_number, board_seed, team_one, team_two, attempt "
                "FROM games WHERE match_id = ? AND status <> 'finished' ORDER BY game_number",
                (match_id,),
            )
            claims = []
            for row in games:
                game = ScheduledGame(
                    int(row[0]), int(row[1]), int(row[2]), str(row[3]), str(row[4])
                )
                claim = start_attempt(tx, game, int(row[5]), worker, now, now + GAME_LEASE_MS)
                if claim is not None:  # None: another run changed it (cannot happen after
                    claims.append(claim)  # the run's own compare-and-set above)
        return MatchRun(match_id, attempt, worker, tuple(claims))

    def heartbeat(self, run: MatchRun) -> bool:
        """Note that the attempt is alive; whether the match was cancelled. Raises
        StaleAttemptError when the attempt is no longer the current one."""
        with self.backend.transaction() as tx:
            changed = tx.execute(
                "UPDATE fleet_runs SET heartbeat_at = ? "
                "WHERE match_id = ? AND attempt = ? AND status = 'running'",
                (self._now_ms(), run.match_id, run.attempt),
            )
            if changed != 1:
                raise StaleAttemptError(
                    f"match {run.match_id}: attempt {run.attempt} is no longer the running one"
                )
            rows = tx.query(
                "SELECT cancel_requested FROM fleet_runs WHERE match_id = ?", (run.match_id,)
            )
        return bool(rows[0][0])

    def finish(self, run: MatchRun, status: RunStatus, error: str | None = None) -> bool:
        """End the attempt as `status`; False when it was no longer the current one. A
        cancelled attempt gives its unfinished games back (pending)."""
        assert status.final
        now = self._now_ms()
        with self.backend.transaction() as tx:
            changed = tx.execute(
                "UPDATE fleet_runs SET status = ?, finished_at = ?, error = ? "
                "WHERE match_id = ? AND attempt = ? AND status = 'running'",
                (status.value, now, error, run.match_id, run.attempt),
            )
            if changed == 1:
                self._release_games(tx, run, now)
        return changed == 1

    def requeue(self, run: MatchRun) -> bool:
        """Give the match back to the queue (the worker is shutting down); False when the
        attempt was no longer the current one."""
        now = self._now_ms()
        with self.backend.transaction() as tx:
            changed = tx.execute(
                "UPDATE fleet_runs SET status = 'queued', worker = NULL, enqueued_at = ? "
                "WHERE match_id = ? AND attempt = ? AND status = 'running'",
                (now, run.match_id, run.attempt),
            )
            if changed == 1:
                self._release_games(tx, run, now)
        return changed == 1

    @staticmethod
    def _release_games(tx: Transaction, run: MatchRun, now: int) -> None:
        for claim in run.claims:
            abandon_attempt(tx, claim, now)

    def fail(self, match_id: int, error: str) -> None:
        """Mark the match failed whatever its attempt (its message went to the dead-letter
        set: no delivery will come)."""
        now = self._now_ms()
        with self.backend.transaction() as tx:
            tx.execute(
                "UPDATE fleet_runs SET status = 'failed', finished_at = ?, error = ? "
                "WHERE match_id = ? AND status NOT IN ('done', 'cancelled')",
                (now, error, match_id),
            )
            tx.execute(
                "UPDATE games SET status = 'pending', lease_until = NULL "
                "WHERE match_id = ? AND status = 'running'",
                (match_id,),
            )

    def cancel(self, match_ids: Iterable[int] | None = None) -> int:
        """Request the cancellation of these matches (all when None): a match not yet
        running is cancelled at once, a running one when it next polls the flag. How many
        matches were not final yet. Raises KeyError (nothing changed) for an id that is not
        a match of the league."""
        now = self._now_ms()
        with self.backend.transaction() as tx:
            known = {int(r[0]) for r in tx.query("SELECT match_id FROM fleet_runs")}
            if match_ids is None:
                targets = sorted(known)
            else:
                targets = list(match_ids)
                unknown = sorted(set(targets) - known)
                if unknown:
                    raise KeyError(unknown)
            count = 0
            for match_id in targets:
                count += tx.execute(
                    "UPDATE fleet_runs SET cancel_requested = 1 "
                    "WHERE match_id = ? AND status NOT IN ('done', 'failed', 'cancelled')",
                    (match_id,),
                )
                tx.execute(
                    "UPDATE fleet_runs SET status = 'cancelled', finished_at = ? "
                    "WHERE match_id = ? AND status IN ('new', 'queued')",
                    (now, match_id),
                )
        return count

    def states(self) -> list[RunState]:
        """Every match's run, in schedule order."""
        with self.backend.transaction() as tx:
            rows = tx.query(
                "SELECT match_id, status, attempt, worker, started_at, heartbeat_at, "
                "cancel_requested, error FROM fleet_runs ORDER BY match_id"
            )
        return [
            RunState(
                int(row[0]),
                RunStatus(row[1]),
                int(row[2]),
                row[3],
                _seconds(row[4]),
                _seconds(row[5]),
                bool(row[6]),
                row[7],
            )
            for row in rows
        ]
