"""The ladder's workers (ladder.work's rules): `work_once` claims one job, check jobs first
(ladder.work.check_version), then a match (ladder.work_match); `run_workers` is the pool on one
machine — a scheduler and W workers, one in this trio run, more in child processes.
"""

from __future__ import annotations

import dataclasses
import math
import os
import signal
from collections.abc import Callable
from pathlib import Path

import structlog
import trio

from ladder.pairing import top_up
from ladder.store import LadderStore
from ladder.work import LadderDb, WorkSettings, check_version, private_directories
from ladder.work_match import ServerFailure, play_claimed_match
from league.asyncstore import StoreThread
from league.store import StaleAttemptError
from runner.game import ServerAddress

__all__ = [
    "MAX_MATCH_ATTEMPTS",
    "cancel_on_signal",
    "run_workers",
    "schedule_matches",
    "work_once",
]

log = structlog.get_logger("ladder.work")  # the same log as ladder.work's

MAX_MATCH_ATTEMPTS = 3  # a match unplayable for no bot's fault this often is given up


async def work_once(
    db: LadderDb, settings: WorkSettings, server: ServerAddress | None = None
) -> str | None:
    """Claim one job, check jobs first, and do it; what was done ("check 3", "match 7"), None
    when there was nothing to claim. A match that failed for no bot's fault (or lost to a
    newer attempt) is given back."""
    check_claim = await db.call(
        db.store.claim_check, settings.worker, lease_seconds=settings.lease_seconds
    )
    if check_claim is not None:
        await check_version(
            db,
            settings.data_dir,
            check_claim.version_id,
            docker=settings.docker,
            claim=check_claim,
            heartbeat_every=settings.heartbeat_every,
            lease_seconds=settings.lease_seconds,
        )
        return f"check {check_claim.version_id}"
    claim = await db.call(
        db.store.claim_match, settings.worker, lease_seconds=settings.lease_seconds
    )
    if claim is None:
        return None
    try:
        await play_claimed_match(db, claim, settings, server)
    except StaleAttemptError as error:
        log.warning("match taken over", match=claim.match_id, error=str(error))
        await db.call(db.store.abandon_match, claim)
        return f"match {claim.match_id} given back"
    except ServerFailure as error:
        attempts = await db.call(db.store.attempts, "match", claim.match_id)
        if len(attempts) >= MAX_MATCH_ATTEMPTS:
            # Unplayable for no bot's fault every time (an upload's file gone, an image that
            # does not build): claimed forever it would stall the ladder's oldest-first queue.
            await db.call(db.store.give_up_match, claim, str(error))
            log.error("match given up", match=claim.match_id, error=str(error))
            return f"match {claim.match_id} given up"
        log.warning("match given back", match=claim.match_id, error=str(error))
        await db.call(db.store.abandon_match, claim)
        return f"match {claim.match_id} given back"
    except BaseException:
        # Cancelled (shutdown) or an error of this machine: the match goes back.
        with trio.CancelScope(shield=True):
            await db.call(db.store.abandon_match, claim)
        raise
    return f"match {claim.match_id}"


def schedule_matches(store: LadderStore, workers: int) -> list[int]:
    """The scheduler's step (ladder.pairing.top_up: enough matches waiting that a worker
    that finishes claims the next at once); the new match ids. Synchronous: runs on the
    store's thread."""
    return top_up(store, workers=workers)


async def _scheduler(open_db: Callable[[], LadderDb], want: int, interval: float) -> None:
    db = open_db()
    try:
        while True:
            created = await db.call(schedule_matches, db.store, want)
            if created:
                log.info("matches scheduled", matches=created)
            await trio.sleep(interval)
    finally:
        db.close()


async def _worker(open_db: Callable[[], LadderDb], settings: WorkSettings) -> None:
    db = open_db()
    try:
        while True:
            try:
                done = await work_once(db, settings)
            except Exception as error:
                # This machine's trouble (Docker gone, disk full): say so, wait, go on.
                log.error("job failed", worker=settings.worker, error=repr(error))
                done = None
            if done is None:
                await trio.sleep(settings.poll_interval)
    finally:
        db.close()


async def run_workers(
    store_factory: Callable[[], LadderStore],
    data_dir: Path,
    *,
    workers: int,
    docker: bool,
    schedule: bool = True,
    schedule_interval: float = 2.0,
    settings: WorkSettings | None = None,
) -> None:
    """The pool until cancelled: a scheduler keeping enough matches pending for `workers`
    workers (`schedule=False`: another process schedules) and the workers, each claiming
    check jobs first, then matches. One worker runs in this trio run; more run in child
    processes of their own (`store_factory` must then be picklable, e.g. a
    functools.partial of LadderStore.open): a game server's move clock belongs to its
    process, so two servers never share one."""
    if workers < 1:
        raise ValueError("at least one worker")
    base = dataclasses.replace(settings or WorkSettings(data_dir), data_dir=data_dir, docker=docker)
    private_directories(data_dir)

    def open_db() -> LadderDb:
        return StoreThread(store_factory, name="ladder-store")

    async with trio.open_nursery() as nursery:
        if schedule:
            nursery.start_soon(_scheduler, open_db, workers, schedule_interval)
        if workers == 1:
            nursery.start_soon(
                _worker, open_db, dataclasses.replace(base, worker=f"{base.worker}:0")
            )
        else:
            for index in range(workers):
                worker = dataclasses.replace(base, worker=f"{base.worker}:{index}")
                nursery.start_soon(_child_worker, store_factory, worker)
        await trio.sleep(math.inf)


CHILD_RESTART_DELAY = 5.0  # s before a worker process that ended is started again
CHILD_STOP_WAIT = 30.0  # s for a stopping worker process to give its match back


async def _child_worker(store_factory: Callable[[], LadderStore], settings: WorkSettings) -> None:
    """One worker in a child process, started again when it ends; SIGTERM when cancelled (it
    gives its running match back), SIGKILL if it does not end in time."""
    import multiprocessing

    context = multiprocessing.get_context("spawn")  # nothing of this process's state
    while True:
        process = context.Process(
            target=_worker_process, args=(store_factory, settings), name=settings.worker
        )
        process.start()
        try:
            while process.is_alive():
                await trio.sleep(0.5)
        finally:
            if process.is_alive():
                with trio.CancelScope(shield=True):
                    process.terminate()
                    with trio.move_on_after(CHILD_STOP_WAIT):
                        while process.is_alive():
                            await trio.sleep(0.1)
                    if process.is_alive():
                        process.kill()
                    process.join()
        log.error("worker process ended", worker=settings.worker, status=process.exitcode)
        await trio.sleep(CHILD_RESTART_DELAY)


def _worker_process(store_factory: Callable[[], LadderStore], settings: WorkSettings) -> None:
    """A child process's body: one worker until SIGTERM, or until its parent is gone (a
    killed pool leaves no worker behind)."""
    parent = os.getppid()

    async def orphaned(scope: trio.CancelScope) -> None:
        while os.getppid() == parent:
            await trio.sleep(1.0)
        scope.cancel()

    async def main() -> None:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(cancel_on_signal, nursery.cancel_scope)
            nursery.start_soon(orphaned, nursery.cancel_scope)
            await _worker(lambda: StoreThread(store_factory, name="ladder-store"), settings)

    trio.run(main)


async def cancel_on_signal(scope: trio.CancelScope) -> None:
    """Cancel `scope` at the first SIGINT or SIGTERM (a worker's way to stop)."""
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
        async for _ in signals:
            scope.cancel()
            return
