"""The coordinator's side of a distributed league: create the schedule in the store (with the
league's fingerprint, which every other process checks), send one message per match (its id)
to the league's own queue, show live standings and the state of every match, cancel.

Sending is idempotent and repairs a lost queue: a match is sent when the store says it was
never sent, or when it is queued (or running with a stale heartbeat) but no message for it
is in Redis any more (Redis lost its data: no AOF, a new server, a FLUSHALL).

Analysis jobs (`piranhas-league analyze --distributed`) go the same way: `enqueue_analyses`
sends one job per recorded game not yet analysed with the settings, `wait_for_analyses` shows
the progress, `write_analyses` writes the annotated records.

Also `play_local`: the same matches played one after the other in this process, without a queue
(the one-machine way; SQLite by default), e.g. as the reference a distributed run must equal.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from analysis import Settings
from fleet import preflight
from fleet.analyses import Analyses, AnalysisProgress, AnalysisStatus, JobKey, record_name
from fleet.match import FleetStore, MatchEnd, TableHost
from fleet.queue import (
    HEARTBEAT_TIMEOUT_MS,
    analysis_keys_in_redis,
    declare_analysis_actor,
    declare_match_actor,
    make_broker,
    match_ids_in_redis,
)
from fleet.runs import RunState, RunStatus
from fleet.stores import open_store
from league.config import LeagueConfig
from league.postgres import retrying
from league.schedule import Match, build_schedule
from league.standings import Standings, compute_standings
from league.store import LeagueStore

__all__ = [
    "enqueue",
    "enqueue_analyses",
    "format_status",
    "initialize",
    "play_local",
    "queue_of",
    "standings",
    "wait_for_analyses",
    "wait_until_final",
    "write_analyses",
]


def _unused(match_id: int) -> None:  # pragma: no cover - the coordinator only sends
    raise RuntimeError("the coordinator does not play matches")


# A running match whose store heartbeat is older than this, and of which Redis holds no
# message, lost its worker and its message (Redis lost its data): it is sent again.
STALE_RUNNING_S = 3 * HEARTBEAT_TIMEOUT_MS / 1000


def initialize(config: LeagueConfig, database: str) -> tuple[Match, ...]:
    """Create (or check) the schedule, the league's fingerprint and the match runs in the
    store. Raises LeagueMismatchError when the store holds another league."""
    return _initialize(config, database)[0]


def _initialize(config: LeagueConfig, database: str) -> tuple[tuple[Match, ...], str]:
    """`initialize`, and the league's queue name."""
    matches = build_schedule(config)
    store, runs = open_store(database)
    try:

        def create() -> str:
            store.initialize(config, matches)
            queue = preflight.write_or_check_fingerprint(config, store.backend)
            runs.initialize(matches)
            return queue

        queue = retrying(create)
    finally:
        store.close()
    return matches, queue


def enqueue(
    config: LeagueConfig, database: str, redis_url: str, *, now: Callable[[], float] = time.time
) -> list[int]:
    """Send every match the queue should have and has not; the ids sent. Running it again
    sends nothing twice (the store remembers what was sent, Redis what it holds)."""
    _, queue = _initialize(config, database)
    broker = make_broker(redis_url)
    actor = declare_match_actor(broker, _unused, queue)
    store, runs = open_store(database)
    try:
        states = retrying(runs.states)
        waiting = {s.match_id for s in states if s.status is RunStatus.QUEUED}
        stale = {
            s.match_id
            for s in states
            if s.status is RunStatus.RUNNING and (s.heartbeat_at or 0) < now() - STALE_RUNNING_S
        }
        lost: set[int] = set()
        if waiting or stale:
            lost = (waiting | stale) - match_ids_in_redis(broker, actor.queue_name)
        new = [s.match_id for s in states if s.status is RunStatus.NEW and not s.cancel_requested]
        sent = sorted(lost) + new
        for match_id in sent:
            actor.send(match_id)
        # One transaction for all: a crash before it re-sends them next time (a duplicate
        # delivery, fenced by the attempts), never loses one.
        retrying(lambda: runs.mark_queued_all(new))
    finally:
        store.close()
        broker.close()
    return sent


def queue_of(config: LeagueConfig, database: str) -> str:
    """The league's queue name (the league must have been created)."""
    store, _ = open_store(database)
    try:
        queue = preflight.check_fingerprint(config, store.backend)
    finally:
        store.close()
    if queue is None:
        raise preflight.FleetError("the league was not created yet: run distribute")
    return queue


def standings(config: LeagueConfig, store: LeagueStore) -> Standings:
    """The table from the games recorded so far."""
    return compute_standings(config, build_schedule(config), store.finished_games())


def _when(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return datetime.fromtimestamp(seconds, UTC).strftime("%H:%M:%S")


def format_status(states: Iterable[RunState], now: float) -> str:
    """The `status` report: counts by state, then one line per running, failed or cancelled
    match (which worker, since when)."""
    states = list(states)
    counts = {status: 0 for status in RunStatus}
    for state in states:
        counts[state.status] += 1
    lines = [
        "  ".join(
            f"{status.value} {counts[status]}"
            for status in (
                RunStatus.NEW,
                RunStatus.QUEUED,
                RunStatus.RUNNING,
                RunStatus.DONE,
                RunStatus.FAILED,
                RunStatus.CANCELLED,
            )
        )
    ]
    for state in states:
        if state.status is RunStatus.RUNNING:
            since = state.started_at or now
            beat = (
                ""
                if state.heartbeat_at is None
                else f", last heartbeat {now - state.heartbeat_at:.0f} s ago"
            )
            cancelling = ", cancel requested" if state.cancel_requested else ""
            lines.append(
                f"match {state.match_id}: running on {state.worker} since {_when(since)} UTC "
                f"({now - since:.0f} s, attempt {state.attempt}{beat}){cancelling}"
            )
        elif state.status is RunStatus.FAILED:
            lines.append(f"match {state.match_id}: failed: {state.error}")
        elif state.status is RunStatus.CANCELLED:
            lines.append(f"match {state.match_id}: cancelled")
    return "\n".join(lines)


def format_standings(table: Standings) -> str:
    """A plain table: rank, team, match points, games W-D-L, Siegpunkte."""
    lines = [
        f"{table.league}: {table.matches_complete}/{table.matches_total} matches complete, "
        f"{table.games_recorded}/{table.games_total} games recorded"
    ]
    for row in table.rows:
        lines.append(
            f"{row.rank:>3}  {row.name:<24} {row.match_points:>4} pts  "
            f"{row.games_won}-{row.games_drawn}-{row.games_lost}  SP {row.siegpunkte}"
        )
    return "\n".join(lines)


def wait_until_final(
    config: LeagueConfig,
    database: str,
    *,
    out: TextIO | None = None,
    interval: float = 5.0,
    timeout: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[RunState]:
    """Print the standings and the match states every `interval` s (when `out` is given)
    until every match is done, failed or cancelled; the final states. Raises TimeoutError
    after `timeout` s."""
    store, runs = open_store(database)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        shown = None
        while True:
            states = retrying(runs.states)
            if out is not None:
                report = (
                    format_standings(retrying(lambda: standings(config, store)))
                    + "\n"
                    + format_status(states, time.time())
                )
                if report != shown:
                    print(report, file=out, flush=True)
                    shown = report
            if all(state.status.final for state in states):
                return states
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError("the league did not finish in time")
            sleep(interval)
    finally:
        store.close()


def play_local(
    config: LeagueConfig, database: str, log_dir: Path, *, worker: str = "local"
) -> dict[int, MatchEnd]:
    """Play every unfinished match here, one after the other, without a queue. The game
    server's log goes to `log_dir`/server.log."""
    matches = initialize(config, database)
    db = FleetStore(database)
    host = TableHost(config, worker, log_dir)  # one table for all, as a worker has
    ends = {}
    try:
        for match in matches:
            run = db.call_sync(db.runs.start, match.id, worker)
            if run is None:
                continue
            ends[match.id] = host.play_match(match, run, db)
    finally:
        host.close()
        db.close()
    return ends


# ---- analysis jobs (fleet.analyses): the second kind of work on the league's queue ----------


def _unused_analysis(
    match_id: int, number: int, nodes: int | None, depth: int | None
) -> None:  # pragma: no cover - the coordinator only sends
    raise RuntimeError("the coordinator does not analyse games")


def enqueue_analyses(
    config: LeagueConfig, database: str, redis_url: str, settings: Settings
) -> list[JobKey]:
    """Send an analysis job for every recorded game that has no finished analysis with
    `settings` and no message in the queue; the jobs sent. Running it again sends nothing
    twice (resumable: a done job is never sent again, a lost message is sent again)."""
    _, queue = _initialize(config, database)
    broker = make_broker(redis_url)
    actor = declare_analysis_actor(broker, _unused_analysis, queue)
    store, _ = open_store(database)
    analyses = Analyses(store.backend)
    try:
        retrying(analyses.initialize)
        retrying(lambda: analyses.request(settings))
        statuses = retrying(lambda: analyses.statuses(settings))
        waiting = {
            key
            for key, status in statuses.items()
            if status in (AnalysisStatus.QUEUED, AnalysisStatus.RUNNING)
        }
        lost: set[JobKey] = set()
        if waiting:
            held = analysis_keys_in_redis(broker, actor.queue_name)
            lost = {key for key in waiting if key.as_args() not in held}
        new = [key for key, status in statuses.items() if status is AnalysisStatus.NEW]
        sent = sorted(lost, key=lambda key: key.as_args()[:2]) + new
        for key in sent:
            actor.send(*key.as_args())
        retrying(lambda: analyses.mark_queued_all(new))
    finally:
        store.close()
        broker.close()
    return sent


def wait_for_analyses(
    database: str,
    settings: Settings,
    *,
    out: TextIO | None = None,
    interval: float = 5.0,
    timeout: float | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> AnalysisProgress:
    """Print `N/M games analysed` on every change (when `out` is given) until every job of
    `settings` is done or failed; the final counts. Raises TimeoutError after `timeout` s."""
    store, _ = open_store(database)
    analyses = Analyses(store.backend)
    deadline = None if timeout is None else time.monotonic() + timeout
    try:
        shown = None
        while True:
            progress = retrying(lambda: analyses.progress(settings))
            report = (
                f"{progress.done}/{progress.total} games analysed, {progress.running} running, "
                f"{progress.failed} failed"
            )
            if out is not None and report != shown:
                print(report, file=out, flush=True)
                shown = report
            if progress.final:
                return progress
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError("the analysis did not finish in time")
            sleep(interval)
    finally:
        store.close()


def write_analyses(
    database: str, settings: Settings, records_dir: Path, *, out: TextIO | None = None
) -> tuple[int, int]:
    """Write every finished job's annotated record into `records_dir` (atomically, under the
    one-machine league's file names); (written, failed)."""
    store, _ = open_store(database)
    try:
        results = retrying(lambda: Analyses(store.backend).results(settings))
    finally:
        store.close()
    records_dir.mkdir(parents=True, exist_ok=True)
    written = failed = 0
    for key, annotated, error in results:
        name = record_name(key.match_id, key.number)
        if annotated is None:
            failed += 1
            if out is not None:
                print(f"{name}: failed: {error}", file=out)
            continue
        temporary = records_dir / f"{name}.tmp"
        temporary.write_bytes(annotated.encode())
        temporary.replace(records_dir / name)
        written += 1
    return written, failed
