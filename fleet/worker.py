"""`piranhas-league worker`: one process that plays one match at a time from the queue.

One Dramatiq `Worker` with one thread in this process (no forked children: the process that
plays is the process a supervisor watches and a signal reaches). Each message is a match id;
the match is played by `fleet.match.play_match` under `trio.run` in the worker thread.

- SIGTERM/SIGINT: the running match stops (its bots are stopped, its games given back), the
  match is sent to the queue again, then the process exits 0.
- SIGKILL, a power cut: Dramatiq re-delivers the match to another worker once this worker's
  heartbeat is missing for `HEARTBEAT_TIMEOUT_MS`; the new attempt fences off this one.
- A match that cannot be played raises: Dramatiq retries it (`MAX_RETRIES`), then it goes to the
  dead-letter set and is marked failed in the store.
"""

from __future__ import annotations

import os
import signal
import socket
import threading
from dataclasses import dataclass
from pathlib import Path

import structlog
import trio

from league.config import LeagueConfig
from league.schedule import Match
from runner.options import MatchError

from fleet.match import MatchEnd, StoreThread, play_match
from fleet.queue import (
    MAX_RETRIES,
    ShutdownFlag,
    declare_match_actor,
    make_broker,
    retries_of_current_message,
)
from fleet.runs import Runs
from fleet.stores import open_store

__all__ = ["WorkerSetup", "default_worker_name", "run_worker"]

log = structlog.get_logger("fleet.worker")

SHUTDOWN_TIMEOUT_MS = 60_000


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


def run_worker(setup: WorkerSetup, *, ready: threading.Event | None = None) -> int:
    """Consume matches until SIGTERM or SIGINT (main thread only). Returns the exit status."""
    import dramatiq

    shutdown = ShutdownFlag()
    broker = make_broker(setup.redis_url, shutdown=shutdown)
    db = StoreThread(lambda: open_store(setup.database))

    def play(match_id: int) -> None:
        match = setup.matches.get(match_id)
        if match is None:
            log.error("unknown match id, dropped", match=match_id)
            return
        run = db.call_sync(lambda: db.runs.start(match_id, setup.name))
        if run is None:
            log.info("nothing to do", match=match_id)
            return
        log.info("match started", match=match_id, attempt=run.attempt, games=len(run.claims))
        try:
            end = trio.run(
                lambda: play_match(
                    setup.config,
                    match,
                    run,
                    db,
                    setup.log_dir,
                    stopping=shutdown.event,
                    poll_interval=setup.poll_interval,
                )
            )
        except MatchError as error:
            if retries_of_current_message() >= MAX_RETRIES:
                log.error("match failed for good", match=match_id, error=str(error))
                db.call_sync(lambda: db.runs.fail(match_id, str(error)))
            else:
                log.warning("match failed, will retry", match=match_id, error=str(error))
                db.call_sync(lambda: db.runs.requeue(run))
            raise
        log.info("match ended", match=match_id, attempt=run.attempt, end=end.value)
        if end is MatchEnd.STOPPING:
            # Given back in the store; a new message puts it in the queue again before this
            # one is acknowledged (at worst both are delivered: the second finds it done).
            actor.send(match_id)

    actor = declare_match_actor(broker, play)
    worker = dramatiq.Worker(broker, worker_threads=1)
    worker.queue_prefetch = 1  # the environment's dramatiq_queue_prefetch, whatever it says
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    worker.start()
    log.info("worker ready", name=setup.name)
    if ready is not None:
        ready.set()
    try:
        # A timed wait: Python runs the signal handlers between the waits.
        while not stop.wait(0.5):
            pass
        log.info("worker stopping", name=setup.name)
        worker.stop(timeout=SHUTDOWN_TIMEOUT_MS)
    finally:
        db.close()
        broker.close()
    return 0
