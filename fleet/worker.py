"""`piranhas-league worker`: one process that plays one match at a time from the queue, and
analyses one game at a time when the queue holds analysis jobs (`fleet.analyses`).

One Dramatiq `Worker` with one thread in this process (no forked children: the process that
plays is the process a supervisor watches and a signal reaches). Each message is a match id;
the match is played by `fleet.match.play_match` on the worker's one table
(`fleet.match.TableHost`: opened at the first match, kept for the next ones).

Health is true: before it says `ready` the worker has reached Redis (PING with its password)
and the store, and checked that its league file is the league in the store (the fingerprint,
`fleet.preflight`); any of these failing ends it at once with status 2 and one line on stderr.
Later outages (Redis or PostgreSQL unreachable, back again) are reported on stderr too, where a
supervisor, `docker logs` or journald shows them; the details go to `<log-dir>/worker.log`.

- SIGTERM/SIGINT: the running match stops (its bots are stopped, its games given back), the
  match is sent to the queue again, then the process exits 0.
- SIGKILL, a power cut: Dramatiq re-delivers the match to another worker once this worker's
  heartbeat is missing for `HEARTBEAT_TIMEOUT_MS`; the new attempt fences off this one.
- A match that cannot be played raises: Dramatiq retries it (`MAX_RETRIES`), then it goes to the
  dead-letter set and is marked failed in the store.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import structlog

from analysis import AnalysisError
from analysis.annotate import AnnotationError
from analysis.sources import SourceError
from fleet import preflight
from fleet.analyses import Analyses, JobKey, analyse_record, record_name
from fleet.match import FleetStore, MatchEnd, TableHost
from fleet.queue import (
    MAX_RETRIES,
    ShutdownFlag,
    declare_analysis_actor,
    declare_match_actor,
    make_broker,
    retries_of_current_message,
    send_first,
)
from launching import MatchError
from league.config import LeagueConfig
from league.run import LeagueRunError
from league.schedule import Match
from server.exits import find_exception

__all__ = ["WorkerSetup", "default_worker_name", "run_worker"]

log = structlog.get_logger("fleet.worker")

SHUTDOWN_TIMEOUT_MS = 60_000
IDLE_FETCH_MS = 250
WAIT_FOR_LEAGUE_S = 2.0


class _GiveBack(Exception):
    """The worker is stopping: the analysis being made is given back to the queue."""


def say(line: str) -> None:
    """One line on stderr (what a supervisor or `docker logs` shows)."""
    print(line, file=sys.stderr, flush=True)


def default_worker_name() -> str:
    """host:pid, what `status` shows as the match's worker."""
    return f"{socket.gethostname()}:{os.getpid()}"


@dataclass
class WorkerSetup:
    """What a worker needs besides the message."""

    config: LeagueConfig
    matches: dict[int, Match]
    database: str
    redis_url: str
    log_dir: Path
    name: str
    poll_interval: float = 1.0


def _stderr_for_warnings() -> None:
    """Dramatiq's warnings and errors (Redis unreachable, a message that failed) also on
    stderr (the root handler, configure_logging's, writes to worker.log only)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("piranhas-league: %(name)s: %(message)s"))
    logging.getLogger("dramatiq").addHandler(handler)


def _wait_for_league(setup: WorkerSetup, db: FleetStore, stop: threading.Event) -> str | None:
    """Check the league's fingerprint in the store, waiting while the coordinator has not
    created the league yet; the league's queue name, None when stopped while waiting."""
    told = False
    while (
        queue := db.call_sync(preflight.check_fingerprint, setup.config, db.store.backend)
    ) is None:
        if not told:
            say("waiting for the coordinator to create the league in the store (distribute)")
            told = True
        if stop.wait(WAIT_FOR_LEAGUE_S):
            return None
    return queue


def run_worker(setup: WorkerSetup, *, ready: threading.Event | None = None) -> int:
    """Consume matches until SIGTERM or SIGINT (main thread only). Returns the exit status.
    Raises FleetError or StoreError when a server cannot be reached or refuses the login,
    LeagueMismatchError when the store holds another league."""
    import dramatiq

    from server.logs import configure_logging

    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    preflight.check_redis(setup.redis_url)
    db = FleetStore(setup.database)  # StoreError at once when PostgreSQL cannot be used
    try:
        queue = _wait_for_league(setup, db, stop)
        if queue is None:
            return 0
    except BaseException:
        db.close()
        raise
    setup.log_dir.mkdir(parents=True, exist_ok=True)
    # The worker's and Dramatiq's lines to worker.log (the table's game server logs every
    # move to its own server.log, runner.inprocess); stderr gets one line per match.
    log_file = (setup.log_dir / "worker.log").open("a", encoding="utf-8")
    configure_logging("console", "info", stream=log_file, cache=False)
    _stderr_for_warnings()
    shutdown = ShutdownFlag()
    broker = make_broker(setup.redis_url, shutdown=shutdown)
    # One table for every match of this worker (opened at the first): a match after the
    # first starts without a server start, launchers or image checks.
    host = TableHost(setup.config, setup.name, setup.log_dir)

    def play(match_id: int) -> None:
        began = time.perf_counter()
        match = setup.matches.get(match_id)
        if match is None:
            log.error("unknown match id, dropped", match=match_id)
            return
        if shutdown.event.is_set():
            # Stopping: no table is opened again; the match goes back to the front of the queue.
            send_first(broker, actor, match_id)
            return
        run = db.call_sync(db.runs.start, match_id, setup.name)
        if run is None:
            log.info("nothing to do", match=match_id)
            return
        say(f"match {match_id}: attempt {run.attempt}, {len(run.claims)} games to play")
        try:
            end = host.play_match(
                match,
                run,
                db,
                stopping=shutdown.event,
                poll_interval=setup.poll_interval,
                since=began,
            )
        except Exception as error:
            # A match that could not be played (a bot that does not start, a server that
            # went away); trio may wrap the cause in an exception group.
            cause = (
                find_exception(error, MatchError) or find_exception(error, LeagueRunError) or error
            )
            if retries_of_current_message() >= MAX_RETRIES:
                say(f"match {match_id}: failed for good: {cause}")
                db.call_sync(db.runs.fail, match_id, str(cause))
            else:
                say(f"match {match_id}: failed, to be retried: {cause}")
                db.call_sync(db.runs.requeue, run)
            raise
        # The set-up: from the message to the first game (the run started in the store, the
        # table opened at the first match only).
        setup_ms = host.setup_ms[-1] if host.setup_ms else float("nan")
        say(
            f"match {match_id}: attempt {run.attempt} ended: {end.value} (set-up {setup_ms:.1f} ms)"
        )
        if end is MatchEnd.STOPPING:
            # Given back in the store; a new message puts it at the front of the queue again
            # before this one is acknowledged (at worst a duplicate delivery, fenced by the
            # attempts).
            send_first(broker, actor, match_id)

    analyses = Analyses(db.store.backend)

    def analyse(match_id: int, number: int, nodes: int | None, depth: int | None) -> None:
        key = JobKey(match_id, number, nodes, depth)
        name = f"analysis of match {match_id} game {number}"
        try:
            job = db.call_sync(analyses.start, key, setup.name)
        except KeyError:
            log.error("unknown analysis job, dropped", match=match_id, game=number)
            return
        if job is None:
            log.info("nothing to do", match=match_id, game=number)
            return
        say(f"{name}: attempt {job.attempt}")

        def progress(done: int, total: int) -> None:
            if shutdown.event.is_set():
                raise _GiveBack

        try:
            # In this thread, like a match; a stopping worker gives the job back at the next
            # position (a game can take minutes on a busy machine).
            annotated = analyse_record(
                job.record.encode(), record_name(match_id, number), key.settings, progress
            )
        except _GiveBack:
            say(f"{name}: given back (the worker is stopping)")
            if db.call_sync(analyses.requeue, job):
                send_first(broker, analysis_actor, match_id, number, nodes, depth)
            return
        except (AnalysisError, SourceError, AnnotationError) as error:
            # The record or the settings are wrong: a retry would fail the same way.
            say(f"{name}: failed: {error}")
            db.call_sync(analyses.fail, job, str(error))
            return
        except Exception as error:
            if retries_of_current_message() >= MAX_RETRIES:
                say(f"{name}: failed for good: {error}")
                db.call_sync(analyses.fail_for_good, key, str(error))
            else:
                say(f"{name}: failed, to be retried: {error}")
                db.call_sync(analyses.requeue, job)
            raise
        if db.call_sync(analyses.finish, job, annotated.decode()):
            say(f"{name}: attempt {job.attempt} done")
        else:
            say(f"{name}: attempt {job.attempt} superseded, nothing written")

    actor = declare_match_actor(broker, play, queue)
    analysis_actor = declare_analysis_actor(broker, analyse, queue)
    # worker_timeout: how long an idle consumer waits between fetches at most; after a match
    # the next one starts within it (Dramatiq's default is 1 s).
    worker = dramatiq.Worker(broker, worker_threads=1, worker_timeout=IDLE_FETCH_MS)
    worker.queue_prefetch = 1  # the environment's dramatiq_queue_prefetch, whatever it says
    worker.start()
    say(f"worker {setup.name} ready")
    if ready is not None:
        ready.set()
    try:
        # A timed wait: Python runs the signal handlers between the waits.
        while not stop.wait(0.5):
            pass
        say(f"worker {setup.name} stopping")
        # Inside out: the running match gives back at once (shutdown.event, which Dramatiq's
        # stop would set only later) and the table closes, its bots and its server stopped;
        # then Dramatiq stops consuming (a message it still hands over is put back, play).
        # The logging does not depend on this order: the table's server logs to server.log
        # only (tests/fleet/test_match.py).
        shutdown.event.set()
        host.close()
        worker.stop(timeout=SHUTDOWN_TIMEOUT_MS)
    finally:
        host.close()
        db.close()
        broker.close()
        log_file.close()
    say(f"worker {setup.name} stopped")
    return 0
