"""Playing one match of a distributed league on this machine, on the one-machine league's unit
(`league.run`): its table (a game server in this process, the teams' launchers, no bot left
behind), `play_and_record` for each game under the game attempt the match run handed out, the
same records and results as `piranhas-league run` with the same seeds.

What this module adds is the match run around the games: while the match runs it polls its run
every `poll_interval` seconds (the run's heartbeat): a cancel request, a newer attempt that took
over (this one was presumed dead), or the worker shutting down end it at once (trio cancel
scopes, so every `finally` runs and no bot is left behind).

Store calls are synchronous and may wait for a restarting PostgreSQL: they run on the store's
one thread (`FleetStore`, a `league.run.AsyncStore`), never on the thread of the game server.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

import trio

from fleet.runs import MatchRun, Runs, RunStatus
from league.config import LeagueConfig
from league.postgres import retrying
from league.run import AsyncStore, admin_session, default_mode, open_table, play_and_record
from league.schedule import Match
from league.store import LeagueStore, StaleAttemptError, open_backend

__all__ = ["FleetStore", "MatchEnd", "play_match", "worker_config"]

T = TypeVar("T")

POLL_INTERVAL = 1.0


class FleetStore(AsyncStore):
    """The league store and the match runs on one connection, used from one thread (SQLite
    connections belong to their thread); calls wait for PostgreSQL to come back after a
    restart (`retrying`)."""

    def __init__(self, database: str) -> None:
        super().__init__(lambda: LeagueStore(open_backend(database)))
        self.runs = Runs(self.store.backend)

    def attempt(self, operation: Callable[[], T]) -> T:
        """Run the operation, retrying while the database server is unreachable."""
        return retrying(operation)


class MatchEnd(enum.Enum):
    """How `play_match` ended."""

    DONE = "done"  # every game recorded (also: nothing left to play)
    CANCELLED = "cancelled"  # the cancel flag was set
    SUPERSEDED = "superseded"  # a newer attempt took over: nothing of ours was recorded since
    STOPPING = "stopping"  # the worker is shutting down: the match was given back


def worker_config(config: LeagueConfig, worker: str) -> LeagueConfig:
    """The league as `worker`'s table sees it. Its `database` (which a worker never opens: the
    shared store comes from --database) names the worker instead, because the label of the
    table's bot containers derives from it (`league.run.container_label`) and opening a table
    removes every container with its label: workers on one host must never remove each
    other's running bots, and a restarted worker of the same name removes what its killed
    predecessor left behind."""
    return replace(config, database=config.database.parent / "fleet-workers" / worker)


@dataclass
class _Stop:
    reason: MatchEnd | None = None


async def play_match(
    config: LeagueConfig,
    match: Match,
    run: MatchRun,
    db: FleetStore,
    log_dir: Path,
    *,
    stopping: threading.Event | None = None,
    poll_interval: float = POLL_INTERVAL,
) -> MatchEnd:
    """Play the run's games and record them; end the run (done or cancelled) unless it was
    superseded or the worker is stopping. Raises MatchError (or LeagueRunError) when a game
    cannot be played, possibly inside an exception group (the run is left running: the
    caller requeues or fails it)."""
    stop = _Stop()
    async with trio.open_nursery() as nursery:
        try:
            with trio.CancelScope() as games_scope:
                nursery.start_soon(_poll, db, run, stop, games_scope, stopping, poll_interval)
                if run.claims:
                    await _play(config, run, db, log_dir)
        except* StaleAttemptError:  # a game's record or heartbeat was fenced off
            stop.reason = MatchEnd.SUPERSEDED
        finally:
            nursery.cancel_scope.cancel()
    if stop.reason is None:
        stop.reason = MatchEnd.DONE
    if stop.reason is MatchEnd.DONE:
        await db.call(db.runs.finish, run, RunStatus.DONE)
    elif stop.reason is MatchEnd.CANCELLED:
        await db.call(db.runs.finish, run, RunStatus.CANCELLED)
    elif stop.reason is MatchEnd.STOPPING:
        await db.call(db.runs.requeue, run)
    return stop.reason


async def _play(config: LeagueConfig, run: MatchRun, db: FleetStore, log_dir: Path) -> None:
    async with (
        open_table(
            worker_config(config, run.worker), mode=default_mode(config), log_dir=log_dir
        ) as table,
        admin_session(table.server) as admin,
    ):
        for claim in run.claims:
            await play_and_record(table, admin, db, claim)


async def _poll(
    db: FleetStore,
    run: MatchRun,
    stop: _Stop,
    scope: trio.CancelScope,
    stopping: threading.Event | None,
    interval: float,
) -> None:
    """Heartbeat the run; end the games on a cancel request, a newer attempt or shutdown."""
    while True:
        if stopping is not None and stopping.is_set():
            stop.reason = MatchEnd.STOPPING
            break
        try:
            if await db.call(db.runs.heartbeat, run):
                stop.reason = MatchEnd.CANCELLED
                break
        except StaleAttemptError:
            stop.reason = MatchEnd.SUPERSEDED
            break
        await trio.sleep(interval)
    scope.cancel()
