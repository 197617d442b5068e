"""The ladder's distributed mode (marker `distributed`: real Redis and PostgreSQL from the
Debian packages, tests/conftest.py): a worker consuming the ladder's Dramatiq queue, its
dispatcher scheduling the match and waking it, the store on PostgreSQL; bots as processes
(--no-docker) to keep it short."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from ladder.actors import run_actor_worker
from ladder.store import LadderStore
from ladder.work import WorkSettings, replay_path
from tests.ladder.helpers import open_ladder, shell_bot

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
