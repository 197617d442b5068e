"""The ladder's distributed mode (marker `distributed`: real Redis and PostgreSQL from the
Debian packages, tests/conftest.py): a worker consuming the ladder's Dramatiq queue, its
dispatcher scheduling the match and waking it, the store on PostgreSQL; bots as processes
(--no-docker) to keep it short. Two ladders on one Redis keep to their own queues; a worker
SIGKILLed mid-match has its match played again once by another."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from ladder.actors import queue_name, run_actor_worker
from ladder.store import LadderStore
from ladder.work import WorkSettings, replay_path
from tests.distributed.servers import PostgresServer
from tests.ladder.helpers import REPO, open_ladder, shell_bot

pytestmark = [pytest.mark.distributed, pytest.mark.timeout(180)]


def test_a_worker_on_the_queue_plays_what_its_dispatcher_schedules(
    tmp_path: Path, redis_url: str, postgres_dsn: str
) -> None:
    ladder = open_ladder(tmp_path, postgres_dsn)
    try:
        a = ladder.active("Queue A", shell_bot())
        b = ladder.active("Queue B", shell_bot())
    finally:
        ladder.store.close()
    stop = threading.Event()
    settings = WorkSettings(tmp_path, docker=False, worker="remote-1", poll_interval=0.1)
    status: list[int] = []
    worker = threading.Thread(
        target=lambda: status.append(
            run_actor_worker(postgres_dsn, redis_url, settings, stop=stop, dispatch_interval=0.3)
        )
    )
    worker.start()
    store = LadderStore.open(postgres_dsn)
    try:
        deadline = time.monotonic() + 120
        while not [m for m in store.matches() if m.status == "finished"]:
            assert time.monotonic() < deadline, "no match finished"
            assert worker.is_alive(), "the worker ended"
            time.sleep(0.3)
        stop.set()
        worker.join(90)
        assert not worker.is_alive() and status == [0]
        match = next(m for m in store.matches() if m.status == "finished")
        assert {match.version_a, match.version_b} == {a, b}
        assert [row.number for row in match.results] == [1, 2]
        assert replay_path(tmp_path, match.id, 1).is_file()
        attempts = store.attempts("match", match.id)
        assert attempts[0][1] == "remote-1"
    finally:
        stop.set()
        worker.join(90)
        store.close()


def _worker_thread(
    database: str, redis_url: str, settings: WorkSettings, stop: threading.Event, dispatch: bool
) -> threading.Thread:
    thread = threading.Thread(
        target=run_actor_worker,
        args=(database, redis_url, settings),
        kwargs={"dispatch": dispatch, "stop": stop, "dispatch_interval": 0.3},
    )
    thread.start()
    return thread


def test_two_ladders_on_one_redis_keep_to_their_own_queues(
    tmp_path: Path, redis_url: str, postgres_server: PostgresServer
) -> None:
    # Ladder A has a match to play; ladder B only an upload waiting for its check and a worker
    # without a dispatcher. On a shared queue, A's wake-up calls would make B's worker check it.
    data_a, data_b = tmp_path / "a", tmp_path / "b"
    data_a.mkdir()
    data_b.mkdir()
    dsn_a = postgres_server.create_database(f"ladder_{uuid.uuid4().hex[:12]}")
    dsn_b = postgres_server.create_database(f"ladder_{uuid.uuid4().hex[:12]}")
    ladder_a, ladder_b = open_ladder(data_a, dsn_a), open_ladder(data_b, dsn_b)
    try:
        ladder_a.active("A one", shell_bot())
        ladder_a.active("A two", shell_bot())
        waiting = ladder_b.upload(ladder_b.store.create_team("B waits"), shell_bot())
        queue_a, queue_b = queue_name(ladder_a.store), queue_name(ladder_b.store)
    finally:
        ladder_a.store.close()
        ladder_b.store.close()
    assert queue_a != queue_b
    assert all(q.startswith("piranhas-ladder.") for q in (queue_a, queue_b))

    stop = threading.Event()
    settings_a = WorkSettings(data_a, docker=False, worker="worker-a", poll_interval=0.1)
    settings_b = WorkSettings(data_b, docker=False, worker="worker-b", poll_interval=0.1)
    workers = [
        _worker_thread(dsn_a, redis_url, settings_a, stop, dispatch=True),
        _worker_thread(dsn_b, redis_url, settings_b, stop, dispatch=False),
    ]
    store_a, store_b = LadderStore.open(dsn_a), LadderStore.open(dsn_b)
    try:
        deadline = time.monotonic() + 120
        while not (finished := [m for m in store_a.matches() if m.status == "finished"]):
            assert time.monotonic() < deadline, "ladder A played nothing"
            assert all(worker.is_alive() for worker in workers), "a worker ended"
            time.sleep(0.3)
        time.sleep(1.0)  # a wake-up call that strayed onto B's queue would be taken by now
        assert {name for _, name, _ in store_a.attempts("match", finished[0].id)} == {"worker-a"}
        version = store_b.version(waiting)
        assert version is not None and version.state == "queued"
        assert store_b.attempts("check", waiting) == []
        assert store_b.matches() == []
    finally:
        stop.set()
        for worker in workers:
            worker.join(90)
        store_a.close()
        store_b.close()
    assert not any(worker.is_alive() for worker in workers)


# Waits before it joins: the match is surely mid-way when the test kills its worker.
SLOW_START = '#!/bin/sh\nsleep 2\nexec bash "$(dirname "$0")/bot.sh" "$@"\n'


def test_a_worker_killed_mid_match_on_the_queue_is_replayed_once(
    tmp_path: Path, redis_url: str, postgres_dsn: str
) -> None:
    ladder = open_ladder(tmp_path, postgres_dsn)
    try:
        ladder.active("Kill A", shell_bot(SLOW_START))
        ladder.active("Kill B", shell_bot(SLOW_START))
    finally:
        ladder.store.close()
    command = [sys.executable, "-m", "cli.ladder", "worker", "--data", str(tmp_path)]
    command += ["--database", postgres_dsn, "--redis", redis_url, "--no-docker"]
    command += ["--name", "doomed", "--lease", "3", "--heartbeat", "1"]
    doomed = subprocess.Popen(
        command,
        cwd=REPO,
        stdout=subprocess.DEVNULL,
    )
    store = LadderStore.open(postgres_dsn)
    stop = threading.Event()
    survivor: threading.Thread | None = None
    try:
        deadline = time.monotonic() + 60
        while not (running := [m for m in store.matches() if m.status == "running"]):
            assert time.monotonic() < deadline, "the doomed worker started nothing"
            assert doomed.poll() is None, "the doomed worker ended by itself"
            time.sleep(0.2)
        doomed.send_signal(signal.SIGKILL)
        doomed.wait()
        match_id = running[0].id
        first = store.match(match_id)
        assert first is not None and first.status == "running" and first.attempt == 1

        settings = WorkSettings(tmp_path, docker=False, worker="survivor", poll_interval=0.1)
        survivor = _worker_thread(postgres_dsn, redis_url, settings, stop, dispatch=True)
        deadline = time.monotonic() + 120
        while (match := store.match(match_id)) is None or match.status != "finished":
            assert time.monotonic() < deadline, "the dead worker's match was not replayed"
            assert survivor.is_alive(), "the survivor ended"
            time.sleep(0.3)
        assert match.attempt == 2
        assert [row.number for row in match.results] == [1, 2]
        attempts = store.attempts("match", match_id)
        assert [(number, name) for number, name, _ in attempts] == [(1, "doomed"), (2, "survivor")]
        assert attempts[1][2] == "finished" and attempts[0][2] != "finished"
    finally:
        if doomed.poll() is None:
            doomed.kill()
            doomed.wait()
        stop.set()
        if survivor is not None:
            survivor.join(90)
        store.close()


def test_processes_starting_together_on_a_new_database_all_open_the_store(
    postgres_dsn: str,
) -> None:
    # The deploy's site and worker do, on their first start; CREATE TABLE IF NOT EXISTS alone
    # then fails in one of them with a unique violation in PostgreSQL's catalogue.
    barrier = threading.Barrier(4)
    failures: list[BaseException] = []
    ids: list[str] = []

    def open_it() -> None:
        barrier.wait()
        try:
            store = LadderStore.open(postgres_dsn)
            ids.append(store.ladder_id())
            store.close()
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=open_it) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert failures == []
    assert len(ids) == 4 and len(set(ids)) == 1
