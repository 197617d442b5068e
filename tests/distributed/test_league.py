"""A league on three worker processes with a real Redis and PostgreSQL, faults injected while it
runs. After each fault: every scheduled game has exactly one result, and the standings (and every
game's outcome) equal those of the same league played on one machine without a queue.

Bots are deterministic (seeded, on seeded boards): a game played again gives the same result, so
a re-run match changes nothing but its attempt number.
"""

from __future__ import annotations

import io
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis

from fleet import coordinator
from fleet.runs import RunState, RunStatus
from fleet.stores import open_store
from league.config import LeagueConfig, load_league
from league.schedule import build_schedule

from .conftest import Outcomes, StartWorker, WorkerProcess, league_text, outcomes
from .servers import PostgresServer, RedisServer

pytestmark = [pytest.mark.distributed, pytest.mark.timeout(240)]

DELAY = 0.04  # seconds per move: a match lasts a few seconds, long enough to hit
RECOVERY_LIMIT = 60.0  # a killed worker's match runs again within this (issue 13)


class League:
    """A distributed league under test: its file, database, queue and workers."""

    def __init__(
        self, folder: Path, database: str, redis_url: str, start_worker: StartWorker, text: str
    ) -> None:
        self.file = folder / "league.toml"
        self.file.write_text(text)
        self.config: LeagueConfig = load_league(self.file)
        self.database = database
        self.redis_url = redis_url
        self._start_worker = start_worker
        self.workers: list[WorkerProcess] = []
        self.store, self.runs = open_store(database)
        coordinator.initialize(self.config, database)

    def enqueue(self) -> list[int]:
        return coordinator.enqueue(self.config, self.database, self.redis_url)

    def start_workers(self, count: int) -> None:
        for _ in range(count):
            name = f"w{len(self.workers) + 1}"
            self.workers.append(self._start_worker(self.file, self.database, self.redis_url, name))

    def states(self) -> dict[int, RunState]:
        return {state.match_id: state for state in self.runs.states()}

    def wait(self, condition: Callable[[dict[int, RunState]], bool], timeout: float) -> float:
        """Wait until `condition(states)`; the seconds it took."""
        started = time.monotonic()
        while not condition(self.states()):
            if time.monotonic() - started > timeout:
                raise AssertionError(f"timed out; states: {self.states()}")
            time.sleep(0.05)
        return time.monotonic() - started

    def running_match(self, timeout: float = 30.0) -> RunState:
        """The first match seen running, after its first game has been recorded (mid-match)."""
        found: list[RunState] = []

        def mid_match(states: dict[int, RunState]) -> bool:
            recorded = {game.game.match_id for game in self.store.finished_games()}
            found[:] = [
                s
                for s in states.values()
                if s.status is RunStatus.RUNNING and s.match_id in recorded
            ] or [s for s in states.values() if s.status is RunStatus.RUNNING]
            return bool(found)

        self.wait(mid_match, timeout)
        return found[0]

    def worker(self, name: str | None) -> WorkerProcess:
        return next(worker for worker in self.workers if worker.name == name)

    def wait_final(self, timeout: float = 120.0) -> dict[int, RunState]:
        self.wait(lambda states: all(s.status.final for s in states.values()), timeout)
        return self.states()

    def close(self) -> None:
        self.store.close()


@pytest.fixture
def make_league(
    tmp_path: Path, postgres_dsn: str, redis_url: str, start_worker: StartWorker
) -> Iterator[Callable[..., League]]:
    leagues: list[League] = []

    def make(**kwargs: object) -> League:
        text = league_text(delay=DELAY, **kwargs)  # type: ignore[arg-type]
        league = League(tmp_path, postgres_dsn, redis_url, start_worker, text)
        leagues.append(league)
        return league

    yield make
    for league in leagues:
        league.close()


def assert_equals_one_machine(
    league: League, reference: tuple[Outcomes, dict[str, object]]
) -> None:
    """Every match done, every game recorded exactly once, the same outcomes and table."""
    states = league.wait_final()
    assert {s.status for s in states.values()} == {RunStatus.DONE}, states
    expected_outcomes, expected_table = reference
    assert outcomes(league.store) == expected_outcomes
    # The results table's key is (match, game): one row each; every scheduled game has one.
    progress = league.store.progress()
    assert (progress.finished, progress.total) == (len(expected_outcomes), len(expected_outcomes))
    assert coordinator.standings(league.config, league.store).to_dict() == expected_table


def test_a_league_on_three_workers_equals_the_same_league_on_one_machine(
    make_league: Callable[..., League], reference: tuple[Outcomes, dict[str, object]]
) -> None:
    league = make_league()
    assert league.enqueue() == [1, 2, 3]
    assert league.enqueue() == []  # sent once: the store remembers
    assert {s.status for s in league.states().values()} == {RunStatus.QUEUED}
    league.start_workers(3)
    running = league.running_match()
    assert running.worker in {"w1", "w2", "w3"}
    assert running.started_at is not None and running.started_at <= time.time()
    report = coordinator.format_status(league.runs.states(), time.time())
    assert f"match {running.match_id}: running on {running.worker} since" in report
    # Live standings while the workers run, as `distribute` prints them: every change, from a
    # partial table to the complete one.
    live = io.StringIO()
    coordinator.wait_until_final(league.config, league.database, out=live, interval=0.1)
    tables = [line for line in live.getvalue().splitlines() if line.startswith("Distributed: ")]
    assert tables[-1] == "Distributed: 3/3 matches complete, 6/6 games recorded"
    assert any(" 0/3 matches complete" in t or " 1/3 matches complete" in t for t in tables)
    assert_equals_one_machine(league, reference)
    # Each match was played by one worker, once (no fault: attempt 1 everywhere).
    assert {s.attempt for s in league.states().values()} == {1}


def test_a_killed_worker_s_match_is_played_again_within_a_minute(
    make_league: Callable[..., League], reference: tuple[Outcomes, dict[str, object]]
) -> None:
    league = make_league()
    league.enqueue()
    league.start_workers(3)
    victim = league.running_match()
    killed_at = time.monotonic()
    killed = league.worker(victim.worker)
    killed.signal(signal.SIGKILL)  # no cleanup, no goodbye to Redis; its bots lose their server
    killed.process.wait(10)
    rerun = league.wait(
        lambda states: (
            states[victim.match_id].attempt > victim.attempt
            and states[victim.match_id].status in (RunStatus.RUNNING, RunStatus.DONE)
        ),
        RECOVERY_LIMIT,
    )
    assert time.monotonic() - killed_at < RECOVERY_LIMIT
    assert league.states()[victim.match_id].worker != victim.worker
    print(f"match {victim.match_id} re-run {rerun:.1f} s after its worker was killed")
    assert_equals_one_machine(league, reference)


def test_a_stopped_worker_s_late_results_are_rejected(
    make_league: Callable[..., League], reference: tuple[Outcomes, dict[str, object]]
) -> None:
    league = make_league()
    league.enqueue()
    league.start_workers(3)
    victim = league.running_match()
    stopped = league.worker(victim.worker)
    stopped.signal(signal.SIGSTOP)  # frozen past its heartbeat: presumed dead
    try:
        league.wait(lambda states: states[victim.match_id].attempt > victim.attempt, RECOVERY_LIMIT)
    finally:
        stopped.signal(signal.SIGCONT)
    # The late worker wakes up, finds a newer attempt and gives up without writing.
    stopped.wait_for(f"match {victim.match_id}: attempt {victim.attempt} ended: superseded", 30)
    assert_equals_one_machine(league, reference)
    attempts = {
        game.game.number: game.attempt
        for game in league.store.finished_games()
        if game.game.match_id == victim.match_id
    }
    # Every game of the match was recorded by an attempt of the newer match run.
    for number, attempt in attempts.items():
        history = league.store.attempts(victim.match_id, number)
        assert history[-1][0] == attempt and history[-1][2] == "finished"
        assert all(outcome != "finished" for _, _, outcome in history[:-1])


def test_a_terminated_worker_requeues_its_match(
    make_league: Callable[..., League], reference: tuple[Outcomes, dict[str, object]]
) -> None:
    league = make_league()
    league.enqueue()
    league.start_workers(3)
    victim = league.running_match()
    leaving = league.worker(victim.worker)
    leaving.signal(signal.SIGTERM)
    leaving.wait_for(f"match {victim.match_id}: attempt {victim.attempt} ended: stopping", 30)
    assert leaving.process.wait(30) == 0
    assert_equals_one_machine(league, reference)
    after = league.states()[victim.match_id]
    assert after.attempt > victim.attempt and after.worker != victim.worker


def test_a_redis_restart_loses_nothing(
    make_league: Callable[..., League],
    reference: tuple[Outcomes, dict[str, object]],
    redis_server: RedisServer,
) -> None:
    league = make_league(teams=3)
    league.enqueue()
    league.start_workers(1)  # the other matches wait in Redis while it restarts
    league.running_match()
    redis_server.stop()
    time.sleep(1.0)
    redis_server.start()
    league.start_workers(2)
    assert_equals_one_machine(league, reference)


def test_a_postgres_restart_loses_nothing(
    make_league: Callable[..., League],
    reference: tuple[Outcomes, dict[str, object]],
    postgres_server: PostgresServer,
) -> None:
    league = make_league()
    league.enqueue()
    league.start_workers(3)
    league.running_match()
    league.store.close()  # the test's own connection would only be broken
    postgres_server.stop()
    time.sleep(1.0)
    postgres_server.start()
    league.store, league.runs = open_store(league.database)
    assert_equals_one_machine(league, reference)


def test_a_match_that_always_fails_ends_failed_and_dead_lettered(
    make_league: Callable[..., League], redis_url: str
) -> None:
    league = make_league(broken="t3")  # t3's bot cannot start: matches 2 and 3 involve it
    league.enqueue()
    league.start_workers(3)
    states = league.wait_final(timeout=90)
    broken = {m.id for m in build_schedule(league.config) if "t3" in (m.home, m.away)}
    assert {i for i, s in states.items() if s.status is RunStatus.FAILED} == broken
    for match_id in broken:
        assert states[match_id].attempt == 3  # the first delivery and two retries, no more
        assert "cannot start" in (states[match_id].error or "")
    report = coordinator.format_status(states.values(), time.time())
    assert all(f"match {match_id}: failed: " in report for match_id in broken)
    client = redis.Redis.from_url(redis_url)
    queue = coordinator.queue_of(league.config, league.database)
    assert client.zcard(f"dramatiq:{queue}.XQ") == len(broken)  # the dead-letter set
    client.close()
    time.sleep(2)  # nothing comes back from the dead-letter set
    assert {s.attempt for i, s in league.states().items() if i in broken} == {3}


def test_cancelling_a_queued_and_a_running_match(make_league: Callable[..., League]) -> None:
    league = make_league()
    league.enqueue()
    assert league.runs.cancel([3]) == 1  # queued: cancelled at once
    assert league.states()[3].status is RunStatus.CANCELLED
    league.start_workers(2)
    running = league.running_match()
    assert league.runs.cancel([running.match_id]) == 1
    states = league.wait_final(timeout=60)
    assert states[3].status is RunStatus.CANCELLED and states[3].attempt == 0
    assert states[running.match_id].status is RunStatus.CANCELLED
    other = ({1, 2} - {running.match_id}).pop()
    assert states[other].status is RunStatus.DONE
    # A cancelled match's unplayed games are not running any more, nothing else was recorded.
    progress = league.store.progress()
    assert progress.running == 0
    recorded = {g.game.match_id for g in league.store.finished_games()}
    assert 3 not in recorded and other in recorded
    # The workers are still there for the next league.
    assert all(worker.process.poll() is None for worker in league.workers)
