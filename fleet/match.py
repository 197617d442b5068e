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

A worker plays match after match on one table (`TableHost`: the in-process server, the teams'
launchers and their image checks, one admin session), opened at its first match and kept in a
thread of its own; only a match that fails makes it open a fresh one for the next (issue 21:
a worker's per-match set-up after its first match, `python -m bench.worker_setup`).
"""

from __future__ import annotations

import enum
import threading
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import structlog
import trio

from client import ClientSession
from fleet.queue import HEARTBEAT_TIMEOUT_MS
from fleet.runs import MatchRun, Runs, RunStatus
from league.config import LeagueConfig
from league.postgres import retrying
from league.run import AsyncStore, admin_session, default_mode, open_table, play_and_record
from league.schedule import Match
from league.store import LeagueStore, StaleAttemptError, open_backend
from league.table import LeagueTable

__all__ = ["FleetStore", "MatchEnd", "TableHost", "play_match", "worker_config"]

log = structlog.get_logger("fleet.match")

T = TypeVar("T")

POLL_INTERVAL = 1.0


class FleetStore(AsyncStore):
    """The league store and the match runs on one connection, used from one thread (SQLite
    connections belong to their thread); calls wait for PostgreSQL to come back after a
    restart (`retrying`).

    A worker presumed dead (no heartbeat in Redis for `HEARTBEAT_TIMEOUT_MS`) may be frozen in
    the middle of a transaction, holding the row locks of its match: PostgreSQL ends such a
    transaction after the same time, so the worker that takes the match over is not blocked
    until the frozen one resumes (`idle_in_transaction_ms`)."""

    def __init__(self, database: str) -> None:
        super().__init__(
            lambda: LeagueStore(open_backend(database, idle_in_transaction_ms=HEARTBEAT_TIMEOUT_MS))
        )
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
    table: tuple[LeagueTable, ClientSession] | None = None,
) -> MatchEnd:
    """Play the run's games and record them; end the run (done or cancelled) unless it was
    superseded or the worker is stopping. Raises MatchError (or LeagueRunError) when a game
    cannot be played, possibly inside an exception group (the run is left running: the
    caller requeues or fails it). `table`: an open table and its admin session to play on
    (`TableHost`); without it the match opens a table of its own."""
    stop = _Stop()
    async with trio.open_nursery() as nursery:
        try:
            with trio.CancelScope() as games_scope:
                nursery.start_soon(_poll, db, run, stop, games_scope, stopping, poll_interval)
                if run.claims:
                    await _play(config, run, db, log_dir, table)
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


async def _play(
    config: LeagueConfig,
    run: MatchRun,
    db: FleetStore,
    log_dir: Path,
    kept: tuple[LeagueTable, ClientSession] | None,
) -> None:
    if kept is not None:
        for claim in run.claims:
            await play_and_record(kept[0], kept[1], db, claim)
        return
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


@dataclass
class _Job:
    """One match for the table's thread, and what became of it."""

    play: Callable[[LeagueTable, ClientSession], Awaitable[Any]]
    done: threading.Event = field(default_factory=threading.Event)
    result: Any = None
    error: BaseException | None = None


class TableHost:
    """One table for match after match: a trio loop in a thread of its own keeps the table
    (`open_table` with `worker_config(config, worker)`) and its admin session open between
    matches, so a match after the first pays no server start, no launchers and no image
    checks. A match that raises or does not end done (cancelled, superseded, given back)
    closes the table; the next match opens a fresh one (a table that failed once is never
    trusted again). The table's game server logs to `log_dir`/server.log only; the
    process's logging (worker.log, Dramatiq's lines) stays the worker's while it is open.

    `play_match` is called from any other thread (a Dramatiq worker thread) and blocks until
    the match ended; `close` stops the table and the thread."""

    def __init__(self, config: LeagueConfig, worker: str, log_dir: Path) -> None:
        self.config = worker_config(config, worker)
        self.log_dir = log_dir
        self.opened = 0  # tables opened so far
        self.setup_ms: list[float] = []  # per match: ms from its start until it could play
        self._token: trio.lowlevel.TrioToken | None = None
        self._send: trio.MemorySendChannel[_Job | None] | None = None
        self._started = threading.Event()
        self._thread: threading.Thread | None = None

    def _start(self) -> None:
        self._started.clear()
        self._thread = threading.Thread(target=trio.run, args=(self._main,), daemon=True)
        self._thread.name = "fleet-table"
        self._thread.start()
        self._started.wait()

    def play_match(
        self,
        match: Match,
        run: MatchRun,
        db: FleetStore,
        *,
        stopping: threading.Event | None = None,
        poll_interval: float = POLL_INTERVAL,
        since: float | None = None,
    ) -> MatchEnd:
        """`play_match` on the kept table (opened now if there is none). `setup_ms` gets
        the ms from `since` (a `time.perf_counter()`, default: now) until the match could
        start playing."""

        async def play(table: LeagueTable, admin: ClientSession) -> MatchEnd:
            self.setup_ms.append((time.perf_counter() - queued) * 1000)
            return await play_match(
                self.config,
                match,
                run,
                db,
                self.log_dir,
                stopping=stopping,
                poll_interval=poll_interval,
                table=(table, admin),
            )

        if self._thread is None or not self._thread.is_alive():
            self._start()  # the first match, or the thread ended (a KeyboardInterrupt in it)
        assert self._token is not None and self._send is not None
        job = _Job(play)
        queued = time.perf_counter() if since is None else since
        trio.from_thread.run(self._send.send, job, trio_token=self._token)
        job.done.wait()
        if job.error is not None:
            raise job.error
        result: MatchEnd = job.result
        return result

    def close(self) -> None:
        """Close the table (if open) and end its thread."""
        if self._thread is None:
            return
        assert self._token is not None and self._send is not None
        if self._thread.is_alive():
            trio.from_thread.run(self._send.send, None, trio_token=self._token)
        self._thread.join()
        self._thread = None

    async def _main(self) -> None:
        send, receive = trio.open_memory_channel[_Job | None](0)
        self._token, self._send = trio.lowlevel.current_trio_token(), send
        self._started.set()
        job = await receive.receive()
        while job is not None:  # None: close
            try:
                async with (
                    open_table(
                        self.config, mode=default_mode(self.config), log_dir=self.log_dir
                    ) as table,
                    admin_session(table.server) as admin,
                ):
                    self.opened += 1
                    while job is not None and not await self._run(job, table, admin):
                        job = await receive.receive()
            except Exception as error:  # opening (or closing) the table failed
                if job is not None and not job.done.is_set():
                    job.error = error
                    job.done.set()
                else:
                    log.warning("closing the table failed", error=str(error))
            if job is not None:  # it failed: a fresh table for the next match
                job = await receive.receive()

    @staticmethod
    async def _run(job: _Job, table: LeagueTable, admin: ClientSession) -> bool:
        """Run one job on the table, its outcome handed to its caller; True if the table
        must be closed."""
        try:
            job.result = await job.play(table, admin)
        except BaseException as error:
            job.error = error
            if not isinstance(error, Exception):
                raise
        finally:
            job.done.set()
        # A match that did not end done (cancelled, superseded, stopping) may have left a
        # room or a game behind on the table: it is closed, too.
        return job.error is not None or admin.closed or job.result is not MatchEnd.DONE
