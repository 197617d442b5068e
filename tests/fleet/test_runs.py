"""Match runs on both backends: a new delivery fences off the older attempt, cancel flags,
requeue on shutdown, failure, and the status report. SQLite always; PostgreSQL with
`-m distributed` (a real server, tests/conftest.py)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from fleet.coordinator import format_status
from fleet.match import FleetStore
from fleet.queue import HEARTBEAT_TIMEOUT_MS
from fleet.runs import Runs, RunStatus
from fleet.stores import open_store
from league.config import LeagueConfig, parse_league
from league.schedule import build_schedule
from league.store import GameOutcome, LeagueStore, RecordStatus, StaleAttemptError

WIN = GameOutcome((2, 0), (7, 4), "a", True, "A hat den größeren zusammenhängenden Schwarm")


class Clock:
    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def league() -> LeagueConfig:
    teams = "".join(f'[[teams]]\nid = "{t}"\ncommand = "bot"\n' for t in "abc")
    return parse_league(f'name = "Runs"\ngames_per_match = 2\nseed = 4\n{teams}')


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.distributed)])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """The same tests on an SQLite file and on a PostgreSQL database."""
    if request.param == "sqlite":
        return str(tmp_path / "league.sqlite")
    dsn: str = request.getfixturevalue("postgres_dsn")
    return dsn


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def stores(database: str, league: LeagueConfig, clock: Clock) -> Iterator[tuple[LeagueStore, Runs]]:
    store, _ = open_store(database)
    store = LeagueStore(store.backend, clock=clock)
    runs = Runs(store.backend, clock=clock)
    matches = build_schedule(league)
    store.initialize(league, matches)
    runs.initialize(matches)
    yield store, runs
    store.close()


def test_every_match_is_new_until_sent_and_sent_once(stores: tuple[LeagueStore, Runs]) -> None:
    _, runs = stores
    assert runs.to_enqueue() == [1, 2, 3]
    runs.mark_queued(1)
    assert [s.status for s in runs.states()] == [RunStatus.QUEUED, RunStatus.NEW, RunStatus.NEW]


def test_a_new_delivery_fences_off_the_older_attempt(stores: tuple[LeagueStore, Runs]) -> None:
    store, runs = stores
    first = runs.start(1, "w1")
    assert first is not None and first.attempt == 1
    assert [(c.number, c.attempt) for c in first.claims] == [(1, 1), (2, 1)]
    assert store.record(1, 1, first.claims[0].attempt, WIN) is RecordStatus.RECORDED
    # The worker is presumed dead; the message comes again: only the unfinished game is left.
    second = runs.start(1, "w2")
    assert second is not None and second.attempt == 2
    assert [(c.number, c.attempt) for c in second.claims] == [(2, 2)]
    with pytest.raises(StaleAttemptError):
        runs.heartbeat(first)
    with pytest.raises(StaleAttemptError):  # the late game result of the old attempt
        store.record(1, 2, first.claims[1].attempt, WIN)
    assert not runs.finish(first, RunStatus.DONE)
    assert store.record(1, 2, second.claims[0].attempt, WIN) is RecordStatus.RECORDED
    assert runs.finish(second, RunStatus.DONE)
    assert runs.start(1, "w3") is None  # done: a duplicate message does nothing
    assert [a[2] for a in store.attempts(1, 2)] == ["expired", "finished"]
    assert [(g.game.number, g.attempt) for g in store.finished_games()] == [(1, 1), (2, 2)]


def test_cancel_a_queued_match_at_once_and_a_running_one_at_its_next_heartbeat(
    stores: tuple[LeagueStore, Runs],
) -> None:
    store, runs = stores
    for match_id in (1, 2, 3):
        runs.mark_queued(match_id)
    running = runs.start(2, "w1")
    assert running is not None
    assert runs.heartbeat(running) is False
    assert runs.cancel([1, 2]) == 2
    states = {s.match_id: s for s in runs.states()}
    assert states[1].status is RunStatus.CANCELLED
    assert states[2].status is RunStatus.RUNNING and states[2].cancel_requested
    assert runs.start(1, "w2") is None  # its message arrives later: nothing to play
    assert runs.heartbeat(running) is True
    assert runs.finish(running, RunStatus.CANCELLED)
    assert store.progress().running == 0  # its games were given back
    assert runs.cancel(None) == 1  # the whole league: only match 3 was not final
    assert {s.status for s in runs.states()} == {RunStatus.CANCELLED}
    assert runs.cancel(None) == 0


def test_requeue_on_shutdown_and_failure_after_the_last_retry(
    stores: tuple[LeagueStore, Runs],
) -> None:
    store, runs = stores
    run = runs.start(3, "w1")
    assert run is not None
    assert runs.requeue(run)
    assert runs.states()[2].status is RunStatus.QUEUED
    assert store.progress().running == 0
    assert not runs.requeue(run)  # only the current attempt can give the match back
    again = runs.start(3, "w2")
    assert again is not None and again.attempt == 2
    runs.fail(3, "cannot start t3")
    state = runs.states()[2]
    assert (state.status, state.error) == (RunStatus.FAILED, "cannot start t3")
    assert runs.start(3, "w3") is None
    assert not runs.finish(again, RunStatus.DONE)  # failed stays failed


def test_status_shows_the_worker_and_since_when(
    stores: tuple[LeagueStore, Runs], clock: Clock
) -> None:
    _, runs = stores
    runs.mark_queued(1)
    runs.mark_queued(2)
    run = runs.start(2, "host-b:4711")
    assert run is not None
    runs.fail(3, "bot t3 does not start")
    clock.now += 75
    report = format_status(runs.states(), clock.now)
    lines = report.splitlines()
    assert lines[0] == "new 0  queued 1  running 1  done 0  failed 1  cancelled 0"
    assert lines[1] == (
        "match 2: running on host-b:4711 since 08:00:00 UTC (75 s, attempt 1, "
        "last heartbeat 75 s ago)"
    )
    assert lines[2] == "match 3: failed: bot t3 does not start"


@pytest.mark.distributed
def test_a_worker_frozen_in_a_transaction_does_not_block_the_next_attempt(
    postgres_dsn: str, league: LeagueConfig, capsys: pytest.CaptureFixture[str]
) -> None:
    """A worker stopped (SIGSTOP, a paused VM) between two statements of a transaction keeps
    its match's row locked: the worker that takes the match over once the frozen one is
    presumed dead must not wait until it resumes. PostgreSQL ends the frozen transaction after
    the queue's heartbeat timeout; the resumed worker then finds its attempt superseded."""
    store, runs = open_store(postgres_dsn)
    matches = build_schedule(league)
    store.initialize(league, matches)
    runs.initialize(matches)
    store.close()
    frozen, taker = FleetStore(postgres_dsn), FleetStore(postgres_dsn)
    pool = ThreadPoolExecutor(max_workers=2)
    inside, resume = threading.Event(), threading.Event()
    try:
        run = frozen.call_sync(frozen.runs.start, 1, "w1")
        assert run is not None

        def heartbeat_frozen_midway() -> bool:
            # The heartbeat's first statement, then the process stops before the next one.
            with frozen.store.backend.transaction() as tx:
                tx.execute(
                    "UPDATE fleet_runs SET heartbeat_at = 0 WHERE match_id = ? AND attempt = ?",
                    (run.match_id, run.attempt),
                )
                inside.set()
                resume.wait()
                tx.query("SELECT 1")
            return frozen.runs.heartbeat(run)

        late = pool.submit(frozen.call_sync, heartbeat_frozen_midway)
        assert inside.wait(10)
        began = time.monotonic()
        second = pool.submit(taker.call_sync, taker.runs.start, 1, "w2")
        try:
            # Without the server's timeout this waits until the frozen worker resumes.
            took_over = second.result(HEARTBEAT_TIMEOUT_MS / 1000 + 10)
        finally:
            resume.set()
        assert took_over is not None and took_over.attempt == 2
        assert time.monotonic() - began < HEARTBEAT_TIMEOUT_MS / 1000 + 5
        # The resumed worker's transaction was rolled back; repeated, it is fenced off.
        with pytest.raises(StaleAttemptError):
            late.result(30)
        # ... and it said so, not that the database was unreachable.
        err = capsys.readouterr().err
        assert "ended this process's transaction" in err
        assert "unreachable" not in err
    finally:
        resume.set()
        pool.shutdown()
        frozen.close()
        taker.close()
