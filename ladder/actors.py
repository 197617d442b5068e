"""Distributed mode: the ladder's work as a Dramatiq actor on Redis, with fleet's broker settings
(`fleet.queue.make_broker`: re-deliveries first, timeouts on every Redis call, a dead worker's
message re-delivered within seconds, prefetch 1), the store on PostgreSQL.

- One queue per ladder, `queue_name(store)`: `piranhas-ladder.` and 16 hex digits of the
  ladder's identity (a random id the store makes once, `LadderStore.ladder_id`). Two ladders on
  one Redis never wake or feed each other, and a league's queues (`piranhas.<fingerprint>`)
  are apart too; every process of one ladder reads the same id from the same store.
- A message is a wake-up call, not the job: the actor's body is `ladder.work_pool.work_once` (claim
  a check first, else a match, under a new attempt in the store, and do it) — the same body as
  the in-process pool's. The store decides who does what and fences every write, so a
  duplicate message finds nothing to claim, and a lost one costs only the time until the
  dispatcher sends another.
- The dispatcher (`Dispatcher`, in a worker process started without --no-schedule) keeps
  matches pending as the in-process scheduler does (`ladder.work_pool.schedule_matches`) and tops
  the queue up to the number of jobs waiting (checks queued, matches unfinished).
- A worker killed mid-match: Dramatiq re-delivers its message; the store hands the match out
  again once the dead attempt's lease ran out, and the newer attempt fences the old one off.
- SIGTERM/SIGINT: the running job is cancelled (a match is given back), then the worker exits.

The data directory (uploads in; cards, replays, logs out) must be the same folder for the site
and every worker (a shared volume), as the database is the same store.
"""

from __future__ import annotations

import hashlib
import secrets
import signal
import sys
import threading

import dramatiq
import trio

from fleet.queue import (
    MatchBroker,
    ShutdownFlag,
    declare_match_actor,
    make_broker,
    match_ids_in_redis,
)
from ladder.store import LadderStore
from ladder.work import LadderDb, WorkSettings, private_directories
from ladder.work_pool import schedule_matches, work_once
from league.asyncstore import StoreThread

__all__ = ["QUEUE_PREFIX", "Dispatcher", "jobs_waiting", "queue_name", "run_actor_worker"]

QUEUE_PREFIX = "piranhas-ladder."
DISPATCH_EVERY = 2.0  # seconds
IDLE_FETCH_MS = 250
SHUTDOWN_TIMEOUT_MS = 60_000
STOP_POLL = 0.5


def say(line: str) -> None:
    """One line on stderr (what a supervisor or `docker logs` shows)."""
    print(line, file=sys.stderr, flush=True)


def queue_name(store: LadderStore) -> str:
    """The ladder's Dramatiq queue: named by its identity, so ladders sharing a Redis stay apart
    (hashed: the id itself never leaves the store)."""
    return QUEUE_PREFIX + hashlib.sha256(store.ladder_id().encode()).hexdigest()[:16]


def jobs_waiting(store: LadderStore) -> int:
    """Checks queued plus matches not finished: how many wake-up calls the queue should hold."""
    checks = sum(
        version.state == "queued" for team in store.teams() for version in store.versions(team.id)
    )
    return checks + store.pending_matches()


class Dispatcher:
    """Keeps `want` matches pending and one message in the queue per job waiting, every
    `interval` seconds, on a thread of its own (its own store connection)."""

    def __init__(
        self,
        database: str,
        broker: MatchBroker,
        actor: dramatiq.Actor[[int], None],
        want: int,
        queue: str,
    ) -> None:
        self.database = database
        self.queue = queue
        self.broker = broker
        self.actor = actor
        self.want = want

    def once(self, store: LadderStore) -> int:
        """One round; how many messages it sent."""
        schedule_matches(store, self.want)
        queued = len(match_ids_in_redis(self.broker, self.queue))
        missing = jobs_waiting(store) - queued
        for _ in range(max(0, missing)):
            # Distinct arguments: the queue's contents are counted by them.
            self.actor.send(secrets.randbelow(1 << 62))
        return max(0, missing)

    def run(self, stop: threading.Event, interval: float = DISPATCH_EVERY) -> None:
        """Rounds until `stop` is set; a round that fails (Redis or the database away for a
        moment) is reported and tried again."""
        store = LadderStore.open(self.database)
        try:
            while not stop.is_set():
                try:
                    self.once(store)
                except Exception as error:
                    say(f"piranhas-ladder: dispatcher: {error}")
                stop.wait(interval)
        finally:
            store.close()


def run_actor_worker(
    database: str,
    redis_url: str,
    settings: WorkSettings,
    *,
    dispatch: bool = True,
    pending: int = 1,
    stop: threading.Event | None = None,
    dispatch_interval: float = DISPATCH_EVERY,
) -> int:
    """Consume the ladder's queue until SIGTERM/SIGINT (or `stop`, for callers not on the main
    thread); with `dispatch`, also run the dispatcher, keeping `pending` matches waiting. The
    exit status. Raises FleetError when Redis does not answer."""
    from fleet import preflight

    stop = stop or threading.Event()
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGTERM, signal.SIGINT):
            signal.signal(signum, lambda *_: stop.set())
    preflight.check_redis(redis_url)
    private_directories(settings.data_dir)
    shutdown = ShutdownFlag()
    broker = make_broker(redis_url, shutdown=shutdown)
    store = LadderStore.open(database)
    try:
        queue = queue_name(store)
    finally:
        store.close()
    db: LadderDb = StoreThread(lambda: LadderStore.open(database), name="ladder-store")

    def play(_wake_up: int) -> None:
        done = trio.run(_work_until_shutdown, db, settings, shutdown.event)
        if done is not None:
            say(f"worker {settings.worker}: {done}")

    actor = declare_match_actor(broker, play, queue)
    worker = dramatiq.Worker(broker, worker_threads=1, worker_timeout=IDLE_FETCH_MS)
    worker.queue_prefetch = 1
    worker.start()
    dispatcher = None
    if dispatch:
        dispatcher = threading.Thread(
            target=Dispatcher(database, broker, actor, want=pending, queue=queue).run,
            args=(stop, dispatch_interval),
            name="ladder-dispatcher",
            daemon=True,
        )
        dispatcher.start()
    say(f"worker {settings.worker} ready (queue {queue})")
    try:
        while not stop.wait(STOP_POLL):
            pass
        say(f"worker {settings.worker} stopping")
        worker.stop(timeout=SHUTDOWN_TIMEOUT_MS)
        if dispatcher is not None:
            dispatcher.join()
    finally:
        db.close()
        broker.close()
    return 0


async def _work_until_shutdown(
    db: LadderDb, settings: WorkSettings, shutdown: threading.Event
) -> str | None:
    """`work_once`, cancelled when the worker starts shutting down (the job is given back)."""
    result: str | None = None
    async with trio.open_nursery() as nursery:

        async def watch() -> None:
            while not shutdown.is_set():
                await trio.sleep(STOP_POLL)
            nursery.cancel_scope.cancel()

        async def work() -> None:
            nonlocal result
            result = await work_once(db, settings)
            nursery.cancel_scope.cancel()

        nursery.start_soon(watch)
        nursery.start_soon(work)
    return result
